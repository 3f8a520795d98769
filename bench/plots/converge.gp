# converge.gp - bench_converge: a guest writing at twice the link's rate,
# migrated by vmm auto (postcopy), vmm --converge throttle, vmm
# --no-converge switchover and QEMU 7.2 auto-converge, interleaved; each
# run a point. Top: downtime and total time (log). Bottom: what it cost the
# guest: the work it lost during the migration (against its rate before)
# and its longest stall (the longest gap between its 100 ms work lines).
load 'bench/plots/common.gp'
set terminal pngcairo size 1100,900 noenhanced font ",10"
set output out
set multiplot layout 2,1
x(s, r) = (s eq 'auto' ? 0 : s eq 'throttle' ? 1 : s eq 'switchover' ? 2 : 3) + 0.06 * (r - 2)
set xrange [-0.5:3.5]
set xtics ('vmm auto (postcopy)' 0, 'vmm --converge throttle' 1, 'vmm --no-converge switchover' 2, 'QEMU 7.2 auto-converge' 3)
ok(k) = column(4) == 1 ? column(k) : NaN
set title 'bench_converge: migrating a guest that writes at twice the link''s rate (each run)'
set ylabel 'ms (log)'
set logscale y
plot \
  converge u (x(strcol(1), column(2)) - 0.15):(ok(6) > 0 ? ok(6) : NaN) w p pt 7 ps 1.6 lc 1 t 'downtime', \
  converge u (x(strcol(1), column(2)) + 0.15):(ok(5)) w p pt 5 ps 1.4 lc 2 t 'total time', \
  300 w l dt 2 lw 2 lc rgb 'dark-green' t 'downtime limit: 300 ms'
unset logscale y
set title 'bench_converge: what the migration cost the guest'
set ylabel 'guest work lost, % (left)'
set y2label 'longest guest stall, ms (right)'
set ytics nomirror
set y2tics
set yrange [0:100]
set y2range [0:*]
plot \
  converge u (x(strcol(1), column(2)) - 0.15):(ok(13)) w p pt 7 ps 1.6 lc 7 t 'work lost during the migration, %', \
  converge u (x(strcol(1), column(2)) + 0.15):(ok(14)) axes x1y2 w p pt 9 ps 1.4 lc 6 t 'longest stall, ms'
unset multiplot
