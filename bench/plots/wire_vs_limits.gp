# wire_vs_limits.gp - each bench_migrate case's wire rate (wire_gbps) against
# this host's limits from bench_limits (memcpy, loopback TCP, zstd level 1
# compress on dirty-workload pages); without bench_limits.csv the memcpy and
# TCP numbers bench_migrate measured itself. Beside each wire rate, the rate
# of guest RAM carried (pages sent + zero pages, 4 KiB each, per total time):
# with zstd, dirty-workload pages shrink ~300x on the wire.
load 'bench/plots/common.gp'
set title 'Migration wire rate vs host limits (GB/s, log scale)'
set ylabel 'GB/s'
set logscale y
set xtics rotate by -40 left
set boxwidth 0.35
set key below
lim(name, data) = (strcol(1) eq name && strcol(2) eq data) ? column('gbps') : NaN
if (limits ne '') {
  stats limits u (lim('memcpy_touched', '-')) nooutput; mct = STATS_max
  stats limits u (lim('memcpy_fresh', '-')) nooutput; mcf = STATS_max
  stats limits u (lim('tcp_1_stream', '-')) nooutput; t1 = STATS_max
  stats limits u (lim('tcp_4_streams', '-')) nooutput; t4 = STATS_max
  stats limits u (lim('zstd1_compress', 'dirty')) nooutput; zd = STATS_max
  src = 'bench_limits'
} else {
  stats migrate u (column('memcpy_gbps')) nooutput; mct = STATS_max
  stats migrate u (column('memcpy_fresh_gbps')) nooutput; mcf = STATS_max
  stats migrate u (column('tcp1_gbps')) nooutput; t1 = STATS_max
  stats migrate u (column('tcp4_gbps')) nooutput; t4 = STATS_max
  zd = NaN
  src = 'bench_migrate'
}
stats migrate u 0 nooutput
n = STATS_records
set xrange [-0.6:n - 0.4]
plot \
  migrate u ($0 - 0.18):(column('wire_gbps')):xtic(1) w boxes lc 1 t 'wire rate', \
  migrate u ($0 + 0.18):((column('pages_sent') + column('zero_pages')) * 4096 / (column('total_ms') / 1e3) / 1e9) w boxes lc 6 t 'guest RAM carried', \
  mct w l lw 2 dt 1 t sprintf('memcpy touched %.2f (%s)', mct, src), \
  mcf w l lw 2 dt 2 t sprintf('memcpy never-touched %.2f', mcf), \
  t1 w l lw 2 dt 3 t sprintf('TCP 1 stream %.2f', t1), \
  t4 w l lw 2 dt 4 t sprintf('TCP 4 streams %.2f', t4), \
  (zd == zd ? zd : 1/0) w l lw 2 dt 5 t (zd == zd ? sprintf('zstd-1 compress, dirty pages %.2f', zd) : '')
