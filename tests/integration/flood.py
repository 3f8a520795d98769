#!/usr/bin/env python3
"""flood.py HOST PORT N SECONDS: N idle TCP connections to HOST:PORT, each
opened again 10 ms after the peer closes it, for SECONDS; prints "open N"
once all N were open at the same time, then "reopened K" at the end.
Never sends a byte: a peer that holds a slot and says nothing."""
import select
import socket
import sys
import time

host, port, n, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
end = time.monotonic() + secs
socks, reopened, announced = set(), 0, False


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


while time.monotonic() < end:
    while len(socks) < n and time.monotonic() < end:
        s = connect()
        if s is None:
            time.sleep(0.01)
            continue
        socks.add(s)
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
            socks.discard(s)
            s.close()
            time.sleep(0.01)
print("reopened %d" % reopened, flush=True)
