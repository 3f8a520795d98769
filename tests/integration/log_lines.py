#!/usr/bin/env python3
# log_lines.py FILE VM [LEVEL:REGEX]...: every line of FILE (a `vmm run
# --log-format json` stderr) is one JSON object with "ts" (RFC 3339 UTC with
# milliseconds), "level" (error, warn, info or debug) and "msg" strings, and
# "vm" equal to VM when present; each LEVEL:REGEX matches the msg of some
# record of that level that names the VM. Exits 1 saying which line or
# record is wrong.
import json
import re
import sys

TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
LEVELS = {"error", "warn", "info", "debug"}


def fail(msg):
    print("FAIL: %s: %s" % (sys.argv[1], msg), file=sys.stderr)
    sys.exit(1)


path, vm, wants = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(path, "rb") as f:
    data = f.read()
if not data.endswith(b"\n"):
    fail("does not end with a newline")
records = []
for i, raw in enumerate(data.split(b"\n")[:-1], 1):
    try:
        r = json.loads(raw.decode("utf-8"))
    except ValueError as e:
        fail("line %d is not JSON (%s): %r" % (i, e, raw))
    if not isinstance(r, dict):
        fail("line %d is not an object: %r" % (i, raw))
    for k in ("ts", "level", "msg"):
        if not isinstance(r.get(k), str):
            fail("line %d has no string %s: %r" % (i, k, raw))
    if not TS.match(r["ts"]):
        fail("line %d: ts %r is not RFC 3339 UTC with milliseconds" % (i, r["ts"]))
    if r["level"] not in LEVELS:
        fail("line %d: level %r" % (i, r["level"]))
    if "vm" in r and r["vm"] != vm:
        fail("line %d: vm %r, expected %r" % (i, r["vm"], vm))
    records.append(r)
for w in wants:
    level, regex = w.split(":", 1)
    if not any(r["level"] == level and r.get("vm") == vm and re.search(regex, r["msg"])
               for r in records):
        fail("no %s record of vm %s matches /%s/; records: %s" % (level, vm, regex, records))
print("ok: %s: %d JSON records" % (path, len(records)))
