# common.gp - settings every bench/plots script loads first (bench/run passes
# the CSV paths as variables; an optional CSV that is absent is '').
set terminal pngcairo size 1000,560 noenhanced font ",10"
set output out
set datafile separator ','
set datafile columnheaders
set grid ytics
set key top left
set style fill solid 0.7 border -1
