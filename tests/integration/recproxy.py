#!/usr/bin/env python3
"""recproxy.py LISTEN_PORT TARGET_PORT [--drop NAME[,NAME...]] [--then cut|hold]
                 [--trickle NAME --every SECONDS]
                 [--caps-without ID] [--dump FILE]
recproxy.py --replay HOST:PORT VERSION SESSION NAME HEX [main-resume ATTEMPT]

A TCP proxy between a vmm source and target (plain TCP only) that reads the
migration protocol's framing (docs/migration-protocol.md: a 32-byte hello,
then 8-byte record headers) on every connection but the data ones, and can
drop records: the first record of each named type (either direction) is
not forwarded; with --then cut (the default) the connection it travelled on
is then closed both ways, with --then hold it goes on as if the record had
never been sent. With --trickle, once the first record of type NAME has
been forwarded, everything after it in that record's direction on that
connection goes one byte every SECONDS (a path that keeps a connection
alive and nothing more; the other direction and the other connections are
untouched). Prints, flushed: "listening PORT", "hello ROLE SESSION"
per connection (SESSION in hex, as a party reading the wire would learn it)
and "version MAJOR.MINOR" for a main one, "record NAME on ROLE HEX" for
every decision record that passes (COMMIT, ABORT, RELEASE, RESUME: what a
passive reader captures), "dropped NAME on ROLE", "cut ROLE", "trickling
ROLE after NAME" and "trickled N bytes on ROLE" after each record it
trickled; for a CAPS "caps flags F" plus, with a formats block (protocol
6.1), "caps formats minor M components ID:OLDEST-NEWEST,...". --caps-without
ID takes state component ID out of CAPS's formats block
(vmm/machine/state/state_versions.h ids: 4 is serial), as a target that lacks it
would send it. --dump FILE writes the source's side of the main
connection, byte for byte as it came (the hello, then every record), to
FILE: a golden stream (scripts/goldens.sh); "dumped main" once that
connection ended. Runs until killed.

--replay is that reader acting: it opens a recover connection to HOST:PORT
with the hello of VERSION (as printed) and SESSION, waits for the target's
RECOVER_STATE and sends record NAME with the captured payload HEX. With
"main-resume ATTEMPT" it opens a resumed session's main connection instead
(the attempt in the hello's index) and sends the record at once, as the
first one such a connection carries. Prints "replay: got NAME" for each
record the target answers with ("replay: ERROR text" for an ERROR) and
"replay: closed" at the end."""
import socket
import struct
import sys
import threading
import time

NAMES = {"VM_DESC": 1, "SWITCHOVER": 2, "END": 5, "COMMITTED": 6, "ERROR": 7,
         "POSTCOPY": 9, "POSTCOPY_DONE": 12, "POSTCOPY_ARMED": 13, "PREPARED": 20,
         "COMMIT": 21, "ABORT": 22, "RELEASE": 23, "RECOVER_STATE": 24, "CAPS": 25,
         "HEARTBEAT": 26, "RESUME": 28, "DECIDED": 29}
ROLES = {0: "main", 1: "data", 2: "urgent", 3: "main-resume", 4: "recover"}
CAPTURED = {NAMES[n] for n in ("COMMIT", "ABORT", "RELEASE", "RESUME")}


def name_of(rtype):
    return [k for k, v in NAMES.items() if v == rtype][0] if rtype in NAMES.values() \
        else str(rtype)


def replay(addr, version, session, name, payload, attempt=None):
    """A recover (or main-resume) connection with a captured proof: what a
    passive reader can do."""
    host, port = addr.rsplit(":", 1)
    major, minor = (int(x) for x in version.split("."))
    s = socket.create_connection((host, int(port)), timeout=30)
    role, index = (4, 0) if attempt is None else (3, attempt << 16)
    s.sendall(b"VMMMIG\r\n" + struct.pack("<IIQII", major, minor, session, role, index))
    sent = False
    if attempt is not None:
        s.sendall(struct.pack("<II", NAMES[name], len(payload)) + payload)
        sent = True
    try:
        while True:
            rtype, rlen = struct.unpack("<II", read_exact(s, 8))
            body = read_exact(s, rlen) if rlen else b""
            if rtype == NAMES["ERROR"]:
                print("replay: ERROR " + body.decode("ascii", "replace"), flush=True)
            else:
                print("replay: got " + name_of(rtype), flush=True)
            if rtype == NAMES["RECOVER_STATE"] and not sent:
                s.sendall(struct.pack("<II", NAMES[name], len(payload)) + payload)
                sent = True
    except (OSError, EOFError):
        pass
    print("replay: closed", flush=True)

def read_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b


