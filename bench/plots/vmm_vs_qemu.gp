# vmm_vs_qemu.gp - bench_qemu: every run's total time and downtime, vmm and
# QEMU side by side per case (the CSV's rows come case by case, each rep
# as a vmm row then a QEMU row). Log scale: the two differ by 10x and more.
load 'bench/plots/common.gp'
set terminal pngcairo size 1200,900 noenhanced font ",10"
set output out
set multiplot layout 2,1
stats qemu u (column('run')) nooutput
reps = STATS_max
per = int(2 * reps)
cas(r) = int(r / per)
side(v) = (v eq 'qemu' ? 0.18 : -0.18)
ncases = int(STATS_records / per)
set xrange [-0.6:ncases - 0.4]
set bmargin 7
set logscale y
set xtics rotate by -30 left
set key top right
set title 'bench_qemu: total time per run (same guest, interleaved runs)'
set ylabel 'total ms'
k = 0
plot \
  qemu every per u (k = k + 1, k - 1):(column('total_ms')):xtic(strcol(2)) w dots lc rgb 'white' notitle, \
  qemu u (cas($0) + side(strcol('vmm'))):(strcol('vmm') eq 'vmm' ? column('total_ms') : NaN) w points pt 7 ps 1.2 lc 1 t 'vmm', \
  qemu u (cas($0) + side(strcol('vmm'))):(strcol('vmm') eq 'qemu' ? column('total_ms') : NaN) w points pt 5 ps 1.2 lc 7 t 'QEMU 7.2'
set title 'bench_qemu: downtime per run'
set ylabel 'downtime ms'
k = 0
plot \
  qemu every per u (k = k + 1, k - 1):(column('downtime_ms')):xtic(strcol(2)) w dots lc rgb 'white' notitle, \
  qemu u (cas($0) + side(strcol('vmm'))):(strcol('vmm') eq 'vmm' ? column('downtime_ms') : NaN) w points pt 7 ps 1.2 lc 1 t 'vmm', \
  qemu u (cas($0) + side(strcol('vmm'))):(strcol('vmm') eq 'qemu' ? column('downtime_ms') : NaN) w points pt 5 ps 1.2 lc 7 t 'QEMU 7.2'
unset multiplot
