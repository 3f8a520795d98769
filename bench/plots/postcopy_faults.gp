# postcopy_faults.gp - postcopy fault latency: bench_postcopy's median
# fault_p50_us / fault_p99_us / fault_max_us for each case that faulted, then
# bench_linux's per-run postcopy p50/p99 (columns d, e) for vmm and QEMU.
load 'bench/plots/common.gp'
set title 'Postcopy fault latency (us, log scale)'
set ylabel 'us'
set logscale y
set xtics rotate by -40 left
set boxwidth 0.25
n1 = 0
if (postcopy ne '') { stats postcopy u 0 nooutput; n1 = STATS_records }
pf(c) = column('faults') > 0 ? column(c) : NaN
lx(v) = (strcol(1) eq 'migrate-postcopy' && column('d') > 0) ? ($0 * 0 + n1 + (strcol(2) eq 'qemu')) : NaN
pc = (postcopy ne '' ? postcopy : '/dev/null')
li = (linux ne '' ? linux : '/dev/null')
set key top right
set xrange [-0.6:n1 - 0.4]
if (linux ne '') { set xrange [-0.6:n1 + 1.6]; set xtics ('Linux vmm' n1, 'Linux QEMU' n1 + 1) rotate by -40 left }
plot \
  pc u ($0 - 0.25):(pf('fault_p50_us')):xtic(1) w boxes lc 1 t 'p50', \
  pc u ($0):(pf('fault_p99_us')) w boxes lc 2 t 'p99', \
  pc u ($0 + 0.25):(pf('fault_max_us')) w boxes lc 3 t 'max', \
  li u (lx(0) - 0.12):(column('d')) w points pt 7 lc 1 t (linux ne '' ? 'Linux guest p50 (runs)' : ''), \
  li u (lx(0) + 0.12):(column('e')) w points pt 5 lc 2 t (linux ne '' ? 'Linux guest p99 (runs)' : '')
