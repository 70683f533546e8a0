# Chapter 14, sections 3 to 10: the speed of each step of the ladder, in
# GFLOP/s on a log scale, against the best the chapter measured and the peak on
# paper it computed for this machine. The bars are the chapter's table "the
# whole ladder" (step, then GFLOP/s); best and peak come from the line it
# printed in section 10 (scripts/docs.sh passes them as best and peak; peak
# is 0 when the chapter could not read the clock, and no peak is drawn).
#   gnuplot -e "data='ROWS.dat'; out='OUT.png'; best=B; peak=P" gflops_ladder.gp
set terminal pngcairo size 900,400 font "DejaVu Sans,10" noenhanced
set output out
set datafile separator "\t"
set logscale x 10
set grid xtics
stats data using 2 nooutput
n = STATS_records
top = STATS_max > best ? STATS_max : best
top = peak > top ? peak : top
set xrange [0.5 : top * 4]
set yrange [n - 0.4 : -0.6]
set ytics scale 0
set xlabel "speed (GFLOP/s, log scale): (197, 768) · (768, 768), median of 5 rounds on this machine"
set style fill solid 0.8 border -1
set key bottom right
set arrow from best, graph 0 to best, graph 1 nohead dt 2 lw 1.5 lc rgb "#1b9e77"
# the label of the larger of the two right of its line, the other left of its
# own, so the two never run into each other (the best measured can exceed a
# peak on paper computed from a clock read below the boost clock)
best_label = sprintf("best measured\n%.1f GFLOP/s", best)
if (peak > best) {
    set label best_label at best, graph 0.93 right offset -0.5, 0 tc rgb "#1b9e77"
} else {
    set label best_label at best, graph 0.93 left offset 0.5, 0 tc rgb "#1b9e77"
}
if (peak > 0) {  # 0 when the chapter could not read the clock
    set arrow from peak, graph 0 to peak, graph 1 nohead dt 1 lw 2 lc rgb "#d95f02"
    peak_label = sprintf("peak on paper\n%.1f GFLOP/s", peak)
    if (peak > best) {
        set label peak_label at peak, graph 0.93 left offset 0.5, 0 tc rgb "#d95f02"
    } else {
        set label peak_label at peak, graph 0.93 right offset -0.5, 0 tc rgb "#d95f02"
    }
}
plot data using (sqrt(0.5 * $2)):0:(0.5):2:($0 - 0.35):($0 + 0.35):ytic(1) with boxxyerror lc rgb "#4575b4" notitle, \
     data using 2:0:(sprintf(" %.1f", $2)) with labels left notitle
