#!/usr/bin/env python3
# A failed target's API as its clients see it, for target_failed.sh:
#   target_api.py watch SOCKET OUT     GET /api/v1/vm/events: each JSON line
#                                      into OUT as it comes, then "closed"
#                                      on stdout when the stream ends
#   target_api.py get SOCKET PATH OUT  GET PATH: prints "sent" once the
#                                      request is in the socket (the server
#                                      may be stopped), then the reply's
#                                      status and body into OUT
#   target_api.py put SOCKET PATH OUT  the same with PUT (no body)
#   target_api.py events OUT REGEX WHY checks a watch's lines: a waiting
#                                      target first, never "none", and last
#                                      a "failed" line whose error matches
#                                      REGEX and is WHY (the target's log
#                                      line, which may be longer)
#   target_api.py reply OUT REGEX WHY  checks a get's reply: 200, "failed",
#                                      an error as above
import json
import re
import socket
import sys


def connect(path, req):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(120)
    s.connect(path)
    s.sendall(req)
    return s


def watch(path, out):
    s = connect(path, b"GET /api/v1/vm/events HTTP/1.1\r\nHost: x\r\n\r\n")
    buf = b""
    with open(out, "w") as f:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
            # Chunked framing around whole lines: keep the JSON ones.
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.startswith(b"{"):
                    f.write(line.decode() + "\n")
                    f.flush()
    print("closed", flush=True)


def request(method, path, what, out):
    s = connect(path, method.encode() + b" " + what.encode() +
                b" HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    print("sent", flush=True)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    with open(out, "w") as f:
        f.write(head.split(b"\r\n", 1)[0].decode() + "\n" + body.decode() + "\n")


def bad(why, text):
    sys.exit("%s\n--- seen:\n%s" % (why, text))


def failed_ok(j, regex, why, text):
    err = j.get("error") or ""
    if j.get("state") != "failed":
        bad('state %r, expected "failed"' % j.get("state"), text)
    if not err or not re.search(regex, err):
        bad("error %r does not match /%s/" % (err, regex), text)
    if not why.startswith(err) or len(err) < min(len(why), 255):
        bad("error %r is not the target's reason %r" % (err, why), text)


def events(out, regex, why):
    text = open(out).read()
    lines = [json.loads(l) for l in text.splitlines()]
    if not lines or lines[0].get("vm_state") != "waiting":
        bad("the stream did not start with the waiting target", text)
    for j in lines:
        if j.get("state") == "none" or j.get("vm_state") == "none":
            bad('a line says "none"', text)
    last = lines[-1]
    if last.get("type") != "failed" or last.get("vm_state") != "failed":
        bad("the last line is not the target's failure", text)
    failed_ok(last, regex, why, text)
    if sum(1 for j in lines if j.get("type") == "failed") != 1:
        bad("not exactly one failed line", text)
    print("events: %s" % " ".join(j["vm_state"] for j in lines))


def reply(out, regex, why):
    text = open(out).read()
    status, _, body = text.partition("\n")
    if " 200 " not in status + " ":
        bad("not 200", text)
    failed_ok(json.loads(body), regex, why, text)
    print("GET: %s" % body.strip()[:200])


def main():
    cmd = sys.argv[1]
    if cmd == "watch":
        watch(sys.argv[2], sys.argv[3])
    elif cmd in ("get", "put"):
        request(cmd.upper(), sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "events":
        events(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "reply":
        reply(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit("usage: see the head of " + sys.argv[0])


if __name__ == "__main__":
    main()
