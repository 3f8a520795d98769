#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Draws the project's structure from its sources' includes.

Reads every `#include "..."` of vmm/, migration/, frontend/, guest-firmware/
and include/ and resolves it to the project's header it names (the
includer's own folder first, then the one header of that name; system and
generated headers are left out). Prints
  (a) the arrows between the top-level folders, with how many includes each
      carries: include/ (the ABI the firmware shares) < vmm/util <
      vmm/machine < migration < frontend; guest-firmware/ is a program of
      its own and may include only include/. An arrow up that order, or
      between the firmware and the VMM, is marked UP;
  (b) the arrows between the layer libraries (vmm/util, vmm/machine, the
      engine's wire, snapshot, dirty, api, source, incoming, persist, the
      front end), ranked by tests/lint/layer_names.py's table (RANK, and its
      ALLOWED_UP for the include that goes up on purpose);
  (c) the include circles between files of vmm/, migration/ and frontend/
      (the call circles, from the built libraries, with --build).
Exits 1 on an upward arrow or a circle, 0 otherwise.

usage: scripts/structure.py [--dot FILE] [--build DIR] [--self-test] [SOURCE_DIR]
  --dot FILE   also write the drawing as Graphviz dot (libraries in their
               folders, counts on the arrows, upward ones red):
               dot -Tsvg FILE > structure.svg
  --build DIR  also (d): the call circles between the object files of the
               layer libraries built in DIR, as lint.call_graph reads them
               from their symbol tables (nm)
  --self-test  first check, on planted trees, that an upward include and an
               include circle are caught (ctest lint.structure runs this)
"""
import argparse
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(ROOT, "tests", "lint"))
import layer_names  # noqa: E402  (the layers' one table: RANK, ALLOWED_UP)
import call_graph  # noqa: E402  (its circle finder and symbol tables)
from call_graph import cycles  # noqa: E402

# Top-level folders in layer order (a lower rank is further down), and the
# firmware, which is a program of its own beside them.
FOLDERS = [("include", -1), ("vmm/util", 0), ("vmm/machine", 1), ("migration", 2),
           ("frontend", 3)]
FIRMWARE = "guest-firmware"
FOLDER_RANK = dict(FOLDERS)
SCANNED = [f for f, _ in FOLDERS] + [FIRMWARE]
CIRCLE_FOLDERS = ("vmm/util", "vmm/machine", "migration", "frontend")

INCLUDE = layer_names.INCLUDE
COMMENT = layer_names.COMMENT


def folder_of(rel):
    for f in sorted(SCANNED, key=len, reverse=True):
        if rel == f or rel.startswith(f + "/"):
            return f
    return None


def library_of(root, rel):
    """The layer library of a file (a RANK directory), else its folder."""
    lib = layer_names.layer_of(root, os.path.join(root, rel))
    return lib or folder_of(rel)


def library_rank(lib):
    if lib in layer_names.RANK:
        return layer_names.RANK[lib]
    return FOLDER_RANK.get(lib)  # include/: -1; guest-firmware: None (apart)


def scan(root):
    """[(includer, included)] as paths relative to root, and the misses."""
    files = []
    for d in SCANNED:
        for base, _, names in os.walk(os.path.join(root, d)):
            for n in sorted(names):
                if n.endswith((".c", ".h", ".S")):
                    files.append(os.path.relpath(os.path.join(base, n), root))
    by_name = {}
    for f in files:
        if f.endswith(".h"):
            by_name.setdefault(os.path.basename(f), []).append(f)
    edges, missed = [], 0
    for f in sorted(files):
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = COMMENT.sub(" ", fh.read())
        for inc in INCLUDE.findall(text):
            here = os.path.normpath(os.path.join(os.path.dirname(f), inc))
            if here in files:
                edges.append((f, here))
                continue
            cands = by_name.get(os.path.basename(inc), [])
            # the firmware is built apart: it sees its own headers and include/
            if folder_of(f) == FIRMWARE:
                cands = [c for c in cands if folder_of(c) in (FIRMWARE, "include")]
            same = [c for c in cands if folder_of(c) == folder_of(f)]
            target = (same or cands or [None])[0]
            if target:
                edges.append((f, target))
            else:
                missed += 1
    return files, edges, missed


def folder_up(a, b):
    """Why the folder arrow a -> b goes the wrong way, or None."""
    if a == b:
        return None
    if a == FIRMWARE:
        return None if b == "include" else "the firmware includes the VMM's"
    if b == FIRMWARE:
        return "the VMM includes the firmware's"
    return "goes up" if FOLDER_RANK[b] > FOLDER_RANK[a] else None


def library_up(a, b):
    if a == b or (a, b) in layer_names.ALLOWED_UP:
        return None
    ra, rb = library_rank(a), library_rank(b)
    if ra is None or rb is None:  # the firmware: the folder rule says it
        return folder_up(folder_of(a) or a, folder_of(b) or b)
    return "goes up" if rb > ra else None


def count(pairs):
    out = {}
    for p in pairs:
        out[p] = out.get(p, 0) + 1
    return out


def folder_key(name):
    """Top-down: frontend first, then the layers below it, the firmware last."""
    return (-FOLDER_RANK[name], name) if name in FOLDER_RANK else (9, name)


def library_key(name):
    libs = list(layer_names.RANK)
    r = library_rank(name)
    if r is None:
        return (9, 0, name)
    return (-r, libs.index(name) if name in libs else 0, name)


def call_circles(build, out):
    """(d): lint.call_graph's file graph of the built libraries, its circles."""
    libs = call_graph.find_libs(build)
    missing = sorted(set(call_graph.LAYER) - set(libs))
    if missing:
        print(f"(d) call circles: libraries not built in {build}: " + ", ".join(missing),
              file=out)
        return 1
    owner, needs = {}, []
    for lib, path in libs.items():
        defined, needed = call_graph.symbols(path)
        for sym, member in defined.items():
            owner[sym] = lib + "/" + member
        needs += [(lib + "/" + member, sym) for member, sym in needed]
    graph, nodes = {}, set()
    for a, sym in needs:
        b = owner.get(sym)
        if b and b != a:
            graph.setdefault(a, set()).add(b)
            nodes.update((a, b))
    circles = cycles(sorted(nodes), graph)
    print(f"(d) call circles between the {len(nodes)} object files of the {len(libs)} "
          f"built layer libraries: {len(circles) or 'none'}", file=out)
    for c in circles:
        print("  call circle: " + ", ".join(c), file=out)
    return len(circles)


