# Chapter 13, sections 2 to 5: the memory and the time of one attention head
# against the number of tokens N, on log-log axes, with lines ∝ N² and ∝ N for
# comparison. The points are the tables the chapter printed, one row per image
# size; scripts/docs.sh joins them: N, one (N, N) matrix, 12 heads, the traced
# layer, the scores a chunk of queries holds (MB), then exact, chunks, online
# and local attention (ms, timed on this machine while the book was built).
#   gnuplot -e "data='ROWS.dat'; out='OUT.png'" attention_scale.gp
set terminal pngcairo size 1000,540 font "DejaVu Sans,10" noenhanced
set output out
set multiplot layout 1,2
set logscale xy 10
set grid
set xlabel "tokens N (log scale)"
set key outside below Left reverse maxrows 3 height 2.5
stats data using 1 nooutput
n0 = STATS_min
set xrange [n0 / 1.3 : STATS_max * 1.3]
stats data using 2 nooutput
m0 = STATS_min
stats data using 5 nooutput
c0 = STATS_min
set ylabel "memory (MB, log scale)"
set title "memory: the N × N matrices grow like N²"
plot data using 1:4 with linespoints pt 7 title "traced layer (lib's mha_forward)", \
     data using 1:3 with linespoints pt 5 title "12 heads at once", \
     data using 1:2 with linespoints pt 9 title "one (N, N) matrix, 4·N² bytes", \
     data using 1:5 with linespoints pt 11 title "scores held, 64 queries at a time", \
     m0 * (x / n0)**2 with lines dt 2 lc rgb "gray40" title "∝ N²", \
     c0 * (x / n0) with lines dt 3 lc rgb "gray40" title "∝ N"
stats data using 6 nooutput
e0 = STATS_min
stats data using 9 nooutput
l0 = STATS_min
set ylabel "time of one head (ms, log scale)"
set title "time on this machine, one core, as measured for this page"
plot data using 1:6 with linespoints pt 7 title "exact (whole N × N matrix)", \
     data using 1:7 with linespoints pt 5 title "exact, 64 queries at a time", \
     data using 1:8 with linespoints pt 9 title "exact, online softmax", \
     data using 1:9 with linespoints pt 11 title "local 7 × 7 window (approximate)", \
     e0 * (x / n0)**2 with lines dt 2 lc rgb "gray40" title "∝ N², through exact's first point", \
     l0 * (x / n0) with lines dt 3 lc rgb "gray40" title "∝ N, through local's first point"
unset multiplot
