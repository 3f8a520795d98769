#!/usr/bin/env python3
"""lint.compat_table: the versions cannot drift apart.

  check_compat_table.py SOURCE_DIR VMM

Checks that
  - VERSIONS' current version is what `vmm --version` says first, and its
    releases, then the current version, are the binary's `releases` line;
  - docs/compatibility.md's table (between the compat-table markers) has a
    row per release in VERSIONS and one for the current version, in that
    order; the current row is `vmm --version`'s protocol, snapshot format,
    state framing and each state component's version, with the components
    in the binary's order; each release's row is its row of forms in
    vmm/machine/state/state_versions.c (framing and component versions);
  - the man page's title, docs/openapi.json's info.version and the
    "version" of docs/api.md's examples are the current version.
"""
import json
import re
import subprocess
import sys


def fail(msg):
    sys.exit("FAIL: " + msg)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, vmm = sys.argv[1], sys.argv[2]
    releases, current = [], None
    for line in open(f"{src}/VERSIONS"):
        f = line.split()
        if f and f[0] == "release":
            releases.append(f[1])
        elif f and f[0] == "current":
            current = f[1]
    if not current:
        fail("VERSIONS has no current line")
    out = subprocess.run([vmm, "--version"], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    if lines[0] != f"vmm {current}":
        fail(f"vmm --version says {lines[0]!r}, VERSIONS says current {current}")
    ver = {}
    comps = []
    for ln in lines[1:]:
        f = ln.split()
        if f[0] == "state":
            comps.append((f[1], f[2]))
        elif f[0] == "releases":
            ver["releases"] = f[1:]
        else:
            ver[f[0]] = f[1]
    if ver.get("releases") != releases + [current]:
        fail(f"vmm --version knows releases {ver.get('releases')}, VERSIONS "
             f"{releases + [current]}")

    doc = open(f"{src}/docs/compatibility.md").read()
    m = re.search(r"<!-- compat-table:begin -->\n(.*?)<!-- compat-table:end -->", doc, re.S)
    if not m:
        fail("docs/compatibility.md has no compat-table markers")
    rows = [[c.strip() for c in r.strip().strip("|").split("|")]
            for r in m.group(1).strip().splitlines()]
    head, rows = rows[0], rows[2:]
    want_head = ["release", "protocol", "snapshot format", "state framing"] + [c for c, _ in comps]
    if head != want_head:
        fail(f"compatibility.md's table columns {head}, expected {want_head}")
    if [r[0] for r in rows] != releases + [current]:
        fail(f"compatibility.md's table rows {[r[0] for r in rows]}, expected "
             f"{releases + [current]}")
    cur = rows[-1]
    want = [current, ver["protocol"], ver["snapshot-format"]]
    if cur[:3] != want or cur[3].split()[0] != ver["state-framing"] or \
            cur[4:] != [v for _, v in comps]:
        fail(f"compatibility.md's row {cur} is not vmm --version's: {want}, framing "
             f"{ver['state-framing']}, components {comps}")

    table = open(f"{src}/vmm/machine/state/state_versions.c").read()
    for r in rows[:-1]:
        mm = re.search(r'\{"' + re.escape(r[0]) + r'",\s*(\d+),\s*(\d+),\s*\{([\d,\s]+)\}', table)
        if not mm:
            fail(f"release {r[0]} has no row of forms in vmm/machine/state/state_versions.c")
        vs = [v.strip() for v in mm.group(3).split(",")]
        if r[3].split()[0] != mm.group(2) or r[4:] != vs:
            fail(f"compatibility.md's row for {r[0]} ({r[3:]}) is not state_versions.c's "
                 f"(framing {mm.group(2)}, components {vs})")

    man = open(f"{src}/man/man1/vmm.1").read()
    if not re.search(r'^\.TH VMM 1 \S+ "vmm ' + re.escape(current) + '"', man, re.M):
        fail(f"man/man1/vmm.1's .TH does not say vmm {current}")
    api = json.load(open(f"{src}/docs/openapi.json"))
    if api["info"]["version"] != current:
        fail(f"docs/openapi.json's info.version is {api['info']['version']}, not {current}")
    for v in re.findall(r'"version":"([^"]*)"', open(f"{src}/docs/api.md").read()):
        if v != current:
            fail(f"docs/api.md's example says version {v}, not {current}")
    print(f"compat table: {len(releases)} release(s) and {current} agree")


main()