def analyse(root, out=sys.stdout, dot=None, build=None):
    """Prints the drawing; returns the number of violations."""
    files, edges, missed = scan(root)
    bad = 0
    print(f"structure: {len(files)} files, {len(edges)} includes of the project's "
          f"headers ({missed} others: system or generated)", file=out)

    folders = count((folder_of(a), folder_of(b)) for a, b in edges
                    if folder_of(a) != folder_of(b))
    print("(a) arrows between top-level folders (include < vmm/util < vmm/machine "
          "< migration < frontend; guest-firmware apart):", file=out)
    for (a, b), n in sorted(folders.items(),
                            key=lambda x: (folder_key(x[0][0]), folder_key(x[0][1]))):
        why = folder_up(a, b)
        bad += bool(why)
        print(f"  {a:15} -> {b:15} {n:5}" + (f"  UP: {why}" if why else ""), file=out)
    if not folders:
        print("  none", file=out)

    libs = count((library_of(root, a), library_of(root, b)) for a, b in edges
                 if library_of(root, a) != library_of(root, b))
    print("(b) arrows between layer libraries (rank from tests/lint/layer_names.py):",
          file=out)
    for (a, b), n in sorted(libs.items(),
                            key=lambda x: (library_key(x[0][0]), library_key(x[0][1]))):
        why = library_up(a, b)
        note = ""
        if why:
            note = f"  UP: {why}"
        elif (a, b) in layer_names.ALLOWED_UP:
            note = "  up on purpose: " + layer_names.ALLOWED_UP[(a, b)]
        elif library_rank(a) is not None and library_rank(a) == library_rank(b):
            note = "  (same rank)"
        if why and folder_up(folder_of(a), folder_of(b)) is None:
            bad += 1  # not counted under (a) already
        print(f"  {a:19} -> {b:19} {n:5}{note}", file=out)

    graph = {}
    nodes = set()
    for a, b in edges:
        if folder_of(a) in CIRCLE_FOLDERS and folder_of(b) in CIRCLE_FOLDERS and a != b:
            graph.setdefault(a, set()).add(b)
            nodes.update((a, b))
    circles = cycles(sorted(nodes), graph)
    print(f"(c) include circles between the {len(nodes)} files of vmm/, migration/ and "
          f"frontend/: {len(circles) or 'none'}", file=out)
    for c in circles:
        print("  circle: " + ", ".join(c), file=out)
    bad += len(circles)

    if build:
        bad += call_circles(build, out)
    if dot:
        write_dot(dot, root, files, libs)
    print("structure: " + (f"{bad} violation(s)" if bad else
                           "no arrow goes up, no circle"), file=out)
    return bad


