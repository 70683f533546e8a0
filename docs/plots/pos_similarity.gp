# Chapter 07: how alike the shipped model's learned position vectors are. Tile
# (r, c) is patch position (r, c) of the grid; inside it, each cell is the
# cosine similarity of that position's vector with the position the cell
# stands for. The lines "G r c i j cosine" are build/plots/pos_similarity's
# (lib's dot() on the model's pos_embed); cell (i, j) of tile (r, c) is drawn
# at x = c·(G + 1) + j, y = r·(G + 1) + i, a blank line and column between tiles.
#   gnuplot -e "data='PAIRS.dat'; out='OUT.png'" pos_similarity.gp
set terminal pngcairo size 660,580 font "DejaVu Sans,10" noenhanced
set output out
stats data using 1 nooutput
G = int(STATS_max)
side = G * (G + 1) - 1
set size ratio -1
set xrange [-0.5 : side - 0.5]
set yrange [side - 0.5 : -0.5]
set xtics scale 0
set ytics scale 0
set xtics ()
set ytics ()
do for [k = 0 : G - 1] {
    set xtics add (sprintf("%d", k) k * (G + 1) + (G - 1) / 2.0)
    set ytics add (sprintf("%d", k) k * (G + 1) + (G - 1) / 2.0)
}
set xlabel "patch column of the input position"
set ylabel "patch row of the input position"
set cbrange [-1:1]
set palette defined (-1 "#2166ac", 0 "white", 1 "#b2182b")
set cblabel "cosine similarity of the two position vectors"
unset key
set style fill solid noborder
plot data using ($3 * (G + 1) + $5):($2 * (G + 1) + $4):(0.5):(0.5):6 with boxxyerror lc palette
