# Chapter 01, section 4: the 4 × 4 scores Q·Kᵀ as a heatmap, each cell one dot
# product q_i · k_j. The numbers are the matrix the chapter printed (scores);
# scripts/docs.sh takes its rows.
#   gnuplot -e "data='ROWS.dat'; out='OUT.png'" dot_scores.gp
set terminal pngcairo size 520,440 font "DejaVu Sans,10"
set output out
set size ratio -1
set autoscale fix
set yrange [*:*] reverse
set xtics 1 out nomirror scale 0
set ytics 1 out nomirror scale 0
set xlabel "key j"
set ylabel "query i"
unset key
stats data matrix using 3 nooutput
m = abs(STATS_min) > abs(STATS_max) ? abs(STATS_min) : abs(STATS_max)
set cbrange [-m:m]
set palette defined (-1 "#2166ac", 0 "white", 1 "#b2182b")
set cblabel "score q_i · k_j (no unit)"
plot data matrix with image, \
     data matrix using 1:2:(sprintf("%.2f", $3)) with labels tc rgb "black"
