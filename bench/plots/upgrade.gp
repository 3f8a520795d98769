# upgrade.gp - bench_upgrade: downtime of each migration against the guest's
# size, local upgrade (--local, the memfd handed over) and TCP precopy to a
# new process on the same host, from the same interleaved run.
load 'bench/plots/common.gp'
set title 'Local upgrade vs TCP precopy on the same host: downtime (bench_upgrade)'
set xlabel 'guest RAM GiB (log)'
set ylabel 'downtime ms (log)'
set logscale xy
set xrange [0.7:24]
set xtics ('1' 1, '4' 4, '16' 16)
set key top left
gib(s) = s[strlen(s):strlen(s)] eq 'G' ? s[1:strlen(s) - 1] + 0.0 : NaN
sel(m) = (strcol(2) eq m && column('ok') == 1) ? column('downtime_ms') : NaN
plot \
  upgrade u (gib(strcol(1))):(sel('local')) w p pt 7 ps 1.5 t 'local upgrade (--local)', \
  upgrade u (gib(strcol(1))):(sel('tcp')) w p pt 5 ps 1.5 t 'TCP precopy, same host', \
  5 w l dt 2 lw 2 t 'target: 5 ms at 4 GiB (real KVM)'
