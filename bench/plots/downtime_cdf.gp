# downtime_cdf.gp - CDF of the per-run downtimes bench_linux writes (rows
# migrate-precopy/-postcopy, column b = downtime ms), vmm against QEMU.
load 'bench/plots/common.gp'
set title 'Downtime CDF per run (Linux guest)'
set xlabel 'downtime ms (log)'
set ylabel 'fraction of runs'
set logscale x
set yrange [0:1.05]
set key bottom right
sel(m, v) = (strcol(1) eq m && strcol(2) eq v) ? column('b') : NaN
plot \
  linux u (sel('migrate-precopy', 'vmm')):(1) smooth cnormal w steps lw 2 t 'vmm precopy', \
  linux u (sel('migrate-precopy', 'qemu')):(1) smooth cnormal w steps lw 2 t 'QEMU precopy', \
  linux u (sel('migrate-postcopy', 'vmm')):(1) smooth cnormal w steps lw 2 t 'vmm postcopy', \
  linux u (sel('migrate-postcopy', 'qemu')):(1) smooth cnormal w steps lw 2 t 'QEMU postcopy'
