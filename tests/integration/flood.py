#!/usr/bin/env python3
"""flood.py HOST PORT N SECONDS [TRICKLE_S] [--hello ROLE[:SESSION]] [--tls CERT,KEY,CA]
    [--from ADDR]

N TCP connections to HOST:PORT, each opened again 10 ms after the peer
closes it, for SECONDS; prints "open N" once all N were open at the same
time, then "reopened K" at the end.

Without TRICKLE_S or --hello they never send a byte (a peer that holds a
slot and says nothing). With TRICKLE_S each sends the next byte of a vmm
hello every TRICKLE_S seconds (a peer that keeps a read-per-byte timeout
alive forever and never completes anything).

With --hello each sends one whole, valid 32-byte hello (docs/
migration-protocol.md) and then nothing: ROLE is main, data, urgent,
main-resume or recover; SESSION the session id in hex (a party that read
it off the wire), else a random one per connection. The protocol's major
version is learnt first, as an adversary would: one connection sends a
hello of version 0 and reads the number from the target's refusal
("... this vmm speaks 5.x"); it prints "major M".

With --tls each connection first completes a TLS 1.3 handshake with the
client certificate CERT (key KEY, trusting CA): a peer holding a
certificate of the target's CA, as any source of that CA does.

With --from every connection leaves from the IPv4 address ADDR (on
loopback, 127.0.0.2 say: a party on another host than the source's).
"""
import os
import re
import select
import socket
import ssl
import struct
import sys
import time

ROLES = {"main": 0, "data": 1, "urgent": 2, "main-resume": 3, "recover": 4}
MAGIC = b"VMMMIG\r\n"
# The first bytes of a plausible hello: magic, then a version that never ends.
TRICKLE = MAGIC + b"\x05\x00\x00\x00" * 64

args, opts = [], {}
argv = sys.argv[1:]
while argv:
    if argv[0] in ("--hello", "--tls", "--from"):
        if len(argv) < 2:
            sys.exit("flood.py: %s needs a value" % argv[0])
        opts[argv[0]] = argv[1]
        argv = argv[2:]
    else:
        args.append(argv.pop(0))
if len(args) not in (4, 5):
    sys.exit(__doc__)
host, port, n, secs = args[0], int(args[1]), int(args[2]), float(args[3])
trickle = float(args[4]) if len(args) > 4 else 0.0
tls = None
if "--tls" in opts:
    cert, key, ca = opts["--tls"].split(",")
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    tls.minimum_version = ssl.TLSVersion.TLSv1_3
    tls.load_cert_chain(cert, key)
    tls.load_verify_locations(ca)
    tls.check_hostname = False  # a flooder does not care whom it floods
role, session = None, None
if "--hello" in opts:
    r, _, sess = opts["--hello"].partition(":")
    if r not in ROLES:
        sys.exit("flood.py: unknown role %s (expected %s)" % (r, ", ".join(ROLES)))
    role = ROLES[r]
    session = int(sess, 16) if sess else None
end = time.monotonic() + secs
socks, reopened, announced = {}, 0, False


def connect(timeout=5):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        if "--from" in opts:
            s.bind((opts["--from"], 0))
        s.connect((host, port))
        if tls:
            s = tls.wrap_socket(s, server_hostname=host)
    except (OSError, ssl.SSLError):
        s.close()
        return None
    return s


def hello(major, sess, rl):
    return MAGIC + struct.pack("<IIQII", major, 0, sess, rl, 0)


def read_exact(s, k):
    b = b""
    while len(b) < k:
        c = s.recv(k - len(b))
        if not c:
            raise EOFError
        b += c
    return b


def learn_major():
    """A hello of version 0; the target's ERROR names the major it speaks."""
    for _ in range(50):
        s = connect(10)
        if s is None:
            time.sleep(0.2)
            continue
        try:
            s.sendall(hello(0, 0, 0))
            rtype, rlen = struct.unpack("<II", read_exact(s, 8))
            text = read_exact(s, rlen).decode("utf-8", "replace") if rtype == 7 else ""
        except (OSError, EOFError, ssl.SSLError):
            text = ""
        s.close()
        m = re.search(r"speaks (\d+)\.", text)
        if m:
            return int(m.group(1))
        time.sleep(0.2)
    sys.exit("flood.py: the target never named its protocol version")


major = learn_major() if role is not None else 0
if role is not None:
    print("major %d" % major, flush=True)


def open_one():
    s = connect()
    if s is None:
        return None
    try:
        if role is not None:
            sess = session if session is not None else struct.unpack("<Q", os.urandom(8))[0]
            s.sendall(hello(major, sess, role))
    except (OSError, ssl.SSLError):
        s.close()
        return None
    s.setblocking(False)
    return s


def drop(s):
    socks.pop(s, None)
    s.close()
    time.sleep(0.01)


next_byte = time.monotonic() + trickle
while time.monotonic() < end:
    while len(socks) < n and time.monotonic() < end:
        s = open_one()
        if s is None:
            time.sleep(0.01)
            continue
        socks[s] = 0
        if announced:
            reopened += 1
    if not announced and len(socks) == n:
        print("open %d" % n, flush=True)
        announced = True
    ready, _, _ = select.select(list(socks), [], [], 0.1)
    for s in ready:
        # Until it would block: TLS may hold a record (the refusal) and the end behind it.
        while True:
            try:
                data = s.recv(4096)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                break  # nothing more now (a TLS record without data: the session ticket)
            except (OSError, ssl.SSLError):
                data = b""
            if not data:  # closed by the target: reopen after a short pause
                drop(s)
                break
    if trickle and time.monotonic() >= next_byte:
        next_byte = time.monotonic() + trickle
        for s, sent in list(socks.items()):
            try:
                s.send(TRICKLE[sent % len(TRICKLE) : sent % len(TRICKLE) + 1])
                socks[s] = sent + 1
            except (OSError, ssl.SSLError):
                drop(s)
print("reopened %d" % reopened, flush=True)
