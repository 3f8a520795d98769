#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks, in the sources, that a layer names nothing of a layer above it.

lint.call_graph sees calls between the built libraries; a constant, a
macro, an enum value or an include leaves no symbol, so it cannot see an
arrow such as the wire including the engine's face for a constant, or util
spelling out the engine's thread kinds and migration steps. This does:
  1. Includes: a file of vmm/ or migration/ includes (#include "...") only
     headers of its own layer or of one below it (docs/architecture.md).
     The engine's face (migration/api) ranks with the engine's two sides;
     vmm_dirty, which links it (converge.c takes struct migration_params;
     the engine's seccomp lists live there), may include it too.
  2. Names in util: vmm/util's code (comments and strings left out) uses no
     identifier that a header of a higher layer defines (a macro, an enum
     value, a struct, union or enum tag), and none of the prefixes the
     higher layers own: KVM_ (the machine's KVM), MIG_ (the wire),
     MIGRATION_ (the engine), SECCOMP_THREAD_ (each layer's thread kinds),
     TEST_STEP_ and test_step (the engine's migration steps), TEST_FAULT_
     and test_fault (the engine's injected faults: util reads the fault's
     name, its owner says which names it knows).
Prints every violation and exits 1, or prints a one-line summary.
usage: layer_names.py SOURCE_DIR
"""
import os
import re
import sys

RANK = {  # directory -> rank, as lint.call_graph's libraries
    "vmm/util": 0,
    "vmm/machine": 1,
    "migration/wire": 2,
    "migration/snapshot": 2,
    "migration/dirty": 2,
    "migration/api": 3,
    "migration/source": 3,
    "migration/incoming": 3,
    "migration/persist": 3,
    "frontend": 4,
}
# (includer, included): an include that goes up on purpose, and why.
ALLOWED_UP = {
    ("migration/dirty", "migration/api"): "vmm_dirty links vmm_migration_api",
}
UTIL_PREFIXES = ("KVM_", "MIG_", "MIGRATION_", "SECCOMP_THREAD_", "TEST_STEP_", "test_step",
                 "TEST_FAULT_", "test_fault")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)
TAG = re.compile(r"\b(?:struct|union|enum)\s+([A-Za-z_][A-Za-z0-9_]*)")
ENUM_BODY = re.compile(r"\benum\s*(?:[A-Za-z_][A-Za-z0-9_]*)?\s*\{([^}]*)\}", re.S)


def layer_of(root, path):
    rel = os.path.relpath(path, root)
    d = os.path.dirname(rel)
    while d and d not in RANK:
        d = os.path.dirname(d)
    return d or None


def sources(root):
    for d in RANK:
        for base, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.join(base, f)


def code_of(text):
    """The text without comments and without the contents of strings."""
    text = COMMENT.sub(" ", text)
    return STRING.sub('""', text)


def defined_names(text):
    code = code_of(text)
    names = set(DEFINE.findall(code)) | set(TAG.findall(code))
    for body in ENUM_BODY.findall(code):
        for item in body.split(","):
            m = IDENT.match(item.strip())
            if m:
                names.add(m.group(0))
    names.discard("")
    return names


def main():
    root = os.path.abspath(sys.argv[1])
    files = list(sources(root))
    headers = {}
    for f in files:
        if f.endswith(".h"):
            headers.setdefault(os.path.basename(f), f)
    errors = []
    for f in files:
        me = layer_of(root, f)
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(code_of_includes(text)):
            here = os.path.normpath(os.path.join(os.path.dirname(f), inc))
            target = here if os.path.exists(here) else headers.get(os.path.basename(inc))
            if not target:
                continue  # outside the layers (include/, generated, system)
            them = layer_of(root, target)
            if them and RANK[them] > RANK[me] and (me, them) not in ALLOWED_UP:
                errors.append(f"{os.path.relpath(f, root)} includes {inc}: "
                              f"{them} is above {me}")
    above = {}
    for f in files:
        if layer_of(root, f) != "vmm/util" and f.endswith(".h"):
            with open(f, encoding="utf-8") as fh:
                for name in defined_names(fh.read()):
                    above.setdefault(name, os.path.relpath(f, root))
    util_defined = set()
    for f in files:
        if layer_of(root, f) == "vmm/util":
            with open(f, encoding="utf-8") as fh:
                util_defined |= defined_names(fh.read())
    for f in files:
        if layer_of(root, f) != "vmm/util":
            continue
        with open(f, encoding="utf-8") as fh:
            code = code_of(fh.read())
        seen = set()
        for name in IDENT.findall(code):
            if name in seen:
                continue
            seen.add(name)
            if name.startswith(UTIL_PREFIXES):
                errors.append(f"{os.path.relpath(f, root)} names {name}: "
                              "a prefix of a layer above util")
            elif name in above and name not in util_defined:
                errors.append(f"{os.path.relpath(f, root)} names {name}, "
                              f"defined above util in {above[name]}")
    for e in errors:
        print("layer_names: " + e)
    if errors:
        return 1
    print(f"layer_names: {len(files)} files, includes go only downward "
          "and util names nothing above it")
    return 0


def code_of_includes(text):
    """The text without comments (includes keep their quoted names)."""
    return COMMENT.sub(" ", text)


if __name__ == "__main__":
    sys.exit(main())
