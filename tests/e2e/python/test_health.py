#!/usr/bin/python3
"""Liveness and readiness probes, and the drain at SIGTERM (the server runs with
--drain-seconds=4): /healthz answers while the process lives, /readyz turns 503 (draining)
at SIGTERM while requests are still served, then the server stops. HEAD is answered as GET
without the body (the server serves its web UI: a binary of the build tree finds web/).

  CALLISTO_URL=... CALLISTO_TOKEN=... CALLISTO_PID=<gateway pid> /usr/bin/python3 test_health.py
"""

import os
import signal
import socket
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (BASE_URL, HTTP_TIMEOUT, api, callisto_only, check,  # noqa: E402
                        check_documented, check_eq, poll, run_tests)

PID = int(os.environ.get("CALLISTO_PID", "0"))


def raw_exchange(data):
    """Sends raw bytes on one connection and reads until the server closes it."""
    url = urllib.parse.urlsplit(BASE_URL)
    with socket.create_connection((url.hostname, url.port), timeout=HTTP_TIMEOUT) as sock:
        sock.sendall(data)
        out = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return out
            out += chunk


def answers(data):
    """Splits pipelined answers to HEAD, HEAD, ..., GET: (status, headers, body) each; the
    HEAD answers are read without a body, as a client must, the last by its Content-Length."""
    out = []
    while data:
        head, _, data = data.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = {k.strip().lower(): v.strip()
                   for k, v in (line.split(":", 1) for line in lines[1:])}
        out.append((int(lines[0].split()[1]), headers, b""))
        if not data.startswith(b"HTTP/1.1 "):  # the last, GET's: its body
            length = int(headers["content-length"])
            out[-1] = (out[-1][0], headers, data[:length])
            data = data[length:]
    return out


@callisto_only
def test_head_is_answered_as_get_without_a_body():
    # Pipelined on one connection: were a HEAD answer to carry a body, the next answer would
    # not start right after its header.
    poll(lambda: api("GET", "/readyz", auth=None).status == 200, 60, what="ready")
    for path, status in (("/healthz", 200), ("/readyz", 200), ("/", 200), ("/index.html", 200),
                         ("/no-such-file.js", 404), ("/api", 200)):
        request = (f"HEAD {path} HTTP/1.1\r\nHost: x\r\n\r\n" * 2 +
                   f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").encode()
        got = answers(raw_exchange(request))
        check_eq(len(got), 3, f"three answers for {path}: {got!r}"[:300])
        (h1, hh1, b1), (h2, _, _), (g, gh, body) = got
        check_eq(h1, g, f"HEAD {path} has GET's status")
        check_eq(h2, g, f"the second HEAD {path} too")
        check_eq(g, status, f"GET {path}")
        check_eq(b1, b"", f"HEAD {path} has no body")
        check_eq(hh1.get("content-length"), str(len(body)), f"HEAD {path}: GET's Content-Length")
        check_eq(hh1.get("content-type"), gh.get("content-type"), f"HEAD {path}: its type")
    # A WebSocket route is not answered to HEAD.
    r = api("HEAD", "/v1/contexts/0123456789abcdef0123456789abcdef/events")
    check_eq(r.status, 405, "HEAD on the events WebSocket")
    check_eq(r.headers.get("allow"), "GET", "Allow")


@callisto_only
def test_probes_need_no_token_and_readiness_drains_at_sigterm():
    r = api("GET", "/healthz", auth=None)
    check_eq(r.status, 200, "healthz")
    check_eq(r.json(), {"status": "ok"}, "healthz body")
    check_documented("GET", "/healthz", r)
    # Ready once the warm pool has been full once.
    poll(lambda: api("GET", "/readyz", auth=None).status == 200, 60, what="ready")
    r = api("GET", "/readyz", auth=None)
    check_eq(r.json()["checks"]["warm_pool"], "filled", "pool filled")
    check_eq(r.json()["checks"]["draining"], False, "not draining")
    check_documented("GET", "/readyz", r)

    os.kill(PID, signal.SIGTERM)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        r = api("GET", "/readyz", auth=None)
        if r.status == 503:
            break
        time.sleep(0.1)
    check_eq(r.status, 503, "readyz while draining")
    check_eq(r.json()["checks"]["draining"], True, "says draining")
    check_documented("GET", "/readyz", r)
    check_eq(api("GET", "/healthz", auth=None).status, 200, "still alive while draining")
    check_eq(api("GET", "/api/kernels").status, 200, "still serving while draining")

    # Then it stops by itself, after the drain.
    def gone():
        try:
            os.kill(PID, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{PID}/stat") as f:
            return f.read().split()[2] == "Z"
    poll(gone, 30, what="the server stopped after the drain")


if __name__ == "__main__":
    sys.exit(run_tests())
