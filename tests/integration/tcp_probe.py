#!/usr/bin/env python3
"""tcp_probe.py HOST PORT STOPFILE: one TCP connection held open through
migrations of the server's VM.

Connects (retrying for up to 600 s while the guest's server comes up), then
sends one 16-byte line every 20 ms and reads its echo back, until STOPFILE
exists. Prints "tcp_probe: connected" once, "tcp_probe: N echoes" every
second, and at the end one line: the round trips, the largest gap between
two echoes (what a client of the guest saw of a migration) and the largest
single round trip. Exits 1 if the connection broke or an echo was wrong: a
migration must not be visible to a TCP client as anything but a delay.
"""
import os
import socket
import sys
import time


def main():
    host, port, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    end = time.monotonic() + 600
    while True:
        try:
            s = socket.create_connection((host, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > end:
                print("tcp_probe: could not connect", flush=True)
                return 1
            time.sleep(0.5)
    # A migration's blackout, or postcopy's first faults, may hold an echo
    # for seconds on an emulated host: the timeout is a hang detector only.
    s.settimeout(120)
    print("tcp_probe: connected", flush=True)
    n, last, worst_gap, worst_rtt, next_report = 0, time.monotonic(), 0.0, 0.0, 0
    try:
        while not os.path.exists(stop):
            msg = b"probe %09d\n" % n
            t0 = time.monotonic()
            s.sendall(msg)
            got = b""
            while len(got) < len(msg):
                chunk = s.recv(len(msg) - len(got))
                if not chunk:
                    raise ConnectionError("the server closed the connection")
                got += chunk
            now = time.monotonic()
            if got != msg:
                print(f"tcp_probe: echo {n} wrong: {got!r}", flush=True)
                return 1
            worst_gap = max(worst_gap, now - last)
            worst_rtt = max(worst_rtt, now - t0)
            last = now
            n += 1
            if now >= next_report:
                print(f"tcp_probe: {n} echoes", flush=True)
                next_report = now + 1
            time.sleep(0.02)
    except (OSError, ConnectionError) as e:
        print(f"tcp_probe: connection broke after {n} echoes: {e}", flush=True)
        return 1
    print(
        f"tcp_probe: {n} round trips on one connection, largest gap "
        f"{1000 * worst_gap:.0f} ms, largest round trip {1000 * worst_rtt:.0f} ms",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
