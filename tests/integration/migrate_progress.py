#!/usr/bin/env python3
"""Checks what migrate_progress.sh saw of a postcopy migration.

migrate_progress.py EVENTS SUMMARY_JSON PROGRESS_LINES LIMIT RAM

EVENTS: the JSON lines of GET /api/v1/vm/events; SUMMARY_JSON: the final
progress object (`vmm migrate --json`); PROGRESS_LINES: its stderr with
--progress; LIMIT: --max-bandwidth in bytes/s; RAM: the guest's RAM.
Prints every failed check and exits 1 if there was one.
"""
import json
import re
import sys

PAGE = 4096
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def main():
    events_path, summary_path, lines_path, limit, ram = sys.argv[1:6]
    limit, ram = int(limit), int(ram)
    progress = []
    for line in open(events_path, encoding="utf-8", errors="replace"):
        line = line.strip()
        if not line.startswith("{"):
            continue
        ev = json.loads(line)
        if ev.get("type") == "progress":
            progress.append(ev.get("migration", ev))
    pass0 = [p for p in progress if p.get("state") == "precopy" and p.get("pass") == 0
             and p.get("pass_pages", 0) > 0]
    # Pass 0 of ~40 MiB at 10 MiB/s lasts seconds: the stream (a line per
    # 200 ms at most) has many lines of it.
    if check(len(pass0) >= 4, "fewer than 4 progress lines in pass 0: %d" % len(pass0)):
        first, last = pass0[0], pass0[-1]
        check(last["total_ms"] > first["total_ms"] > 0,
              "total_ms does not move in pass 0: %s -> %s" % (first["total_ms"], last["total_ms"]))
        check(last["sent_bytes"] > first["sent_bytes"],
              "sent_bytes does not move in pass 0")
        check(last["remaining_bytes"] < first["remaining_bytes"],
              "remaining_bytes does not drop in pass 0: %s -> %s"
              % (first["remaining_bytes"], last["remaining_bytes"]))
        check(last["pass_done_pages"] > first["pass_done_pages"],
              "pass_done_pages does not move in pass 0")
        for p in pass0[2:]:
            # Rates: measured (non-zero) and never above what the limit lets through.
            check(0 < p["throughput_bytes_per_s"] <= 2 * limit,
                  "pass 0 throughput %s with a %s limit" % (p["throughput_bytes_per_s"], limit))
            # Pages left over a measured rate cost time. Once the pass is all sent
            # (its SYNC still out) only the commit is left, and pass 0 has not
            # measured it yet: 0 is then the honest answer.
            if p["remaining_bytes"] > 0:
                check(p["expected_downtime_ms"] > 0, "expected_downtime_ms 0 in pass 0 with %s bytes left"
                      % p["remaining_bytes"])
            check(p["page_rate_pages_per_s"] > 0, "page_rate_pages_per_s 0 in pass 0")
            # Not measured before the second harvest: null, not 0.
            check(p["dirty_rate_pages_per_s"] is None,
                  "dirty_rate_pages_per_s %s in pass 0" % p["dirty_rate_pages_per_s"])
            check(p["remaining_bytes"] == (p["pass_pages"] - p["pass_done_pages"]) * PAGE,
                  "remaining_bytes is not what is left of the pass")
    post = [p for p in progress if p.get("state") == "postcopy-active"]
    for p in post:
        check(p["expected_downtime_ms"] == 0, "expected_downtime_ms in postcopy")
        check(p["postcopy_bytes"] > 0 or p["pages_requested"] + p["pages_pushed"] == 0,
              "postcopy_bytes 0 while pages moved")

    s = json.load(open(summary_path))
    check(s["state"] == "completed", "state %s" % s["state"])
    check(s["mode_used"] == "postcopy", "mode_used %s" % s["mode_used"])
    check(s["switchover_reason"] == "postcopy-requested",
          "switchover_reason %r" % s["switchover_reason"])
    check(s["converged"] is None, "converged %r for postcopy" % s["converged"])
    check(s["remaining_bytes"] == 0 and s["expected_downtime_ms"] == 0,
          "remaining_bytes %s / expected_downtime_ms %s after completion"
          % (s["remaining_bytes"], s["expected_downtime_ms"]))
    check(s["sent_bytes"] == s["precopy_bytes"] + s["postcopy_bytes"],
          "sent_bytes is not precopy_bytes + postcopy_bytes")
    # Every page sent after the switchover, pushed or requested, is on the
    # wire uncompressed (--compress none): at least its 4 KiB, less zeros.
    moved = s["pages_requested"] + s["pages_pushed"]
    check(moved > 0 and s["postcopy_bytes"] >= moved * PAGE * 9 // 10,
          "postcopy_bytes %s for %s pages sent after the switchover"
          % (s["postcopy_bytes"], moved))
    check(s["ram_bytes"] == ram and s["page_size_bytes"] == PAGE,
          "ram_bytes %s page_size_bytes %s" % (s["ram_bytes"], s["page_size_bytes"]))
    params = s.get("params", {})
    check(params.get("mode") == "postcopy" and params.get("max_bandwidth") == limit
          and params.get("compress") == "none", "params %r" % params)
    check(s["total_ms"] > 0 and s["throughput_bytes_per_s"] > 0, "total_ms / throughput 0")
    # The blackout's waits for the target: PREPARED and COMMITTED, each
    # there already, caught while polling, or slept for (spin_wait.h).
    check(s["blackout_round_trips"] == 2,
          "blackout_round_trips %s, expected 2 (PREPARED, COMMITTED)" % s["blackout_round_trips"])
    check(s["blackout_ready"] + s["blackout_polled"] + s["blackout_sleeps"] == 2,
          "blackout_ready %s + polled %s + sleeps %s is not the 2 round trips"
          % (s["blackout_ready"], s["blackout_polled"], s["blackout_sleeps"]))
    check(params.get("blackout_poll_us") == 2000, "blackout_poll_us %r" % params)

    text = open(lines_path, encoding="utf-8", errors="replace").read()
    lines = re.findall(r"^vmm migrate: precopy pass 0: (\d+)% of [0-9.]+ MiB, ETA ([^;]+); "
                       r"sent ([0-9.]+) MiB at ([0-9.]+) MiB/s", text, re.M)
    if check(len(lines) >= 2, "fewer than 2 --progress lines in pass 0:\n" + text[-2000:]):
        check(any(float(l[3]) > 0 for l in lines), "every pass-0 line shows 0 MiB/s")
        check(any(int(l[0]) > 0 for l in lines), "every pass-0 line shows 0%")
        check(any(l[1] != "?" for l in lines), "no ETA in pass 0")
    check(re.search(r"^vmm migrate: postcopy \(the VM runs on the target\): \d+% of", text, re.M)
          is not None or not post, "no postcopy progress line")

    for f in failures:
        print("FAIL:", f)
    print("%d progress events (%d in pass 0, %d in postcopy), %d --progress lines in pass 0"
          % (len(progress), len(pass0), len(post), len(lines)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
