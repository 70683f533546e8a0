# Chapter 04, sections 2 and 5: the attention matrix as a heatmap, beside the
# causal mask and the attention matrix it leaves. The three matrices are the
# ones the chapter printed (probs, causal_mask, probs_causal); scripts/docs.sh
# takes their rows into DATA.probs, DATA.mask (1 where the mask is -inf, 0
# where it is 0) and DATA.causal.
#   gnuplot -e "data='DATA'; out='OUT.png'" attention_masks.gp
set terminal pngcairo size 1080,380 font "DejaVu Sans,10"
set output out
set multiplot layout 1,3
set size ratio -1
set autoscale fix
set yrange [*:*] reverse
set xtics 1 out nomirror
set ytics 1 out nomirror
set xlabel "key j (the token looked at)"
set ylabel "query i (the token looking)"
set tics scale 0
unset key
set palette defined (0 "white", 0.5 "#fdae6b", 1 "#7f2704")
set cbrange [0:1]
set cblabel "weight p_{ij}"
set title "attention matrix softmax(QK^T/√Dh)"
plot data.".probs" matrix with image, \
     data.".probs" matrix using 1:2:(sprintf("%.2f", $3)) with labels tc rgb "black"
set palette defined (0 "#deebf7", 1 "#525252")
set cbrange [0:1]
set cbtics ("0: may look" 0, "−∞: hidden" 1)
set cblabel "added to the score"
set title "causal mask"
plot data.".mask" matrix with image, \
     data.".mask" matrix using 1:2:($3 > 0.5 ? "−∞" : "0") with labels tc rgb "black"
set palette defined (0 "white", 0.5 "#fdae6b", 1 "#7f2704")
set cbrange [0:1]
set cbtics auto
set cblabel "weight p_{ij}"
set title "attention matrix with the causal mask"
plot data.".causal" matrix with image, \
     data.".causal" matrix using 1:2:(sprintf("%.2f", $3)) with labels tc rgb "black"
unset multiplot
