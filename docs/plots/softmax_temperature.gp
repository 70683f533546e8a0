# Chapter 03, section 4: softmax of one row of scores at several temperatures
# T, one group of bars per T. The numbers are the table the chapter printed
# (T, then the weights of the 4 keys); scripts/docs.sh takes its rows under a
# header line naming each key by its score.
#   gnuplot -e "data='ROWS.dat'; out='OUT.png'" softmax_temperature.gp
set terminal pngcairo size 760,400 font "DejaVu Sans,10"
set output out
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set grid ytics
set xlabel "temperature T (the scores are divided by T before softmax)"
set ylabel "weight softmax(x / T)_j"
set yrange [0:1.05]
set key top right title "key j, score x_j"
n = 4
plot for [c = 2:5] data using c:xtic(sprintf("T = %g", $1)) title columnheader(c), \
     1.0 / n with lines dt 2 lw 1.5 lc rgb "gray40" title "1/4: all keys alike"
