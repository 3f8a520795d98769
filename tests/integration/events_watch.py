#!/usr/bin/env python3
# Watchers of GET /api/v1/vm/events that curl cannot play, for
# migrate_events.sh:
#   events_watch.py hold N SOCKET    open N streams, read each one's first
#                                    line, print "ready", keep them open
#                                    until killed
#   events_watch.py noread SOCKET    open one stream and never read it
#   events_watch.py junk MIB SOCKET  open one stream, read its first line,
#                                    then send up to MIB MiB on it for 5 s
#                                    and print "accepted BYTES": what the
#                                    server took in (it should stop reading)
import socket
import sys
import time

REQ = b"GET /api/v1/vm/events HTTP/1.1\r\nHost: x\r\n\r\n"


def stream(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(REQ)
    return s


def first_line(s):
    data = b""
    s.settimeout(30)
    while b"\n{" not in data and b'"type"' not in data:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("stream closed before its first line: %r" % data[:200])
        data += chunk
    if not data.startswith(b"HTTP/1.1 200"):
        sys.exit("not a stream: %r" % data[:200])


def junk(mib, path):
    s = stream(path)
    first_line(s)
    s.settimeout(5)
    block = b"x" * 65536
    sent = 0
    try:
        while sent < mib << 20:
            sent += s.send(block)
    except (socket.timeout, BlockingIOError):
        pass
    print("accepted %d" % sent, flush=True)


def main():
    if sys.argv[1] == "junk":
        junk(int(sys.argv[2]), sys.argv[3])
        return
    if sys.argv[1] == "hold":
        conns = [stream(sys.argv[3]) for _ in range(int(sys.argv[2]))]
        for c in conns:
            first_line(c)
    else:
        conns = [stream(sys.argv[2])]
        # the smallest receive buffer: unread lines back up on the server
        conns[0].setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
    print("ready", flush=True)
    while True:
        time.sleep(60)


main()
