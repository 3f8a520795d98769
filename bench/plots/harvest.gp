# harvest.gp - bench_harvest part 1: harvest time (harvest_1t_ms,
# harvest_2t_ms) against the slot count, one line per working set and thread
# count; with bench_slots.csv present, its `slots` against its first
# harvest*_ms column (bench/run passes it as slots_col) too.
load 'bench/plots/common.gp'
set title 'Dirty-log harvest time vs memory slots and threads'
set xlabel 'memory slots (log)'
set ylabel 'harvest ms'
set logscale x
set yrange [0:*]
ws(w) = (strcol(1) eq 'dirty' && column('ws_mib') == w)
stats harvest u (strcol(1) eq 'dirty' ? column('ws_mib') : NaN) nooutput
wmin = STATS_min
wmax = STATS_max
if (!exists('slots_col')) slots_col = ''
plot \
  for [w in '64 256 1024'] harvest u (ws(w + 0) ? column('slots') : NaN):(column('harvest_1t_ms')) w lp pt 7 lw 2 t (w + 0 >= wmin && w + 0 <= wmax ? sprintf('%s MiB, 1 thread', w) : ''), \
  for [w in '64 256 1024'] harvest u (ws(w + 0) ? column('slots') : NaN):(column('harvest_2t_ms')) w lp pt 5 lw 2 dt 2 t (w + 0 >= wmin && w + 0 <= wmax ? sprintf('%s MiB, 2 threads', w) : ''), \
  (slots ne '' && slots_col ne '' ? slots : '/dev/null') u (column('slots')):(column(slots_col)) w lp pt 9 lw 2 t (slots ne '' ? 'bench_slots '.slots_col : '')
