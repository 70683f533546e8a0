# Chapter 10, section 8: the learning rate of every step of a run, warm-up then
# cosine. The curve is lib's lr_at() at each step (build/plots/lr_points,
# given the schedule the chapter printed); the points are the table the
# chapter printed (step, rate), which must lie on it.
#   gnuplot -e "data='CURVE.dat'; out='OUT.png'; table='TABLE.dat'" lr_schedule.gp
set terminal pngcairo size 720,400 font "DejaVu Sans,10" noenhanced
set output out
set grid
set xlabel "optimizer step"
set ylabel "learning rate η"
set format y "%.0e"
set key top right
stats data using 2 nooutput
set yrange [0 : STATS_max * 1.1]
set xrange [-1 : STATS_records]
plot data using 1:2 with lines lw 2 title "lr_at(), every step", \
     table using 1:2 with points pt 7 ps 1.2 title "the steps the chapter printed"
