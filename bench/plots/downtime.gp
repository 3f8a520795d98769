# downtime.gp - downtime by mode and guest size: bench_migrate's precopy cases
# (median downtime_ms) then bench_postcopy's cases (mode in the label).
load 'bench/plots/common.gp'
set title 'Downtime by case (median of each case), log scale'
set ylabel 'downtime ms'
set logscale y
set xtics rotate by -40 left
set boxwidth 0.7
n1 = 0
if (migrate ne '') { stats migrate u 0 nooutput; n1 = STATS_records }
plot \
  (migrate ne '' ? migrate : '/dev/null') u 0:(column('downtime_ms')):xtic(1) w boxes lc 1 t 'precopy (bench_migrate)', \
  (postcopy ne '' ? postcopy : '/dev/null') u ($0 + n1):(column('downtime_ms')):xtic(sprintf('%s [%s]', strcol(1), strcol('mode_used'))) w boxes lc 2 t 'bench_postcopy (mode used)'
