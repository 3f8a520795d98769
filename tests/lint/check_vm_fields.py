#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""lint.vm_fields: struct vm is the machine's. Its body lives in
vmm/machine/internal/vm_struct.h; every other layer holds a VM by pointer
and reaches it only through the functions vm.h declares (with their
contracts: thread, lock, state), so that what a field means, and who may
touch it when, is decided in one place (docs/architecture.md, "Layers").

  check_vm_fields.py SOURCE_DIR
  check_vm_fields.py --self-test

Fails, naming file and line, when
  - a file outside vmm/machine/ includes vm_struct.h. tests/unit and
    tests/fuzz may: they are white-box tests that build a VM (fds -1, no
    KVM) or inspect its state by hand, which no function of vm.h should
    exist for;
  - any header but vm_struct.h defines struct vm's body (vm.h included);
  - code outside vmm/machine/ (the same two test folders excepted) names a
    field of struct vm, read from vm_struct.h, after -> or . on an
    expression ending in `vm` (vm->mem, in->vm->cfg, ctx->rt.vm->end_fd,
    recv_vm->nvcpus, s->vm.lock). Comments and string literals are not
    read ("vm.vcpus=2" is a config key).
The compiler refuses a field of the opaque struct already; this keeps the
include from coming back. The check first runs on built-in samples, each
of which must be caught, so that it cannot go blind; --self-test also runs
the whole script on a planted tree and requires it to fail.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_kvm_calls import strip  # noqa: E402  (comments and literals blanked, lines kept)

PRIVATE = "vm_struct.h"
PRIVATE_PATH = os.path.join("vmm", "machine", "internal", PRIVATE)
MACHINE = os.path.join("vmm", "machine")
WHITE_BOX = (os.path.join("tests", "unit"), os.path.join("tests", "fuzz"))
TOPS = ("vmm", "migration", "frontend", "bench", "tests", "include", "guest-firmware")

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^">]+)[">]', re.M)
BODY = re.compile(r"\bstruct\s+vm\s*\{")


def vm_fields(header_text):
    """The member names of struct vm's body in the private header."""
    code = strip(header_text)
    m = BODY.search(code)
    if not m:
        return []
    depth, i = 1, m.end()
    while depth and i < len(code):
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        i += 1
    body = code[m.end():i - 1]
    fields = []
    for decl in body.split(";"):
        decl = re.sub(r"\[[^]]*\]", "", decl)  # array bounds
        for part in decl.split(","):
            names = re.findall(r"[A-Za-z_]\w*", part)
            if names:
                fields.append(names[-1])
    return sorted(set(fields))


def field_use(fields):
    # An expression ending in `vm` (an identifier vm or *_vm, perhaps indexed), then -> or .
    return re.compile(r"\b(?:\w*_)?vm\s*(?:\[[^]]*\]\s*)?(?:->|\.)\s*(%s)\b" % "|".join(fields))


def problems(text, fields, private_ok, body_ok):
    code = strip(text)
    line = lambda pos: code.count("\n", 0, pos) + 1
    out = []
    if not private_ok:
        for m in INCLUDE.finditer(text):
            if os.path.basename(m.group(1)) == PRIVATE:
                out.append((line(m.start()), "includes %s, the machine's private header" % PRIVATE))
        for m in field_use(fields).finditer(code):
            out.append((line(m.start()), "names struct vm's field: %s" % " ".join(m.group(0).split())))
    if not body_ok:
        for m in BODY.finditer(code):
            out.append((line(m.start()), "defines struct vm's body (only %s may)" % PRIVATE_PATH))
    return sorted(set(out))


def under(rel, d):
    return rel == d or rel.startswith(d + os.sep)


def check(src):
    """[problem lines], number of files read; or exits when the tree is not as expected."""
    try:
        with open(os.path.join(src, PRIVATE_PATH), encoding="utf-8") as fh:
            fields = vm_fields(fh.read())
    except OSError as e:
        sys.exit("FAIL: %s: %s" % (PRIVATE_PATH, e.strerror))
    if len(fields) < 5 or "mem" not in fields or "cfg" not in fields:
        sys.exit("FAIL: the check itself: struct vm's fields not found in %s (%s)"
                 % (PRIVATE_PATH, fields))
    bad, nfiles = [], 0
    for top in TOPS:
        for root, dirs, files in os.walk(os.path.join(src, top)):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(root, f)
                rel = os.path.relpath(path, src)
                private_ok = under(rel, MACHINE) or any(under(rel, d) for d in WHITE_BOX)
                nfiles += not private_ok
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for n, what in problems(fh.read(), fields, private_ok, rel == PRIVATE_PATH):
                        bad.append("%s:%d: %s (struct vm is the machine's: use or add a "
                                   "function of vm.h)" % (rel, n, what))
    return bad, nfiles


