# total_vs_qemu.gp - bench_linux's migration total time (column a, ms) per
# run and the mean per mode, vmm against QEMU.
load 'bench/plots/common.gp'
set title 'Linux guest: migration total time, vmm vs QEMU (points: runs, boxes: mean)'
set ylabel 'total ms'
set yrange [0:*]
set xrange [-0.6:3.6]
set xtics ('vmm precopy' 0, 'QEMU precopy' 1, 'vmm postcopy' 2, 'QEMU postcopy' 3)
set boxwidth 0.6
cat(m, v) = (m eq 'migrate-precopy' ? 0 : m eq 'migrate-postcopy' ? 2 : NaN) + (v eq 'qemu')
plot \
  linux u (cat(strcol(1), strcol(2))):(column('a')) smooth unique w boxes lc 3 t 'mean', \
  linux u (cat(strcol(1), strcol(2))):(column('a')) w points pt 7 lc 7 t 'run'
