# snapshot.gp - bench_snapshot: against the guest's RAM, the stopped
# snapshot's pause (vmm snapshot; QEMU 7.2 stopped and saved to a file
# through exec:) with vmm's --live pause and the same guest's migration
# downtime, the dirty cases' write rate as a share of the file
# system's sequential rate for the same bytes, and the restore's time to
# the first guest instruction (vmm eager, --lazy and into a waiting
# process; QEMU -incoming from the file), idle and dirty guests, from the
# same interleaved run. Columns are read by name.
load 'bench/plots/common.gp'
set terminal pngcairo size 1200,1300 noenhanced font ",10"
set output out
set multiplot layout 3,1
gib(s) = s[strlen(s):strlen(s)] eq 'G' ? s[1:strlen(s) - 1] + 0.0 : \
         s[strlen(s):strlen(s)] eq 'M' ? (s[1:strlen(s) - 1] + 0.0) / 1024 : NaN
sel(v, w, k) = (strcol('vmm') eq v && strcol('workload') eq w && column('ok') == 1) ? column(k) : NaN
set logscale xy
set xrange [0.15:100]
set xtics ('256M' 0.25, '1G' 1, '4G' 4, '16G' 16, '64G' 64)
set xlabel 'guest RAM (log)'
set ylabel 'ms (log)'
set key outside right top
set yrange [5:*]
set title 'bench_snapshot: the pause of a stopped snapshot (and of a live one, beside the same guest migrated)'
plot \
  snapshot u (gib(strcol('size'))):(sel('vmm', 'idle', 'pause_ms')) w p pt 7 ps 1.4 lc rgb '#1f77b4' t 'vmm, idle', \
  snapshot u (gib(strcol('size'))):(sel('vmm', 'dirty', 'pause_ms')) w p pt 5 ps 1.4 lc rgb '#1f77b4' t 'vmm, dirty', \
  snapshot u (gib(strcol('size'))):(sel('QEMU', 'idle', 'pause_ms')) w p pt 6 ps 1.4 lc rgb '#d62728' t 'QEMU 7.2, idle', \
  snapshot u (gib(strcol('size'))):(sel('QEMU', 'dirty', 'pause_ms')) w p pt 4 ps 1.4 lc rgb '#d62728' t 'QEMU 7.2, dirty', \
  snapshot u (gib(strcol('size'))):(sel('vmm', 'dirty', 'live_pause_ms')) w p pt 9 ps 1.4 lc rgb '#ff7f0e' t 'vmm --live, dirty', \
  snapshot u (gib(strcol('size'))):(sel('vmm', 'dirty', 'mig_downtime_ms')) w p pt 8 ps 1.4 lc rgb '#ff7f0e' t 'vmm migration downtime, dirty (same guest)', \
  1000 w l dt 2 lw 2 lc rgb 'dark-green' t 'target: 1 s for a 64 GiB sparse guest'
set title 'bench_snapshot: the dirty stopped snapshot: its write rate as a share of the file system sequential rate (same bytes, same run)'
unset logscale y
set yrange [0:120]
set ylabel '% of the sequential rate'
plot \
  snapshot u (gib(strcol('size'))):(sel('vmm', 'dirty', 'share_pct')) w p pt 5 ps 1.6 lc rgb '#1f77b4' t 'vmm', \
  snapshot u (gib(strcol('size'))):(sel('QEMU', 'dirty', 'share_pct')) w p pt 4 ps 1.6 lc rgb '#d62728' t 'QEMU 7.2', \
  70 w l dt 2 lw 2 lc rgb 'dark-green' t 'target: 70%'
set logscale y
set yrange [0.5:*]
set ylabel 'ms (log)'
set title 'bench_snapshot: restore, to the first guest instruction (from the command; into a waiting process: from the request)'
plot \
  snapshot u (gib(strcol('size'))):(sel('vmm', 'idle', 'lazy_first_run_ms')) w p pt 7 ps 1.4 lc rgb '#2ca02c' t 'vmm --lazy, idle', \
  snapshot u (gib(strcol('size'))):(sel('vmm', 'dirty', 'lazy_first_run_ms')) w p pt 5 ps 1.4 lc rgb '#2ca02c' t 'vmm --lazy, dirty', \
  snapshot u (gib(strcol('size'))):(sel('vmm', 'idle', 'eager_first_run_ms')) w p pt 9 ps 1.4 lc rgb '#1f77b4' t 'vmm eager, idle', \
  snapshot u (gib(strcol('size'))):(sel('vmm', 'dirty', 'eager_first_run_ms')) w p pt 11 ps 1.4 lc rgb '#1f77b4' t 'vmm eager, dirty', \
  snapshot u (gib(strcol('size'))):(sel('QEMU', 'idle', 'eager_first_run_ms')) w p pt 6 ps 1.4 lc rgb '#d62728' t 'QEMU 7.2 -incoming, idle', \
  snapshot u (gib(strcol('size'))):(sel('QEMU', 'dirty', 'eager_first_run_ms')) w p pt 4 ps 1.4 lc rgb '#d62728' t 'QEMU 7.2 -incoming, dirty', \
  snapshot u (gib(strcol('size'))):(sel('vmm', 'idle', 'wait_first_run_ms')) w p pt 13 ps 1.4 lc rgb '#9467bd' t 'vmm into a waiting process, idle', \
  snapshot u (gib(strcol('size'))):(sel('vmm', 'dirty', 'wait_first_run_ms')) w p pt 15 ps 1.4 lc rgb '#9467bd' t 'vmm into a waiting process, dirty', \
  5 w l dt 2 lw 2 lc rgb 'dark-green' t 'target: lazy, 5 ms (real KVM)', \
  2 w l dt 3 lw 2 lc rgb 'dark-green' t 'target: into a waiting process, 2 ms (real KVM)'
unset multiplot