if sys.argv[1] == "--replay":
    if len(sys.argv) == 9 and sys.argv[7] == "main-resume":
        attempt = int(sys.argv[8])
    elif len(sys.argv) == 7:
        attempt = None
    else:
        sys.exit("recproxy.py: --replay HOST:PORT VERSION SESSION NAME HEX [main-resume ATTEMPT]")
    replay(sys.argv[2], sys.argv[3], int(sys.argv[4], 16), sys.argv[5],
           bytes.fromhex(sys.argv[6]), attempt)
    sys.exit(0)
listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])
drop, then, trickle, every, caps_without, dump = set(), "cut", None, 0.0, None, None
args = sys.argv[3:]
while args:
    if args[0] == "--drop":
        drop = {NAMES[n] for n in args[1].split(",")}
    elif args[0] == "--then":
        then = args[1]
    elif args[0] == "--trickle":
        trickle = NAMES[args[1]]
    elif args[0] == "--every":
        every = float(args[1])
    elif args[0] == "--caps-without":
        caps_without = int(args[1])
    elif args[0] == "--dump":
        dump = open(args[1], "wb")
    else:
        sys.exit("recproxy.py: unknown option " + args[0])
    args = args[2:]
if trickle is not None and every <= 0:
    sys.exit("recproxy.py: --trickle needs --every SECONDS")
lock = threading.Lock()
dropped = set()


def say(line):
    with lock:
        print(line, flush=True)


def close_both(a, b):
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def send_trickled(dst, data, role):
    for i in range(len(data)):
        time.sleep(every)
        dst.sendall(data[i:i + 1])
    say("trickled %d bytes on %s" % (len(data), role))


def caps(payload):
    """Says what a CAPS holds; takes component caps_without out of its formats block."""
    flags, reason_len = struct.unpack("<II", payload[:8])
    say("caps flags %u" % flags)
    if not flags & 2:
        return payload
    blk = 8 + reason_len
    minor, fold, fnew, ncomp = struct.unpack("<IHHI", payload[blk:blk + 12])
    comps = [struct.unpack("<IHH", payload[blk + 16 + 8 * i:blk + 24 + 8 * i])
             for i in range(ncomp)]
    say("caps formats minor %u framings %u-%u components %s" % (
        minor, fold, fnew, ",".join("%u:%u-%u" % c for c in comps)))
    if caps_without is None:
        return payload
    comps = [c for c in comps if c[0] != caps_without]
    say("caps: took component %u out" % caps_without)
    return payload[:blk] + struct.pack("<IHHII", minor, fold, fnew, len(comps), 0) + \
        b"".join(struct.pack("<IHH", *c) for c in comps)


def dumped(b):
    with lock:
        dump.write(b)
        dump.flush()


def pump(src, dst, role, framed, to_target=False):
    trickling = False
    try:
        if not framed:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                dst.sendall(b)
            return
        while True:
            hdr = read_exact(src, 8)
            rtype, rlen = struct.unpack("<II", hdr)
            payload = read_exact(src, rlen) if rlen else b""
            with lock:
                hit = rtype in drop and rtype not in dropped
                if hit:
                    dropped.add(rtype)
            if hit:
                name = name_of(rtype)
                say("dropped %s on %s" % (name, role))
                if then == "cut":
                    say("cut " + role)
                    close_both(src, dst)
                    return
                continue
            if rtype in CAPTURED:
                say("record %s on %s %s" % (name_of(rtype), role, payload.hex()))
            if rtype == NAMES["CAPS"]:
                payload = caps(payload)
                hdr = struct.pack("<II", rtype, len(payload))
            if dump and role == "main" and to_target:
                dumped(hdr + payload)
            if trickling:
                send_trickled(dst, hdr + payload, role)
                continue
            dst.sendall(hdr + payload)
            if rtype == trickle:
                trickling = True
                say("trickling %s after %s" % (role, name_of(rtype)))
    except (OSError, EOFError):
        pass
    if dump and role == "main" and to_target:
        say("dumped main")
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def serve(client):
    try:
        target = socket.create_connection(("127.0.0.1", target_port), timeout=10)
        target.settimeout(None)
        hello = read_exact(client, 32)
        major, minor, session, role = struct.unpack("<IIQI", hello[8:28])
        role = ROLES.get(role, str(role))
        say("hello %s %016x" % (role, session))
        if role == "main":
            say("version %u.%u" % (major, minor))
        if dump and role == "main":
            dumped(hello)
        target.sendall(hello)
    except (OSError, EOFError):
        client.close()
        return
    framed = role != "data"
    threading.Thread(target=pump, args=(client, target, role, framed, True), daemon=True).start()
    threading.Thread(target=pump, args=(target, client, role, framed), daemon=True).start()


srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", listen_port))
srv.listen(64)
say("listening %d" % listen_port)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
