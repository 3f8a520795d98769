#!/usr/bin/env python3
"""lint.param_table: the migration parameters are listed once, in
migration/api/migration_params.h (MIGRATION_PARAMS).

  check_param_table.py SOURCE_DIR VMM

Reads the table from `VMM migrate --list-params`, then fails when a C file of
vmm/ or migration/ other than the table's own names three or more of the
parameters, or of their options, in string literals: a hand-written list that
would drift from the table (a defaults block, a JSON member list, an option
table, a help text). One or two names are a use, not a list (the progress
object's measured "downtime_ms", say).
"""
import json
import os
import re
import subprocess
import sys

LIMIT = 3
TABLE = os.path.join("migration", "api", "migration_params.h")


def main():
    src, vmm = sys.argv[1], sys.argv[2]
    table = json.loads(subprocess.check_output([vmm, "migrate", "--list-params"]))
    names = {p["name"] for p in table}
    options = {p["option"] for p in table} | {p["option"][2:] for p in table}
    literal = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
    bad = []
    for top in ("vmm", "migration", "frontend"):
        for root, _, files in os.walk(os.path.join(src, top)):
            for f in files:
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(root, f)
                if os.path.relpath(path, src) == TABLE:
                    continue
                text = open(path, encoding="utf-8").read()
                found = set(literal.findall(text))
                for kind, pool in (("parameters", names), ("options", options)):
                    hits = sorted(found & pool)
                    if len(hits) >= LIMIT:
                        bad.append("%s lists %d %s by hand (%s): use MIGRATION_PARAMS (%s)"
                                   % (os.path.relpath(path, src), len(hits), kind,
                                      ", ".join(hits), TABLE))
    if bad:
        sys.exit("FAIL: " + "\nFAIL: ".join(bad))
    print("PASS: %d parameters, listed only in %s" % (len(table), TABLE))


main()
