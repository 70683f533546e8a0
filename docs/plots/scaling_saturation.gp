# Chapter 02, section 2: how peaked softmax gets as the width grows, with and
# without the 1/√Dh scale: the largest weight of a row of 8 keys and its
# entropy (ln 8 = 2.08 when all 8 weigh the same). The points are the table the
# chapter printed (Dh, max p and entropy unscaled, then scaled).
#   gnuplot -e "data='ROWS.dat'; out='OUT.png'" scaling_saturation.gp
set terminal pngcairo size 960,440 font "DejaVu Sans,10"
# each legend below its plot, where no point can be under it
set output out
set multiplot layout 1,2
set logscale x 2
set grid
set xlabel "head width Dh"
set xrange [2:1536]
set key outside below horizontal height 1.5
set ylabel "largest weight of the row"
set yrange [0:1.05]
plot data using 1:2 with linespoints pt 7 title "unscaled", \
     data using 1:4 with linespoints pt 5 title "divided by √Dh"
set ylabel "entropy of the row (nats)"
set yrange [0:2.3]
plot data using 1:3 with linespoints pt 7 title "unscaled", \
     data using 1:5 with linespoints pt 5 title "divided by √Dh", \
     log(8) with lines dt 2 lc rgb "gray50" title "ln 8: all keys alike"
unset multiplot
