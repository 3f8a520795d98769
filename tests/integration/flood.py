#!/usr/bin/env python3
"""flood.py HOST PORT N SECONDS [TRICKLE_S]: N TCP connections to HOST:PORT,
each opened again 10 ms after the peer closes it, for SECONDS; prints
"open N" once all N were open at the same time, then "reopened K" at the
end. Without TRICKLE_S they never send a byte (a peer that holds a slot and
says nothing); with it each sends the next byte of a vmm hello every
TRICKLE_S seconds (a peer that keeps a read-per-byte timeout alive forever
and never completes anything)."""
import select
import socket
import sys
import time

host, port, n, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
trickle = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
# The first bytes of a plausible hello: magic, then a version that never ends.
HELLO = b"VMMMIG\r\n" + b"\x05\x00\x00\x00" * 64
end = time.monotonic() + secs
socks, reopened, announced = {}, 0, False


def connect():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect((host, port))
    except OSError:
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
        s = connect()
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
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:  # closed by the target: reopen after a short pause
            drop(s)
    if trickle and time.monotonic() >= next_byte:
        next_byte = time.monotonic() + trickle
        for s, sent in list(socks.items()):
            try:
                s.send(HELLO[sent % len(HELLO) : sent % len(HELLO) + 1])
                socks[s] = sent + 1
            except OSError:
                drop(s)
print("reopened %d" % reopened, flush=True)
