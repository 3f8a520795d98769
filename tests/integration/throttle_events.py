#!/usr/bin/env python3
"""Checks the throttle's record of a migration, for migrate_throttle.sh.

throttle_events.py EVENTS PROGRESS_JSON OUTCOME LIMIT_MS

EVENTS: every line of GET /api/v1/vm/events on the source, opened before
the migration; PROGRESS_JSON: the final progress object (`vmm migrate
--json`, or `--status --json`); OUTCOME: completed, cancelled or failed;
LIMIT_MS: --downtime-ms. Prints every failed check and exits 1 if any.
"""
import json
import sys

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def main():
    events_path, progress_path, outcome, limit_ms = sys.argv[1:5]
    lines = []
    for raw in open(events_path, encoding="utf-8", errors="replace"):
        raw = raw.strip()
        if raw.startswith("{"):
            lines.append(json.loads(raw))
    p = json.load(open(progress_path))
    throttle = [(i, ev["throttle"]) for i, ev in enumerate(lines) if ev.get("type") == "throttle"]
    ends = [i for i, ev in enumerate(lines) if ev.get("type") == outcome]

    # The stream: every change, numbered from 1 without a gap, before the end.
    check(ends, "no %s line in the event stream" % outcome)
    if check(len(throttle) >= 2, "fewer than 2 throttle lines (on, then off): %d" % len(throttle)):
        changes = [t["change"] for _, t in throttle]
        check(changes == list(range(1, len(throttle) + 1)), "change numbers %s" % changes)
        check(all("missed" not in t for _, t in throttle), "a watcher that read missed changes")
        first, last = throttle[0][1], throttle[-1][1]
        check(first["pct"] > 0 and first["vcpus"] > 0, "the first change slows nothing: %s" % first)
        check(last["pct"] == 0 and last["vcpus"] == 0, "the last change is not off: %s" % last)
        levels = [t["pct"] for _, t in throttle[:-1]]
        check(levels == sorted(levels), "the level went down during the migration: %s" % levels)
        check(all(0 < t["pct"] <= 99 for _, t in throttle[:-1]), "a level out of 1..99: %s" % levels)
        passes = [t["pass"] for _, t in throttle]
        check(passes == sorted(passes) and passes[0] >= 1, "passes %s" % passes)
        if ends:
            check(throttle[-1][0] < ends[0], "a throttle line after the %s line" % outcome)
        check(p.get("throttle_changes") == len(throttle),
              "throttle_changes %s, %d lines" % (p.get("throttle_changes"), len(throttle)))

    # The final progress object.
    check(p.get("state") == outcome, "state %s, want %s" % (p.get("state"), outcome))
    check(p.get("throttle_pct") == 0 and p.get("throttle_vcpus") == 0,
          "throttle_pct %s / throttle_vcpus %s at the end" % (p.get("throttle_pct"),
                                                              p.get("throttle_vcpus")))
    check(p.get("throttle_slept_ms", 0) > 0, "throttle_slept_ms %s" % p.get("throttle_slept_ms"))
    check(p.get("params", {}).get("converge") == "throttle", "params.converge not throttle")
    if outcome == "completed":
        check(p.get("converged") is True, "converged %s" % p.get("converged"))
        check(p.get("switchover_reason") == "converged",
              "switchover_reason %s" % p.get("switchover_reason"))
        check(p.get("mode_used") == "precopy", "mode_used %s" % p.get("mode_used"))
        down = p.get("downtime_us", 0) / 1000.0
        check(0 < down <= float(limit_ms), "downtime %.1f ms, limit %s ms" % (down, limit_ms))
    for f in failures:
        print("FAIL: " + f)
    print("throttle lines: %s; downtime %.1f ms; passes %s; slept %s ms" % (
        [(t["change"], t["pass"], t["pct"], t["vcpus"]) for _, t in throttle],
        p.get("downtime_us", 0) / 1000.0, p.get("pass"), p.get("throttle_slept_ms")))
    sys.exit(1 if failures else 0)


main()