FIELDS = ["cfg", "mem", "nvcpus", "end_fd", "end_message", "lock", "hooks", "serial"]
SAMPLES = {
    '#include "vm_struct.h"\n': 1,
    "#include \"../vmm/machine/internal/vm_struct.h\"\n": 1,
    "n = m->vm->mem.nslots;": 1,
    "x = ctx->rt.vm->end_fd;": 1,
    "pthread_mutex_lock(&s->vm.lock);": 1,
    "f(recv_vm->nvcpus, vm[0].cfg.seccomp);": 2,
    "vm->hooks = h; /* vm->serial */": 1,
    "struct vm {\n\tint x;\n};": 1,
    "struct vm *vm; struct vm;": 0,
    'sets[] = {"vm.vcpus=1", "vm.memory=2G"}; // vm->mem': 0,
    "n = vm_mem(vm)->nslots; e = vm_config(in->vm)->seccomp;": 0,
    "kvm->mem = 1; rvm.cfg = 2; st->vm_blob = 3;": 0,
}


def self_samples():
    for sample, want in SAMPLES.items():
        got = len(problems(sample, FIELDS, False, False))
        if got != want:
            sys.exit("FAIL: the check itself: %d findings in %r, not %d" % (got, sample, want))
    if vm_fields("struct vm {\n\tstruct vm_config cfg; /* x; */\n\tchar m[A + B];\n"
                 "\tint a, b;\n\tconst struct h *hooks;\n};") != ["a", "b", "cfg", "hooks", "m"]:
        sys.exit("FAIL: the check itself: vm_fields() misreads a struct body")


PLANTED = {
    PRIVATE_PATH: "struct vm {\n\tstruct vm_config cfg;\n\tstruct guest_mem mem;\n"
                  "\tunsigned nvcpus;\n\tint end_fd;\n\tchar end_message[256];\n};\n",
    os.path.join(MACHINE, "vm.h"): "struct vm;\nstruct vm {\n\tint cfg;\n};\n",
    os.path.join(MACHINE, "vm.c"): '#include "vm_struct.h"\nint f(struct vm *vm) { return vm->nvcpus; }\n',
    os.path.join("frontend", "run.c"): '#include "vm_struct.h"\n'
                                      "int g(struct run_ctx *ctx) { return ctx->rt.vm->end_fd; }\n",
    os.path.join("migration", "source", "s.c"): "uint32_t h(struct migration *m)\n"
                                                "{\n\treturn m->vm->mem.nslots;\n}\n",
    os.path.join("tests", "unit", "test_x.c"): '#include "vm_struct.h"\nstatic struct vm vm;\n'
                                              "int t(void) { return vm.nvcpus; }\n",
    os.path.join("bench", "b.c"): 'const char *s = "vm.vcpus=1"; /* vm->mem */\n'
                                  "int b(struct vm *vm) { return vm_nvcpus(vm); }\n",
}
PLANTED_WANT = ["vm.h:2:", "run.c:1:", "run.c:2:", "s.c:3:"]


def self_test():
    """The samples, then the whole script on a planted tree: it must exit non-zero, naming each."""
    self_samples()
    with tempfile.TemporaryDirectory(prefix="vm-fields-") as d:
        for rel, text in PLANTED.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w", encoding="utf-8") as fh:
                fh.write(text)
        r = subprocess.run([sys.executable, os.path.abspath(__file__), d],
                           capture_output=True, text=True)
        lines = [l for l in r.stderr.splitlines() if l.startswith("FAIL: ")]
        missing = [w for w in PLANTED_WANT if not any(w in l for l in lines)]
        if r.returncode == 0 or missing or len(lines) != len(PLANTED_WANT):
            sys.exit("FAIL: the check passed a planted violation (exit %d; missing %s):\n%s%s"
                     % (r.returncode, missing, r.stdout, r.stderr))
        os.remove(os.path.join(d, os.path.join(MACHINE, "vm.h")))
        for rel in (os.path.join("frontend", "run.c"), os.path.join("migration", "source", "s.c")):
            os.remove(os.path.join(d, rel))
        r = subprocess.run([sys.executable, os.path.abspath(__file__), d],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("FAIL: the check failed a clean planted tree:\n%s%s" % (r.stdout, r.stderr))
    print("PASS: the check fails on %d planted violations (exit status and lines) and passes "
          "once they are gone" % len(PLANTED_WANT))


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    if len(sys.argv) != 2:
        sys.exit("usage: check_vm_fields.py SOURCE_DIR | --self-test")
    self_samples()
    bad, nfiles = check(sys.argv[1])
    if bad:
        sys.exit("FAIL: " + "\nFAIL: ".join(bad))
    print("PASS: %d files outside vmm/machine/ (and its white-box tests) name no field of "
          "struct vm and include no %s; only it defines struct vm's body" % (nfiles, PRIVATE))


main()
