# Chapter 15, section 7: how far the int8 pass is from the fp32 one at every
# stage of the shipped model, rms(int8 - fp32) / rms(fp32) in percent, the
# stages in the forward's order, block after block. The points are the table
# the chapter printed (scripts/docs.sh reads it): a row per stage, block,
# stage name, percent; the outputs of the Linear layers marked apart.
#   gnuplot -e "data='ROWS.dat'; out='OUT.png'" int8_error.gp
set terminal pngcairo size 1000,420 font "DejaVu Sans,10" noenhanced
set output out
set grid ytics
set ylabel "int8 against fp32 (rms of the difference / rms, %)"
set xlabel "stage, in the forward's order (each block: norm1, q, context, proj, resid1, norm2, fc1, gelu, fc2, out)"
set key top left
stats data using 1 nooutput
set xrange [STATS_min - 1 : STATS_max + 1]
set yrange [0 : *]
# a tick at each block's first stage
set xtics ()
do for [b = 0 : int(STATS_max / 10)] { set xtics add (sprintf("block %d", b) b * 10) }
linear(s) = (s eq "attn.q" || s eq "attn.proj" || s eq "mlp.fc1" || s eq "mlp.fc2")
plot data using 1:4 with lines lc rgb "gray50" notitle, \
     data using 1:(strcol(3) eq "out" ? $4 : NaN) with points pt 7 ps 1.2 lc rgb "black" title "a block's output (the residual stream)", \
     data using 1:(linear(strcol(3)) ? $4 : NaN) with points pt 5 ps 0.9 lc rgb "#c0392b" title "a Linear layer's output (q, proj, fc1, fc2)", \
     data using 1:(strcol(3) eq "mlp.gelu" ? $4 : NaN) with points pt 9 ps 1.1 lc rgb "#2471a3" title "GELU's output, fc2's input"
