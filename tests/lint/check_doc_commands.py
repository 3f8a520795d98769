#!/usr/bin/env python3
"""lint.doc_commands: the vmm command lines in README.md and docs/ cannot rot.

  check_doc_commands.py VMM SOURCE_DIR

Every command line in a code block (fenced, or indented) of README.md and docs/*.md that
runs vmm (`vmm ...`, `build/vmm/vmm ...`, `/opt/vmm/bin/vmm ...`, after an
optional `$ ` prompt, `sudo` or VAR=value) must name a vmm command, use only
options that command's --help lists, give --set only keys of the config key
tables (vmm/machine/config/config_keys.c, frontend/frontend_config.c), and
name only example configs that exist.
"""
import glob
import os
import re
import shlex
import subprocess
import sys

VMM, SRC = sys.argv[1], sys.argv[2]


def commands():
    """The commands `vmm --help` lists, so that a new one is checked without a list here."""
    text = subprocess.run([VMM, "--help"], capture_output=True, text=True).stdout
    block = text.split("commands:", 1)[1].split("\n\n", 1)[0]
    names = []
    for m in re.findall(r"^  ([a-z-]+(?: \| [a-z-]+)*)", block, re.M):
        names += [c for c in m.split(" | ") if c not in names]
    if len(names) < 8:
        fail("vmm --help lists %d commands: is the parser broken?" % len(names))
    return names



def fail(msg):
    sys.exit("FAIL: " + msg)


def options(cmd):
    out = subprocess.run([VMM, cmd, "--help"], capture_output=True, text=True)
    text = out.stdout + out.stderr
    opts = set(re.findall(r"^ +(?:-[a-zA-Z], )?(--[a-z][a-z-]*)", text, re.M))
    if not opts:
        fail("vmm %s --help lists no options" % cmd)
    return opts | {"--help"}


COMMANDS = commands()
OPTS = {c: options(c) for c in COMMANDS}
# The config's keys: the machine's table and the front end's (its [console],
# [api], [log] and [migration] tls_*), read from the same file and --set.
KEY_TABLES = ("vmm/machine/config/config_keys.c", "frontend/frontend_config.c")
KEYS = set()
for table in KEY_TABLES:
    found = re.findall(r'\{"([a-z]+)", "([a-z_]+)",', open(SRC + "/" + table).read())
    if not found:
        fail("no key table in " + table)
    KEYS |= set("%s.%s" % m for m in found)


def command_lines(path):
    fence = False
    buf = ""
    for n, line in enumerate(open(path), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            buf = ""
            continue
        line = line.rstrip("\n")
        # fenced blocks, and indented ones (4 spaces) that start with a command
        if not fence and not (buf or re.match(r"^(    |\t)+\$? ?(\S*/)?vmm ", line)):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        yield n, buf + line
        buf = ""


def vmm_argv(line):
    line = re.sub(r"^\s*\$ ", "", line)
    line = line.split(" #")[0].strip()
    if line.startswith("#"):
        return None
    try:
        argv = shlex.split(line)
    except ValueError:
        return None
    while argv and (argv[0] in ("sudo", "env", "exec") or re.match(r"^[A-Z_]+=", argv[0])):
        argv = argv[1:]
    if not argv or not (argv[0] == "vmm" or argv[0].endswith("/vmm")) or argv[0].endswith("run/vmm"):
        return None
    return argv


checked = 0
files = [SRC + "/README.md"] + sorted(glob.glob(SRC + "/docs/*.md"))
for path in files:
    rel = os.path.relpath(path, SRC)
    for n, line in command_lines(path):
        argv = vmm_argv(line)
        if not argv or len(argv) < 2:
            continue
        where = "%s:%d: %s" % (rel, n, line.strip())
        cmd = argv[1]
        if cmd in ("--help", "-h", "--version", "-V"):
            continue
        if cmd not in OPTS:
            fail("%s: no command '%s'" % (where, cmd))
        for i, a in enumerate(argv[2:], 2):
            a = a.strip("[]()|")  # a usage line's [--opt ...] and (a | b)
            if a.startswith("--"):
                opt = a.split("=")[0]
                if opt not in OPTS[cmd]:
                    fail("%s: vmm %s has no option %s" % (where, cmd, opt))
                if opt == "--set":
                    kv = a.split("=", 1)[1] if "=" in a else (argv[i + 1] if i + 1 < len(argv) else "")
                    key = kv.split("=")[0]
                    if key and not key.startswith("<") and key not in KEYS:
                        fail("%s: --set %s: no such config key" % (where, key))
            elif a.startswith("examples/") and a.endswith(".cfg"):
                if not os.path.exists(os.path.join(SRC, a)):
                    fail("%s: %s does not exist" % (where, a))
        checked += 1
if checked < 10:
    fail("only %d vmm command lines found: is the parser broken?" % checked)
print("PASS: %d command lines" % checked)
