# Chapter 02, section 1: the variance of q·k against the width Dh, before and
# after dividing by √Dh. The points are the table the chapter printed
# (scripts/docs.sh takes its rows: Dh, mean, var, std, scaled var).
#   gnuplot -e "data='ROWS.dat'; out='OUT.png'" scaling_variance.gp
set terminal pngcairo size 640,420 font "DejaVu Sans,10"
set output out
set logscale xy 2
set grid
set xlabel "head width Dh"
set ylabel "variance of the scores"
set key top left
set xrange [2:1536]
set yrange [0.25:2048]
plot data using 1:3 with linespoints pt 7 title "q · k: grows like Dh", \
     data using 1:5 with linespoints pt 5 title "q · k / √Dh: stays near 1", \
     x with lines dt 2 lc rgb "gray50" title "Dh"
