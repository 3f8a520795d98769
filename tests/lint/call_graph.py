#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the layering rules on the built libraries, from their symbol tables.

A file A "calls" file B when A's object needs a symbol that B's object
defines. The rules (docs/architecture.md):
  1. Layers call only downward: util <- machine, migration_api <- wire, snapshot,
     dirty <- source, target, persist <- frontend. A call from a library to one above it, or
     between two of the engine's tops (source, target and persist, the
     snapshots: they share only the layers below), is an error.
  2. No call loop between files of vmm/ and migration/ (every layer
     library): the file graph has no cycle, so each file can be read from
     the ones it calls, bottom up.
  3. The same for the guest firmware's files (guest-firmware/, its objects
     in the build tree), its entries (main.c, pvh.c) on top; a .S and the
     .c of the same name (exception stubs and their handler) are one file.
Prints every violation and exits 1, or prints a one-line summary.
usage: call_graph.py BUILD_DIR
"""
import os
import subprocess
import sys

LAYER = {  # library -> rank; a library may only call libraries of a lower rank
    "vmm_util": 0,
    "vmm_machine": 1,
    "vmm_migration_api": 1,  # the engine's public face's words (names.c): util only
    "vmm_wire": 2,
    "vmm_snapshot": 2,
    "vmm_dirty": 2,
    "vmm_mig_source": 3,
    "vmm_mig_incoming": 3,
    "vmm_persist": 3,
    "vmm_frontend": 4,
}


def find_libs(build):
    libs = {}
    for root, _, files in os.walk(build):
        for f in files:
            name = f[3:-2] if f.startswith("lib") and f.endswith(".a") else None
            if name in LAYER:
                libs[name] = os.path.join(root, f)
    return libs


def symbols(path):
    out = subprocess.run(["nm", "-A", "--defined-only", path], capture_output=True,
                         text=True, check=True).stdout
    defined = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[-2] in ("t", "d", "b", "r", "U"):
            continue  # file-local symbols do not make calls between files
        member = parts[0].split(":")[1]
        defined[parts[-1]] = member
    out = subprocess.run(["nm", "-A", "--undefined-only", path], capture_output=True,
                         text=True, check=True).stdout
    needed = []
    for line in out.splitlines():
        parts = line.split()
        needed.append((parts[0].split(":")[1], parts[-1]))
    return defined, needed


def firmware_graph(build):
    """The firmware's file graph: {file: files it calls}, or None when not built."""
    objs = []
    for root, _, files in os.walk(build):
        if os.path.basename(root) == "vmm-firmware.dir":
            objs += [os.path.join(root, f) for f in files if f.endswith(".o")]
    if not objs:
        return None
    defined, needed = {}, []
    for o in objs:
        node = "guest-firmware/" + os.path.basename(o).split(".")[0]
        for line in subprocess.run(["nm", "--defined-only", o], capture_output=True,
                                   text=True, check=True).stdout.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBR":
                defined[parts[2]] = node
        for line in subprocess.run(["nm", "--undefined-only", o], capture_output=True,
                                   text=True, check=True).stdout.splitlines():
            needed.append((node, line.split()[-1]))
    edges = {}
    for node, sym in needed:
        if sym in defined and defined[sym] != node:
            edges.setdefault(node, set()).add(defined[sym])
    return edges


def cycles(nodes, edges):
    """Tarjan's strongly connected components of size > 1 (or a self loop)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    build = sys.argv[1]
    libs = find_libs(build)
    missing = sorted(set(LAYER) - set(libs))
    if missing:
        print("call_graph: libraries not built: " + ", ".join(missing))
        return 1
    owner = {}  # symbol -> (lib, member)
    needs = []
    for lib, path in libs.items():
        defined, needed = symbols(path)
        for sym, member in defined.items():
            owner[sym] = (lib, member)
        needs += [(lib, member, sym) for member, sym in needed]
    errors = []
    edges = {}
    nodes = set()
    for lib, member, sym in needs:
        if sym not in owner:
            continue  # libc, libzstd, ...
        olib, omember = owner[sym]
        a, b = lib + "/" + member, olib + "/" + omember
        if olib != lib and LAYER[olib] >= LAYER[lib]:
            errors.append(f"{a} calls {sym} in {b}: {olib} is not below {lib}")
        if a != b:
            edges.setdefault(a, set()).add(b)
            nodes.update((a, b))
    for comp in cycles(sorted(nodes), edges):
        errors.append("call loop between " + ", ".join(comp))
    fw = firmware_graph(build)
    fw_files = set(fw or ()) | {b for bs in (fw or {}).values() for b in bs}
    for comp in cycles(sorted(fw_files), fw or {}):
        errors.append("call loop between " + ", ".join(comp))
    for e in errors:
        print("call_graph: " + e)
    if errors:
        return 1
    print(f"call_graph: {len(libs)} libraries, {len(nodes)} files, "
          f"{len(fw_files)} firmware files: calls go only downward and no file is in a loop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
