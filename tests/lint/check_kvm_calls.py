#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""lint.kvm_calls: KVM is the machine's. No C file of vmm/ or migration/
outside vmm/machine/ issues a KVM ioctl or touches a KVM file descriptor
(docs/architecture.md, "Layers"): the engine and the front end ask the
machine's functions (vm.h), which say who may call them and when.

  check_kvm_calls.py SOURCE_DIR

Fails, naming file and line, on
  - an ioctl( call whose arguments name a KVM_ request or a KVM fd,
  - any use of the VM's KVM fds: vm_fd, kvm_fd, a vCPU's fd
    (vcpu->fd, vcpus[i].fd), the kvm_run mapping (vcpu->run), and
  - the fields the machine keeps behind its functions for the same reason
    (their memory order and lock are the machine's): vm->stopping
    (vm_stopping()), serial.on_first_byte (vm_on_console_first_byte()).
Comments and string literals are not read. Other ioctls (userfaultfd, the
terminal) are not KVM's and pass. A built-in sample of each kind must be
caught first, so that the check cannot go blind.
"""
import os
import re
import sys

MACHINE = os.path.join("vmm", "machine")
TOPS = ("vmm", "migration", "frontend")

KVM_FD = re.compile(r"(?:->|\.)\s*(?:vm_fd|kvm_fd)\b|\bvcpu\s*->\s*(?:fd|run)\b"
                    r"|\bvcpus\s*\[[^]]*\]\s*\.\s*(?:fd|run)\b")
IOCTL = re.compile(r"\bioctl\s*\(")
PRIVATE = re.compile(r"\bvm\s*->\s*stopping\b|\bserial\s*\.\s*on_first_byte\b")
KVM_ARG = re.compile(r"\bKVM_[A-Z0-9_]+\b|\b(?:vm_fd|kvm_fd)\b")


def strip(text):
    """Comments and literals blanked, newlines kept (line numbers stay)."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'',
                  blank, text, flags=re.S)


def call_args(code, start):
    """The text of a call's arguments, from the '(' at start to its match."""
    depth = 0
    for i in range(start, len(code)):
        if code[i] == "(":
            depth += 1
        elif code[i] == ")":
            depth -= 1
            if depth == 0:
                return code[start + 1:i]
    return code[start + 1:]


def problems(text):
    code = strip(text)
    line = lambda pos: code.count("\n", 0, pos) + 1
    out = []
    for m in IOCTL.finditer(code):
        args = " ".join(call_args(code, m.end() - 1).split())
        if KVM_ARG.search(args):
            out.append((line(m.start()), "KVM ioctl: ioctl(%s)" % args))
    for m in KVM_FD.finditer(code):
        out.append((line(m.start()), "KVM file descriptor: %s" % " ".join(m.group(0).split())))
    for m in PRIVATE.finditer(code):
        out.append((line(m.start()), "the machine's field: %s" % " ".join(m.group(0).split())))
    return sorted(set(out))


SAMPLES = {
    "ioctl(dl->vm->vm_fd, KVM_GET_DIRTY_LOG, &log)": 2,  # the request and the fd
    "r = ioctl(fd,\n  KVM_CLEAR_DIRTY_LOG, &c);": 1,
    "int fd = vm->kvm_fd;": 1,
    "struct kvm_run *r = vcpu->run;": 1,
    "f(vm->vcpus[i].fd);": 1,
    "if (__atomic_load_n(&rt->vm->stopping, __ATOMIC_ACQUIRE))": 1,
    "vm->serial.on_first_byte = f;": 1,
    "if (pc_stopping(ps) || g->stopping)": 0,
    "ioctl(fd, UFFDIO_COPY, &c); /* ioctl(vm->vm_fd, KVM_RUN) */": 0,
    'puts("ioctl(vm_fd, KVM_RUN, 0)");': 0,
}


def main():
    src = sys.argv[1]
    for sample, want in SAMPLES.items():
        got = len(problems(sample))
        if got != want:
            sys.exit("FAIL: the check itself: %d findings in %r, not %d" % (got, sample, want))
    bad, nfiles = [], 0
    for top in TOPS:
        for root, _, files in os.walk(os.path.join(src, top)):
            rel_root = os.path.relpath(root, src)
            if rel_root == MACHINE or rel_root.startswith(MACHINE + os.sep):
                continue
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(root, f)
                nfiles += 1
                with open(path, encoding="utf-8") as fh:
                    for n, what in problems(fh.read()):
                        bad.append("%s:%d: %s (only vmm/machine/ calls KVM or touches it: "
                                   "use or add a function of its header)"
                                   % (os.path.relpath(path, src), n, what))
    if bad:
        sys.exit("FAIL: " + "\nFAIL: ".join(bad))
    print("PASS: %d files of vmm/ and migration/ outside vmm/machine/ make no KVM call" % nfiles
          + " and read no field the machine keeps behind a function")


if __name__ == "__main__":
    main()