def write_dot(path, root, files, libs):
    members = {}
    for f in files:
        lib = library_of(root, f)
        members.setdefault(folder_of(f), set()).add(lib)
    with open(path, "w") as fh:
        fh.write("// scripts/structure.py --dot: the layer libraries and their includes\n")
        fh.write("digraph structure {\n  rankdir=TB; node [shape=box, fontsize=10];\n")
        for i, (folder, ls) in enumerate(sorted(members.items(),
                                                key=lambda x: folder_key(x[0]))):
            fh.write(f'  subgraph cluster_{i} {{ label="{folder}/";\n')
            for lib in sorted(ls, key=library_key):
                fh.write(f'    "{lib}";\n')
            fh.write("  }\n")
        for (a, b), n in sorted(libs.items()):
            colour = ', color=red, fontcolor=red' if library_up(a, b) else ""
            if (a, b) in layer_names.ALLOWED_UP:
                colour = ", style=dashed"
            fh.write(f'  "{a}" -> "{b}" [label="{n}"{colour}];\n')
        fh.write("}\n")


def self_test():
    """Planted trees: a clean one passes, an upward include and a circle fail."""
    import io
    fails = []

    def plant(d, files):
        for rel, text in files.items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as fh:
                fh.write(text)

    clean = {
        "vmm/util/u.h": "int u(void);\n",
        "vmm/util/u.c": '#include "u.h"\n#include <stdio.h>\n',
        "vmm/machine/m.h": '#include "u.h"\n',
        "vmm/machine/cpu/c.c": '#include "m.h"\n#include "vmm_abi.h"\n',
        "migration/wire/w.h": '#include "m.h"\n',
        "frontend/f.c": '#include "w.h"\n#include "m.h"\n/* #include "fw.h" */\n',
        "include/vmm_abi.h": "#define X 1\n",
        "guest-firmware/fw.h": '#include "vmm_abi.h"\n',
    }
    cases = [
        ("clean tree", {}, 0, []),
        ("util includes the machine's header", {"vmm/util/u.c": '#include "m.h"\n'}, 1,
         ["vmm/util        -> vmm/machine         1  UP"]),
        ("wire includes the engine's face", {"migration/api/a.h": "",
                                             "migration/wire/w.c": '#include "a.h"\n'}, 1,
         ["migration/wire      -> migration/api"]),
        ("the VMM includes the firmware's", {"vmm/machine/cpu/c.c": '#include "fw.h"\n'}, 1,
         ["UP: the VMM includes the firmware's"]),
        ("include circle", {"vmm/util/u.h": '#include "v.h"\n',
                            "vmm/util/v.h": '#include "u.h"\n'}, 1,
         ["circle: vmm/util/u.h, vmm/util/v.h"]),
    ]
    for what, extra, want, lines in cases:
        with tempfile.TemporaryDirectory(prefix="structure_test.") as d:
            plant(d, dict(clean, **extra))
            buf = io.StringIO()
            got = analyse(d, out=buf, dot=os.path.join(d, "s.dot"))
            text = buf.getvalue()
            if bool(got) != bool(want):
                fails.append(f"{what}: {got} violation(s), expected {want}:\n{text}")
            for ln in lines:
                if ln not in text:
                    fails.append(f"{what}: no line with '{ln}' in:\n{text}")
            if want and "red" not in open(os.path.join(d, "s.dot")).read() \
                    and "circle" not in what:
                fails.append(f"{what}: the dot drawing has no red arrow")
    for f in fails:
        print("structure --self-test: FAIL: " + f)
    if not fails:
        print(f"structure --self-test: ok ({len(cases)} planted trees)")
    return len(fails)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", nargs="?", default=ROOT, help="source tree (default: this one)")
    ap.add_argument("--dot", metavar="FILE", help="write a Graphviz dot drawing")
    ap.add_argument("--build", metavar="DIR",
                    help="also the call circles of the libraries built in DIR")
    ap.add_argument("--self-test", action="store_true",
                    help="check the checker on planted trees first")
    a = ap.parse_args()
    failed = self_test() if a.self_test else 0
    bad = analyse(os.path.abspath(a.root), dot=a.dot, build=a.build)
    return 1 if failed or bad else 0


if __name__ == "__main__":
    sys.exit(main())
