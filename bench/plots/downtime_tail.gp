# downtime_tail.gp - CDF of the downtime of every bench_tail migration
# (column downtime_us), per case and load: quiet, and with a CPU hog on
# every core. The tail is what the p99 target is about.
load 'bench/plots/common.gp'
set title 'Downtime CDF, quiet and with a CPU hog on every core (bench_tail)'
set xlabel 'downtime ms (log)'
set ylabel 'fraction of migrations'
set logscale x
set yrange [0:1.05]
set key bottom right
sel(c, l) = (strcol(1) eq c && strcol(2) eq l) ? column('downtime_us') / 1000.0 : NaN
plot \
  for [c in '1G 4G'] for [l in 'quiet hog'] tail u (sel(c.' dirty', l)):(1) smooth cnormal \
    w steps lw 2 t c.' dirty, '.l
