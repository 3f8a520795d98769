#!/usr/bin/env python3
"""lint.openapi: docs/openapi.json cannot drift from the server or docs/api.md.

  check_openapi.py SOURCE_DIR [--params VMM] [--live SOCKET]

Checks that
  - the paths and methods of docs/openapi.json are exactly the route table
    of frontend/api_routes.c;
  - the Vm, Progress and MigrateRequest schemas name exactly the fields of
    docs/api.md's tables for GET /api/v1/vm, the progress object and
    PUT /api/v1/vm/migrate;
  - with --params, MigrateRequest is the parameter table of that vmm binary
    (`vmm migrate --list-params`): the same members, types, ranges, names
    and defaults;
  - with --live, a running VM's replies fit the schemas: every member of
    GET /api/v1/vm and of its progress object is documented with its type,
    every required one is there, and an unknown path and a wrong method get
    the documented JSON error.
"""
import json
import re
import socket
import subprocess
import sys


def fail(msg):
    sys.exit("FAIL: " + msg)


def routes(src):
    text = open(src + "/frontend/api_routes.c").read()
    found = set(re.findall(r'\{"(/api/[^"]+)", EVHTTP_REQ_([A-Z]+),', text))
    if not found:
        fail("no route table in api_routes.c")
    return {(p, m.lower()) for p, m in found}


def md_fields(md, heading):
    i = md.index(heading)
    names, started = [], False
    for line in md[i:].split("\n")[1:]:
        if line.startswith("|"):
            started = True
            m = re.match(r"\|\s*`([a-z_0-9]+)`\s*\|", line)
            if m:
                names.append(m.group(1))
        elif started or line.startswith("#"):
            break
    if not names:
        fail("no field table after %r in docs/api.md" % heading)
    return names


def http(sock, method, path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock)
    s.sendall(("%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % (method, path)).encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    return status, json.loads(body) if body.strip() else None


def check_types(obj, schema, what):
    props = schema["properties"]
    for k, v in obj.items():
        if k not in props:
            fail("%s: member %r is not in docs/openapi.json" % (what, k))
        p = props[k]
        t = p.get("type")
        if v is None:
            if not p.get("nullable"):
                fail("%s: %r is null, not nullable in the schema" % (what, k))
        elif t == "integer" and not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
            fail("%s: %r = %r is not a non-negative integer" % (what, k, v))
        elif t == "string" and not isinstance(v, str):
            fail("%s: %r = %r is not a string" % (what, k, v))
        elif t == "boolean" and not isinstance(v, bool):
            fail("%s: %r = %r is not a boolean" % (what, k, v))
        elif t == "object" and not isinstance(v, dict):
            fail("%s: %r is not an object" % (what, k))
    for k in schema.get("required", []):
        if k not in obj:
            fail("%s: required member %r is missing" % (what, k))


def check_params(vmm, schema):
    """MigrateRequest against the parameter table (`vmm migrate --list-params`):
    the same members, each with the table's type, range, names and default."""
    table = json.loads(subprocess.check_output([vmm, "migrate", "--list-params"]))
    props = schema["properties"]
    names = {p["name"] for p in table} | {"to"}
    if names != set(props):
        fail("MigrateRequest and the parameter table differ: only in openapi.json %s, only in "
             "the table %s" % (sorted(set(props) - names), sorted(names - set(props))))
    for p in table:
        s = props[p["name"]]
        for key in ("type", "minimum", "maximum", "enum", "default"):
            want = p.get(key)
            if s.get(key) != want:
                fail("MigrateRequest.%s: %s is %r in openapi.json, %r in the table"
                     % (p["name"], key, s.get(key), want))


def main():
    src = sys.argv[1]
    api = json.load(open(src + "/docs/openapi.json"))
    doc_routes = {(p, m) for p, ops in api["paths"].items() for m in ops}
    code_routes = routes(src)
    if doc_routes != code_routes:
        fail("docs/openapi.json and api_routes.c differ: only in the doc %s, only in the code %s"
             % (sorted(doc_routes - code_routes), sorted(code_routes - doc_routes)))
    sch = api["components"]["schemas"]
    md = open(src + "/docs/api.md").read()
    for name, heading in (("Vm", "### GET /api/v1/vm\n"),
                          ("Progress", "### GET /api/v1/vm/migrate: the progress object"),
                          ("MigrateRequest", "### PUT /api/v1/vm/migrate\n")):
        a, b = set(sch[name]["properties"]), set(md_fields(md, heading))
        if a != b:
            fail("schema %s and docs/api.md differ: only in openapi.json %s, only in api.md %s"
                 % (name, sorted(a - b), sorted(b - a)))
    if "--params" in sys.argv:
        check_params(sys.argv[sys.argv.index("--params") + 1], sch["MigrateRequest"])
    if "--live" in sys.argv:
        sock = sys.argv[sys.argv.index("--live") + 1]
        status, vm = http(sock, "GET", "/api/v1/vm")
        if status != 200:
            fail("GET /api/v1/vm: HTTP %d" % status)
        check_types(vm, sch["Vm"], "GET /api/v1/vm")
        check_types(vm["migration"], sch["Progress"], "the progress object")
        status, prog = http(sock, "GET", "/api/v1/vm/migrate")
        check_types(prog, sch["Progress"], "GET /api/v1/vm/migrate")
        for method, path, want in (("GET", "/api/v1/nosuchthing", 404), ("DELETE", "/api/v1/vm", 405)):
            status, body = http(sock, method, path)
            if status != want or not isinstance(body, dict) or not isinstance(body.get("error"), str):
                fail("%s %s: HTTP %d %r, not %d with a JSON error" % (method, path, status, body, want))
    print("PASS")


main()
