# netgap.gp - bench_netgap: per run, the largest gap between two ping replies
# the client saw (and the downtime each VMM reports, and the largest gap
# before the migration: the host's own noise), and the guest's block
# throughput before, during and after the migration; vmm and QEMU microvm
# side by side per mode, from the same interleaved run. The CSV has a
# section per part (first column ping or blk); columns are read by number
# because the two sections' headers differ.
load 'bench/plots/common.gp'
set terminal pngcairo size 1100,900 noenhanced font ",10"
set output out
set multiplot layout 2,1
# x: precopy vmm, precopy QEMU, postcopy vmm, postcopy QEMU; runs side by side
cat(m, v) = (m eq 'postcopy' ? 2 : 0) + (v eq 'qemu' ? 1 : 0)
x(m, v, r) = cat(m, v) + 0.06 * (r - 2)
set xrange [-0.5:3.5]
set xtics ('precopy, vmm' 0, 'precopy, QEMU' 1, 'postcopy, vmm' 2, 'postcopy, QEMU' 3)
set key top left
ping(k) = (strcol(1) eq 'ping' && column(5) == 1) ? column(k) : NaN
blk(k) = (strcol(1) eq 'blk' && column(5) == 1) ? column(k) : NaN
set title 'bench_netgap: what a client pinging every 5 ms saw of the migration (each run)'
set ylabel 'ms (log)'
set logscale y
plot \
  netgap u (x(strcol(2), strcol(3), column(4))):(ping(10)) w p pt 7 ps 1.6 lc 1 t 'largest gap between replies', \
  netgap u (x(strcol(2), strcol(3), column(4))):(ping(14) > 0 ? ping(14) : NaN) w p pt 4 ps 1.4 lc 7 t 'downtime the VMM reports', \
  netgap u (x(strcol(2), strcol(3), column(4))):(ping(12) > 0 ? ping(12) : NaN) w p pt 2 ps 1.2 lc rgb 'gray40' t 'largest gap before the migration', \
  20 w l dt 2 lw 2 lc rgb 'dark-green' t 'goal: 20 ms'
unset logscale y
set title 'bench_netgap: the guest''s block throughput (written + read), 3 s before, during, 3 s after the migration'
set ylabel 'MiB/s'
set yrange [0:*]
plot \
  netgap u (x(strcol(2), strcol(3), column(4)) - 0.2):(blk(8)) w p pt 5 ps 1.4 lc 2 t 'before', \
  netgap u (x(strcol(2), strcol(3), column(4))):(blk(9)) w p pt 7 ps 1.6 lc 1 t 'during', \
  netgap u (x(strcol(2), strcol(3), column(4)) + 0.2):(blk(10)) w p pt 9 ps 1.4 lc 6 t 'after', \
  0 w l lc rgb 'gray' notitle
unset multiplot
