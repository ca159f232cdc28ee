#!/usr/bin/python3
"""A networked kernel adopted after a gateway restart (--state-dir) gets its egress back
(issue 36): the next gateway opens a new listener on 127.0.0.1:1023 in the kernel's jail and
a proxy with the rules it was created with, so the same context's next fetch from the
loopback test server succeeds and is audited, and what it was never allowed is still refused.

Run in two phases by tests/e2e/e2e_tests.cpp around a SIGKILL of the gateway, with state in
$CALLISTO_E2E_STATE:
  -k before_restart   a networked context fetches from the allowed destination.
  -k after_restart    the same context (adopted, its kernel the same process) fetches again;
                      another port and a host outside the list are refused with their rule.
The servers run with --egress-allow=127.0.0.2:$CALLISTO_E2E_EGRESS_PORT and
--audit-log=$CALLISTO_E2E_AUDIT_LOG. Everything here talks to loopback only; the refused name
(example.org) is refused before any lookup.
"""

import http.server
import json
import os
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    api, check, check_eq, create_context, delete_context, run_code_ok, run_tests, test,
)

HOST = "127.0.0.2"
PORT = int(os.environ["CALLISTO_E2E_EGRESS_PORT"])
OTHER_PORT = int(os.environ["CALLISTO_E2E_EGRESS_OTHER_PORT"])
AUDIT_LOG = os.environ["CALLISTO_E2E_AUDIT_LOG"]
STATE = os.environ["CALLISTO_E2E_STATE"]
ALLOW = [f"{HOST}:{PORT}"]
GREETING = "hello from the allowed destination"


class handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = (GREETING + " " + urllib.parse.urlsplit(self.path).query).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def start_servers():
    for port in (PORT, OTHER_PORT):
        s = http.server.ThreadingHTTPServer((HOST, port), handler)
        threading.Thread(target=s.serve_forever, daemon=True).start()


def stdout_of(ctx_id, code, timeout=60):
    """What `code` printed, run in the context with a deadline of `timeout` seconds; it must run
    ok."""
    return run_code_ok(ctx_id, code, timeout=timeout).get("stdout", "")


def fetch(ctx_id, tag):
    return stdout_of(ctx_id, "import urllib.request\n"
                     f"print(urllib.request.urlopen('http://{HOST}:{PORT}/hello?{tag}', timeout=20)"
                     ".read().decode())").strip()


def egress_lines(kernel_id):
    with open(AUDIT_LOG) as f:
        lines = [json.loads(line) for line in f if '"egress"' in line]
    return [e for e in lines if e.get("event") == "egress" and e["kernel"] == kernel_id]


@test
def test_before_restart():
    ctx = create_context({"network": {"allow": ALLOW}})
    check_eq(fetch(ctx["id"], "before"), GREETING + " before", "the fetch before the restart")
    pid = api("GET", "/api/kernels/" + ctx["kernel_id"]).json()["callisto"].get("pid")
    with open(STATE, "w") as f:
        json.dump({"context": ctx["id"], "kernel": ctx["kernel_id"], "pid": pid}, f)


@test
def test_after_restart():
    with open(STATE) as f:
        s = json.load(f)
    deadline = time.monotonic() + 60
    got = api("GET", "/v1/contexts/" + s["context"])
    while got.status != 200 and time.monotonic() < deadline:
        time.sleep(0.5)
        got = api("GET", "/v1/contexts/" + s["context"])
    check_eq(got.status, 200, "the context is back after the restart")
    check_eq(got.json()["kernel_id"], s["kernel"], "on the same kernel")
    check_eq(got.json()["network"], {"allow": ALLOW}, "its network shown as before")
    model = api("GET", "/api/kernels/" + s["kernel"]).json()
    check_eq(model["callisto"].get("pid"), s["pid"], "the same process: adopted, not restarted")

    before = len(egress_lines(s["kernel"]))
    check_eq(fetch(s["context"], "after"), GREETING + " after",
             "the same context's fetch after the restart")
    # The proxy records a connection when it ends, just after the answer reached the kernel.
    deadline = time.monotonic() + 10
    lines = egress_lines(s["kernel"])[before:]
    while not lines and time.monotonic() < deadline:
        time.sleep(0.2)
        lines = egress_lines(s["kernel"])[before:]
    check(any(e["decision"] == "allowed" and e["host"] == HOST and e["port"] == PORT and
              e["bytes_down"] > 0 for e in lines),
          "the fetch after the restart is in the audit log, under the kernel's id", lines)

    # What it was never allowed is still refused, with the rule: its proxy has the same rules.
    out = stdout_of(s["context"], "import urllib.request, urllib.error\n"
                    "for url in ['http://%s:%d/hello' % ('" + HOST + "', " + str(OTHER_PORT) + "), "
                    "'http://example.org/']:\n"
                    "    try:\n"
                    "        urllib.request.urlopen(url, timeout=20)\n"
                    "        print('reached', url)\n"
                    "    except urllib.error.HTTPError as e:\n"
                    "        print(e.code, e.read().decode(errors='replace').strip()[:200])\n")
    answers = out.strip().splitlines()
    check(len(answers) == 2, "two answers", out)
    check(answers[0].startswith("403") and "port %d is not allowed" % OTHER_PORT in answers[0],
          "another port of the allowed host is refused with its rule", answers[0])
    check(answers[1].startswith("403") and "not in the allowlist" in answers[1],
          "a host outside the list is refused with its rule", answers[1])

    check_eq(delete_context(s["context"]), 204, "the context is deleted")


def setup_module():
    start_servers()


if __name__ == "__main__":
    sys.exit(run_tests())
