# The shipped model's training log, data/models/vit-fashion.csv (written by
# vit train --log): the loss and the accuracy per epoch, on the training
# images (as they were trained on: mirrored, label-smoothed, so their loss
# never reaches 0) and on the 5,000 held-out validation images.
#   gnuplot -e "data='LOG.csv'; out='OUT.png'" training_curve.gp
set terminal pngcairo size 960,380 font "DejaVu Sans,10"
set output out
set datafile separator ","
set multiplot layout 1,2
set grid
set xlabel "epoch"
set key top right
set ylabel "loss"
plot data using "epoch":"train_loss" with linespoints pt 7 ps 0.5 title "training (label smoothing 0.1)", \
     data using "epoch":"val_loss" with linespoints pt 7 ps 0.5 title "validation"
set key bottom right
set ylabel "accuracy (%)"
plot data using "epoch":(100 * column("train_acc")) with linespoints pt 7 ps 0.5 title "training (mirrored images)", \
     data using "epoch":(100 * column("val_acc")) with linespoints pt 7 ps 0.5 title "validation"
unset multiplot
