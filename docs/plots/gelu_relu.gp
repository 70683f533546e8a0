# Chapter 08, section 5: GELU against ReLU. The points are lib's gelu() on
# [-4, 4] (build/plots/gelu_points prints them, x, GELU(x), ReLU(x)).
#   gnuplot -e "data='POINTS.dat'; out='OUT.png'" gelu_relu.gp
set terminal pngcairo size 640,420 font "DejaVu Sans,10"
set output out
set grid
set xlabel "x"
set ylabel "activation"
set key top left
set xrange [-4:4]
set yrange [-0.5:4]
plot data using 1:3 with lines lw 2 dt 2 title "ReLU(x) = max(0, x)", \
     data using 1:2 with lines lw 2 title "GELU(x) = x·Φ(x), lib's gelu()"
