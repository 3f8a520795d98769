#!/usr/bin/env python3
"""integration.doc_examples: the README's migration walk-through, run.

  doc_examples.py VMM SOURCE_DIR WORK PORT1 PORT2 PORT3

lint.doc_commands checks that every vmm command line in README.md and docs/
uses real commands, options, keys and files; this runs them. It takes the
command lines of README.md's "Migrating a VM" block and the console
example of docs/api.md's "CLI verbs", word for word, with only the host
("target", "0.0.0.0") and the port (7000) replaced by this machine's
loopback and free ports, and plays them in the order a user would:

  the source `vmm run examples/dirty.cfg` (named in the block's comment;
  with `--set workload.passes=0` added so that its guest runs until stopped);
  a target (`vmm run --incoming ...`), then `vmm migrate --to ...`; again to
  a second target with the `--json` line, and to a third with the
  `--mode postcopy` line (the VM moves on each time, its guest verifying);
  the `--cancel` line while a migration runs (its target stops itself
  once pass 0 is in, `VMM_TEST_STOP_AT=target-first-sync` in its
  environment, and `--timeout-ms 60000` added to the `vmm migrate` line
  lets the source wait that long for the pass's acknowledgement: the
  cancel finds the migration in precopy however fast either side is),
  after which the VM runs on where it was;
  then the docs' `vmm status` and `vmm pause` lines, whose output must be
  what the docs show (`dirty: running (2 vCPUs, 1024 MiB)`, `paused`).

Lines that need a broken connection or a lost host (`--resume`, `--recover`)
or certificates (the TLS line) are run by their own tests
(migrate_postcopy_resume, switchover_*, migrate_tls); every other line of
the block must be one this script knows, so a new example fails here until
it is run or listed.
"""
import os
import re
import shlex
import signal
import subprocess
import sys
import time

VMM, SRC, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
PORTS = sys.argv[4:7]
ELSEWHERE = ("--resume", "--recover", "migration.tls_cert")
procs = []


def fail(msg):
    for p in procs:
        if p.poll() is None:
            p.kill()
    sys.exit("FAIL: " + msg)


def block_lines(path, marker):
    """The vmm lines of the fenced block holding `marker` (or the first one
    after it, for a heading), comments cut."""
    text = open(path).read()
    start = text.index(marker)
    if marker.startswith("#"):
        a = text.index("```", start)
    else:
        a = text.rindex("```", 0, start)
    a = text.index("\n", a) + 1
    b = text.index("```", a)
    block = text[a:b].replace("\\\n", " ")
    lines = []
    for line in block.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        line = re.sub(r"^\$ ", "", line)
        if re.match(r"vmm ", line):
            lines.append(line)
    return block, lines


def localize(line, port):
    line = line.replace("target:7000", "127.0.0.1:" + port)
    return line.replace("0.0.0.0:7000", "127.0.0.1:" + port)


def argv(line):
    words = shlex.split(line)
    assert words[0] == "vmm"
    return [VMM] + words[1:]


def start(name, args, env=None):
    out = open(os.path.join(WORK, name + ".out"), "w")
    err = open(os.path.join(WORK, name + ".err"), "w")
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                         env=dict(os.environ, **env) if env else None)
    p.name = name
    procs.append(p)
    return p


def read(name, ext="out"):
    try:
        return open(os.path.join(WORK, "%s.%s" % (name, ext)), errors="replace").read()
    except FileNotFoundError:
        return ""


# Every bound times VMM_TEST_TIMEOUT_SCALE, as in lib.sh (the emulated
# machine of scripts/nested-kvm.sh sets it).
SCALE = int(os.environ.get("VMM_TEST_TIMEOUT_SCALE", "1") or "1")


def wait_for(name, regex, seconds, proc=None, ext="out"):
    seconds *= SCALE
    end = time.time() + seconds
    while time.time() < end:
        if re.search(regex, read(name, ext), re.M):
            return
        if proc is not None and proc.poll() is not None:
            fail("%s exited %s before /%s/: %s" % (name, proc.returncode, regex,
                                                  read(name, "err")[-500:]))
        time.sleep(0.1)
    fail("no /%s/ in %s.%s within %d s" % (regex, name, ext, seconds))


def run(args, seconds, what):
    r = subprocess.run(args, capture_output=True, text=True, timeout=seconds * SCALE)
    print("$ %s  -> %d" % (" ".join(args[1:]), r.returncode))
    if r.returncode != 0:
        fail("%s exited %d: %s%s" % (what, r.returncode, r.stdout[-500:], r.stderr[-500:]))
    return r


def target(n, line, env=None):
    p = start("target%d" % n, argv(localize(line, PORTS[n - 1])), env)
    wait_for("target%d" % n, r"waiting for an incoming migration on 127\.0\.0\.1:" + PORTS[n - 1],
             60, p, "err")
    return p


