#!/usr/bin/env python3
"""ping_gap.py PING_LOG [LABEL]: the client's view of a migration.

Reads the output of `ping -D` (a [unix time] prefix on each reply) and prints
one line: replies, requests (the highest icmp_seq + 1), replies lost, and the
largest gap between two consecutive replies, the time a client saw nothing.
Exits 1 when the log holds fewer than two replies. Used by
tests/integration/devices.sh and bench/bench_netgap.
"""
import re
import sys


def gaps(path):
    ts, seqs = [], []
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"\[(\d+\.\d+)\] .*icmp_seq=(\d+)", line)
            if m:
                ts.append(float(m.group(1)))
                seqs.append(int(m.group(2)))
    return ts, seqs


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    ts, seqs = gaps(sys.argv[1])
    if len(ts) < 2:
        print(f"ping_gap: {sys.argv[1]}: fewer than two replies", file=sys.stderr)
        return 1
    worst = max(range(len(ts) - 1), key=lambda i: ts[i + 1] - ts[i])
    sent = max(seqs) - min(seqs) + 1
    label = sys.argv[2] if len(sys.argv) > 2 else ""
    print(
        f"ping {label}: {len(ts)} replies of {sent} requests, {sent - len(set(seqs))} lost, "
        f"largest gap {1000 * (ts[worst + 1] - ts[worst]):.1f} ms "
        f"(after icmp_seq {seqs[worst]})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
