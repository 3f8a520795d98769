#!/usr/bin/env python3
"""recproxy.py LISTEN_PORT TARGET_PORT [--drop NAME[,NAME...]] [--then cut|hold]

A TCP proxy between a vmm source and target (plain TCP only) that reads the
migration protocol's framing (docs/migration-protocol.md: a 32-byte hello,
then 8-byte record headers) on every connection but the data ones, and can
drop records: the first record of each named type (either direction) is
not forwarded; with --then cut (the default) the connection it travelled on
is then closed both ways, with --then hold it goes on as if the record had
never been sent. Prints, flushed: "listening PORT", "hello ROLE SESSION"
per connection (SESSION in hex, as a party reading the wire would learn it),
"dropped NAME on ROLE", "cut ROLE". Runs until killed."""
import socket
import struct
import sys
import threading

NAMES = {"VM_DESC": 1, "SWITCHOVER": 2, "END": 5, "COMMITTED": 6, "ERROR": 7,
         "POSTCOPY": 9, "POSTCOPY_DONE": 12, "POSTCOPY_ARMED": 13, "PREPARED": 20,
         "COMMIT": 21, "ABORT": 22, "RELEASE": 23, "RECOVER_STATE": 24, "CAPS": 25}
ROLES = {0: "main", 1: "data", 2: "urgent", 3: "main-resume", 4: "recover"}

listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])
drop, then = set(), "cut"
args = sys.argv[3:]
while args:
    if args[0] == "--drop":
        drop = {NAMES[n] for n in args[1].split(",")}
    elif args[0] == "--then":
        then = args[1]
    else:
        sys.exit("recproxy.py: unknown option " + args[0])
    args = args[2:]
lock = threading.Lock()
dropped = set()


def say(line):
    with lock:
        print(line, flush=True)


def read_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b


def close_both(a, b):
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def pump(src, dst, role, framed):
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
                name = [k for k, v in NAMES.items() if v == rtype][0]
                say("dropped %s on %s" % (name, role))
                if then == "cut":
                    say("cut " + role)
                    close_both(src, dst)
                    return
                continue
            dst.sendall(hdr + payload)
    except (OSError, EOFError):
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def serve(client):
    try:
        target = socket.create_connection(("127.0.0.1", target_port), timeout=10)
        target.settimeout(None)
        hello = read_exact(client, 32)
        session, role = struct.unpack("<QI", hello[16:28])
        role = ROLES.get(role, str(role))
        say("hello %s %016x" % (role, session))
        target.sendall(hello)
    except (OSError, EOFError):
        client.close()
        return
    framed = role != "data"
    threading.Thread(target=pump, args=(client, target, role, framed), daemon=True).start()
    threading.Thread(target=pump, args=(target, client, role, framed), daemon=True).start()


srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", listen_port))
srv.listen(64)
say("listening %d" % listen_port)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