def main():
    block, lines = block_lines(SRC + "/README.md", "## Migrating a VM")
    m = re.search(r"`(vmm run examples/[a-z]+\.cfg)`", block)
    if not m:
        fail("the README's migration block names no source command")
    incoming = [l for l in lines if l.startswith("vmm run --incoming ")]
    migrate = [l for l in lines if l.startswith("vmm migrate --to ")]
    plain = [l for l in migrate if "--json" not in l and "--mode" not in l]
    as_json = [l for l in migrate if "--json" in l]
    postcopy = [l for l in migrate if "--mode postcopy" in l]
    cancel = [l for l in lines if l.startswith("vmm migrate --cancel")]
    known = set(incoming + plain + as_json + postcopy + cancel)
    for l in lines:
        if l not in known and not any(e in l for e in ELSEWHERE):
            fail("README.md's migration block has a line this test does not run: " + l)
    if not (incoming and plain and as_json and postcopy and cancel):
        fail("the README's migration block lacks an expected line: %r" % lines)

    # The source, as the block's comment says it was started.
    # (its 20 passes would end the guest midway: it runs until stopped here)
    src = start("source", argv(m.group(1)) + ["--set", "workload.passes=0"])
    wait_for("source", r"dirty pass [0-9]+ ok", 60, src)
    # 1. precopy: the progress line goes to a terminal only; the summary to stdout.
    t1 = target(1, incoming[0])
    r = run(argv(localize(plain[0], PORTS[0])), 180, plain[0])
    if not re.search(r"^migration completed in \d+ ms", r.stdout, re.M):
        fail("no summary: " + r.stdout[-500:])
    if src.wait(30) != 0:
        fail("the source exited %d after the migration" % src.returncode)
    wait_for("target1", r"dirty pass [0-9]+ ok", 60, t1)
    # 2. the --json line, from the VM's new home to a second target.
    t2 = target(2, incoming[0])
    r = run(argv(localize(as_json[0], PORTS[1])), 180, as_json[0])
    if '"state":"completed"' not in r.stdout:
        fail("the --json summary is not a completed progress object: " + r.stdout[-500:])
    if t1.wait(30) != 0:
        fail("the first target exited %d after migrating on" % t1.returncode)
    # 3. the --cancel line while a migration to a third target is held in
    # precopy: that target stops itself once pass 0 is in.
    t3 = target(3, incoming[0], {"VMM_TEST_STOP_AT": "target-first-sync"})
    held = argv(localize(plain[0], PORTS[2])) + ["--timeout-ms", "60000"]
    mig = subprocess.Popen(held, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs.append(mig)
    wait_for("target3", r"test hook: stopped at target-first-sync", 60, t3, "err")
    run(argv(cancel[0]), 30, cancel[0])
    out, err = mig.communicate(timeout=60 * SCALE)
    if mig.returncode != 1 or "cancelled" not in out + err:
        fail("the cancelled migration: exit %d, %s%s" % (mig.returncode, out[-300:], err[-300:]))
    wait_for("target2", r"dirty pass [0-9]+ ok", 60, t2)
    if t2.poll() is not None:
        fail("the VM did not keep running after the cancel")
    # The held target, continued, ends on its own (the source cancelled) or on SIGTERM.
    if t3.poll() is None:
        t3.send_signal(signal.SIGCONT)
        t3.send_signal(signal.SIGTERM)
    t3.wait(30)
    # 4. the --mode postcopy line, to a fresh target.
    t3 = target(3, incoming[0])
    run(argv(localize(postcopy[0], PORTS[2])), 180, postcopy[0])
    if t2.wait(60 * SCALE) != 0:
        fail("the second target exited %d after the postcopy migration" % t2.returncode)
    wait_for("target3", r"dirty (pass [0-9]+ ok|done: .* verified)", 120, t3)

    # docs/api.md's CLI verbs example, against the VM where it now runs
    # (its socket moves to dirty.sock once the source has gone).
    end = time.time() + 30
    while subprocess.run([VMM, "status", "--vm", "dirty"], capture_output=True).returncode:
        if time.time() > end:
            fail("the last target never served `vmm status --vm dirty`")
        time.sleep(0.2)
    _, verbs = block_lines(SRC + "/docs/api.md", "$ vmm status --vm dirty")
    shown = open(SRC + "/docs/api.md").read()
    for line in verbs:
        r = run(argv(line), 30, line)
        expect = shown.split("$ " + line + "\n", 1)[1].split("\n", 1)[0]
        if r.stdout.strip() != expect.strip():
            fail("`%s` printed %r, the docs show %r" % (line, r.stdout.strip(), expect))
    run([VMM, "stop", "--vm", "dirty"], 30, "vmm stop")
    t3.wait(60 * SCALE)
    if "CORRUPTION" in "".join(read(n) for n in ("source", "target1", "target2", "target3")):
        fail("a guest reported CORRUPTION")
    print("PASS: %d README lines and %d docs/api.md lines run" % (len(known), len(verbs)))


main()
