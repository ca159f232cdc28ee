#!/usr/bin/python3
"""Egress by allowlist (issue 36), with real kernels: a loopback HTTP server made an allowed
destination by an admin's exact-address rule is reached from a sandboxed kernel by urllib,
requests, curl, pip and R through the gateway's egress proxy; every other destination is
refused with a 403 naming the rule; a context that asks for no network has none.

The destination is 127.0.0.2, not 127.0.0.1: the kernel's own loopback (127.0.0.1, localhost,
::1) is in its NO_PROXY, for servers the code starts itself. Everything here talks to loopback
only; a refused name (example.org) is refused before any lookup.

The server under test runs with
  --egress-allow=127.0.0.2:$CALLISTO_E2E_EGRESS_PORT,localhost:$CALLISTO_E2E_EGRESS_PORT
and, when CALLISTO_E2E_AUDIT_LOG names its --audit-log, the audit lines are checked too.

  CALLISTO_URL=… CALLISTO_TOKEN=… CALLISTO_E2E_EGRESS_PORT=P [CALLISTO_E2E_EGRESS_OTHER_PORT=Q]
      [CALLISTO_E2E_AUDIT_LOG=F] /usr/bin/python3 test_egress.py [-k NAME]
"""

import base64
import hashlib
import http.server
import io
import json
import os
import re
import sys
import threading
import time
import urllib.parse
import zipfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    BASE_URL, api, check, check_eq, create_context, delete_context, kernel_ids, run_code,
    run_code_ok, run_tests, test,
)

TIMEOUT = 120
HOST = "127.0.0.2"
PORT = int(os.environ.get("CALLISTO_E2E_EGRESS_PORT", "19240"))
# Served too, never allowed.
OTHER_PORT = int(os.environ.get("CALLISTO_E2E_EGRESS_OTHER_PORT", str(PORT + 1)))
AUDIT_LOG = os.environ.get("CALLISTO_E2E_AUDIT_LOG", "")
GATEWAY_PORT = urllib.parse.urlsplit(BASE_URL).port
ALLOW = [f"{HOST}:{PORT}", f"localhost:{PORT}"]
GREETING = "hello from the allowed destination"


def wheel():
    """A tiny pure-Python wheel, egressdemo 1.0, for pip to download from the local index."""
    files = {
        "egressdemo/__init__.py": b"VALUE = 42\n",
        "egressdemo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: egressdemo\n"
        b"Version: 1.0\n",
        "egressdemo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(data)}\n"
    record += "egressdemo-1.0.dist-info/RECORD,,\n"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("egressdemo-1.0.dist-info/RECORD", record)
    return out.getvalue()


WHEEL = wheel()
WHEEL_NAME = "egressdemo-1.0-py3-none-any.whl"


class handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def send(self, status, body, ctype="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/hello":
            self.send(200, GREETING.encode())
        elif path in ("/simple/egressdemo/", "/simple/egressdemo"):
            sha = hashlib.sha256(WHEEL).hexdigest()
            page = (f'<html><body><a href="/files/{WHEEL_NAME}#sha256={sha}">{WHEEL_NAME}</a>'
                    "</body></html>")
            self.send(200, page.encode(), "text/html")
        elif path == "/files/" + WHEEL_NAME:
            self.send(200, WHEEL, "application/octet-stream")
        else:
            self.send(404, b"not here\n")

    def do_POST(self):
        # Counted as it comes, never held: the streamed uploads are 50 MiB.
        got = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                while size:
                    piece = self.rfile.read(min(size, 1 << 20))
                    got += len(piece)
                    size -= len(piece)
                self.rfile.readline()
        else:
            left = int(self.headers.get("Content-Length", "0"))
            while left:
                piece = self.rfile.read(min(left, 1 << 20))
                if not piece:
                    break
                got += len(piece)
                left -= len(piece)
        self.send(200, b"got " + str(got).encode())


servers = []


def start_servers():
    for port in (PORT, OTHER_PORT):
        s = http.server.ThreadingHTTPServer((HOST, port), handler)
        threading.Thread(target=s.serve_forever, daemon=True).start()
        servers.append(s)


def stdout_of(ctx, code, timeout=60):
    """What `code` printed, run in `ctx` with a deadline of `timeout` seconds; it must run ok."""
    return run_code_ok(ctx, code, timeout=timeout).get("stdout", "")


_context = None


def networked():
    """One context that may reach the allowed destination, shared by the tests."""
    global _context
    if _context is None:
        _context = create_context({"network": {"allow": ALLOW}})
    return _context


# What a kernel sends the proxy itself (no client library): one request, the answer back.
RAW = r'''
import socket
def raw(request, timeout=20):
    s = socket.create_connection(("127.0.0.1", 1023), timeout=timeout)
    s.sendall(request.encode())
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    return out.decode(errors="replace")
'''


def through_proxy(ctx, request):
    """The proxy's whole answer to `request`, sent by the kernel over a plain socket."""
    out = stdout_of(ctx, RAW + f"print(raw({request!r}), end='')")
    return out


def check_refused(ctx, request, rule_part, what):
    answer = through_proxy(ctx, request)
    status_line = answer.split("\r\n", 1)[0]
    check(status_line.startswith("HTTP/1.1 403"), what + ": refused with a 403", answer[:400])
    check(rule_part in answer, what + ": the 403 names " + repr(rule_part), answer[:400])


@test
def test_context_model_shows_its_network():
    ctx = networked()
    check_eq(ctx["network"], {"allow": ALLOW}, "POST's answer shows network.allow")
    got = api("GET", "/v1/contexts/" + ctx["id"]).json()
    check_eq(got["network"], {"allow": ALLOW}, "GET shows network.allow")
    listed = [c for c in api("GET", "/v1/contexts").json() if c["id"] == ctx["id"]]
    check_eq(listed[0]["network"], {"allow": ALLOW}, "the list shows network.allow")


@test
def test_proxy_variables_are_set_in_a_networked_kernel():
    out = stdout_of(networked(), "import os, json; print(json.dumps({k: os.environ.get(k) for k "
                    "in ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'NO_PROXY']}))")
    env = json.loads(out)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        check_eq(env[name], "http://127.0.0.1:1023", name)
    check_eq(env["NO_PROXY"], "localhost,127.0.0.1,::1", "NO_PROXY")


@test
def test_urllib_reaches_the_allowed_destination():
    out = stdout_of(networked(), "import urllib.request\n"
                    f"print(urllib.request.urlopen('http://{HOST}:{PORT}/hello', timeout=20)"
                    ".read().decode())")
    check_eq(out.strip(), GREETING, "urllib's GET through the proxy")


@test
def test_requests_reaches_the_allowed_destination_get_and_post():
    out = stdout_of(networked(), "import requests\n"
                    f"r = requests.get('http://{HOST}:{PORT}/hello', timeout=20)\n"
                    f"p = requests.post('http://{HOST}:{PORT}/upload', data=b'x' * 100000, "
                    "timeout=20)\n"
                    "print(r.status_code, r.text, '|', p.text)")
    check_eq(out.strip(), f"200 {GREETING} | got 100000", "requests' GET and POST")


def gateway_rss_kib():
    """The gateway's resident set in KiB, when CALLISTO_E2E_GATEWAY_PID names it."""
    pid = os.environ.get("CALLISTO_E2E_GATEWAY_PID")
    if not pid:
        return None
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


@test
def test_a_50_mib_upload_is_streamed_whole_with_a_length_and_chunked():
    # The proxy streams a plain-HTTP request body (it held it whole, up to 1 MiB: a 413).
    before = gateway_rss_kib()
    out = stdout_of(networked(), "import requests\n"
                    "size = 50 << 20\n"
                    f"a = requests.post('http://{HOST}:{PORT}/up', data=b'x' * size, timeout=120)\n"
                    "def pieces():\n"
                    "    for _ in range(50):\n"
                    "        yield b'x' * (1 << 20)\n"
                    f"b = requests.post('http://{HOST}:{PORT}/up', data=pieces(), timeout=120)\n"
                    "print(a.status_code, a.text, '|', b.status_code, b.text)", timeout=240)
    size = 50 << 20
    check_eq(out.strip(), f"200 got {size} | 200 got {size}",
             "50 MiB with Content-Length and 50 MiB chunked arrived whole")
    after = gateway_rss_kib()
    if before is not None and after is not None:
        print(f"  gateway RSS {before} KiB before, {after} KiB after the two uploads")


@test
def test_curl_from_a_subprocess_reaches_the_allowed_destination():
    out = stdout_of(networked(), "import subprocess\n"
                    f"print(subprocess.run(['curl', '-sS', '--max-time', '20', "
                    f"'http://{HOST}:{PORT}/hello'], capture_output=True, text=True, "
                    "check=True).stdout)")
    check_eq(out.strip(), GREETING, "curl (http_proxy from the environment)")


# curl from bash: a 2 MiB POST goes with `Expect: 100-continue`, and curl waits for the 100
# before its body. The proxy dropped the expectation and waited for the body: every such upload
# stalled for curl's wait (1 s by default; 20 s here, so a generous bound tells the two apart).
CURL_POST = (
    "head -c 2097152 /dev/zero | tr '\\0' x > /tmp/two-mib && "
    "curl -sS -v --expect100-timeout 20 --max-time 60 -X POST --data-binary @/tmp/two-mib "
    "-w '\\n%{{http_code}} %{{size_upload}} %{{time_total}}\\n' http://{host}:{port}/up "
    "2>/tmp/curl.err; grep -c '^< HTTP/1.1 100 Continue' /tmp/curl.err")


def curl_post(ctx, port):
    """curl's answer body, status, bytes sent, seconds taken, and how many 100s it saw."""
    out = stdout_of(ctx, "import subprocess\n"
                    "r = subprocess.run(['bash', '-c', "
                    f"{CURL_POST.format(host=HOST, port=port)!r}], "
                    "capture_output=True, text=True)\n"
                    "print(r.stdout, end='')", timeout=90)
    lines = out.strip().splitlines()
    check(len(lines) >= 3, "curl printed its answer, figures and 100 count", out)
    status, uploaded, seconds = lines[-2].split()
    return "\n".join(lines[:-2]), int(status), int(uploaded), float(seconds), int(lines[-1])


@test
def test_curl_posts_2_mib_with_expect_100_continue_without_a_stall():
    body, status, uploaded, seconds, continues = curl_post(networked(), PORT)
    check_eq((status, body), (200, f"got {2 << 20}"), "the 2 MiB arrived whole")
    check_eq(uploaded, 2 << 20, "curl sent the whole body")
    check_eq(continues, 1, "curl was answered 100 Continue")
    check(seconds < 10, "no wait for the 100 (curl would have waited 20 s)", seconds)
    print(f"  2 MiB POST through the proxy in {seconds:.3f} s")
    # Refused: the 403 is the final answer, and curl never sends the body.
    body, status, uploaded, seconds, continues = curl_post(networked(), OTHER_PORT)
    check_eq(status, 403, "a port not allowed is refused")
    check(f"port {OTHER_PORT} is not allowed" in body, "the 403 names the rule", body)
    check_eq((uploaded, continues), (0, 0), "no 100, and the body never sent")
    check(seconds < 10, "the refusal came at once (curl would have waited 20 s)", seconds)


@test
def test_a_connect_tunnel_carries_bytes_both_ways():
    # What HTTPS does: CONNECT, then the client's bytes go through untouched (here plain
    # HTTP inside the tunnel, as the destination speaks no TLS).
    answer = through_proxy(networked(), f"CONNECT {HOST}:{PORT} HTTP/1.1\r\nHost: {HOST}:{PORT}"
                           f"\r\n\r\nGET /hello HTTP/1.0\r\nHost: {HOST}\r\n\r\n")
    check(answer.startswith("HTTP/1.1 200"), "CONNECT established", answer[:300])
    check(GREETING in answer, "the destination's answer came back through the tunnel",
          answer[:500])


@test
def test_pip_downloads_from_a_local_index():
    out = stdout_of(networked(), "import subprocess, sys, os\n"
                    "r = subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps', "
                    "'--disable-pip-version-check', '--no-cache-dir', "
                    f"'--index-url', 'http://{HOST}:{PORT}/simple/', "
                    f"'--trusted-host', '{HOST}', '-d', '/tmp/dl', 'egressdemo'], "
                    "capture_output=True, text=True)\n"
                    "print(r.returncode, sorted(os.listdir('/tmp/dl')) if os.path.isdir('/tmp/dl') "
                    "else [], r.stderr[-500:])", timeout=120)
    check(out.startswith(f"0 ['{WHEEL_NAME}']"), "pip download fetched the wheel", out)


@test
@pytest.mark.context({"language": "r", "network": {"allow": ALLOW}})
def test_r_download_file_reaches_the_allowed_destination(context):
    out = run_code(context, f"f <- tempfile(); download.file('http://{HOST}:{PORT}/hello', f, "
                            "quiet = TRUE); cat(readLines(f, warn = FALSE))", timeout=60)
    check(out["status"] == "ok", "R ran", out.get("error"), out.get("stderr"))
    check_eq(out.get("stdout", "").strip(), GREETING, "R's download.file through the proxy")


@test
@pytest.mark.context({"network": {"allow": ALLOW}})
def test_a_restarted_kernel_gets_a_new_listener(context):
    fetch = ("import urllib.request\n"
             f"print(urllib.request.urlopen('http://{HOST}:{PORT}/hello', timeout=20)"
             ".read().decode())")
    check_eq(stdout_of(context, fetch).strip(), GREETING, "before the restart")
    r = api("POST", f"/v1/contexts/{context['id']}/restart", timeout=TIMEOUT)
    check_eq(r.status, 200, f"restart: {r.body[:300]!r}")
    check_eq(stdout_of(context, fetch).strip(), GREETING, "after the restart (a new namespace)")


@test
def test_each_kernel_is_served_as_itself():
    # Two networked kernels: each one's connections are recorded under its own id, whatever
    # it sends; the identity is the listener's, in the kernel's own namespace.
    if not AUDIT_LOG:
        print("  no CALLISTO_E2E_AUDIT_LOG: not checked")
        return
    other = create_context({"network": {"allow": [f"{HOST}:{PORT}"]}})
    try:
        for ctx, path in ((networked(), "/hello?from=first"), (other, "/hello?from=second")):
            stdout_of(ctx, "import urllib.request\n"
                      f"urllib.request.urlopen('http://{HOST}:{PORT}{path}', timeout=20).read()")
        with open(AUDIT_LOG) as f:
            egress = [json.loads(line) for line in f if '"event":"egress"' in line]
        kernels = {e["kernel"] for e in egress}
        check(networked()["kernel_id"] in kernels and other["kernel_id"] in kernels,
              "each kernel's connections under its own id", kernels)
        # The second may not reach localhost:PORT (its own list lacks it): its proxy is not the
        # first's.
        check_refused(other, f"CONNECT localhost:{PORT} HTTP/1.1\r\nHost: localhost:{PORT}"
                      "\r\n\r\n", "not in the allowlist", "the second kernel's own list")
    finally:
        delete_context(other["id"])


@test
def test_a_networked_kernel_is_never_kept_for_another_context():
    # Under reuse a finished context's kernel is reset and kept for its owner's next context;
    # a networked one must go instead, or a context that asked for no network would get it.
    ctx = create_context({"network": {"allow": ALLOW}, "policy": "reuse"})
    kid = ctx["kernel_id"]
    delete_context(ctx["id"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and kid in kernel_ids():
        time.sleep(0.2)
    after = create_context({"policy": "reuse"})
    try:
        check(after["kernel_id"] != kid, "the next context got another kernel", kid)
        check_eq(after["network"], {"allow": []}, "and no network")
        out = stdout_of(after, "import os; print(sorted(k for k in os.environ "
                        "if 'proxy' in k.lower()))")
        check_eq(out.strip(), "[]", "no proxy variables in the next context's kernel")
    finally:
        delete_context(after["id"])


@test
def test_a_host_outside_the_list_is_refused():
    check_refused(networked(), "CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n",
                  "not in the allowlist", "example.org")
    # And as an ordinary client sees it: an error, not a hang.
    out = stdout_of(networked(), "import urllib.request, urllib.error\n"
                    "try:\n"
                    "    urllib.request.urlopen('http://example.org/', timeout=20)\n"
                    "except urllib.error.HTTPError as e:\n"
                    "    print(e.code, e.read().decode())\n")
    check(out.startswith("403") and "not in the allowlist" in out, "urllib gets the 403", out)


@test
def test_the_gateways_own_port_is_refused():
    check_refused(networked(), f"GET http://127.0.0.1:{GATEWAY_PORT}/api HTTP/1.1\r\n"
                  f"Host: 127.0.0.1:{GATEWAY_PORT}\r\n\r\n", "the gateway's own endpoint",
                  "the gateway's port")


@test
def test_other_spellings_of_loopback_are_refused():
    for host, rule in (("127.1", "address not written canonically"),
                       ("2130706433", "address not written canonically"),
                       ("0x7f000001", "address not written canonically"),
                       ("0x7f.0.0.2", "address not written canonically"),
                       ("[::ffff:127.0.0.2]", "forbidden address: loopback"),
                       ("[::ffff:127.0.0.1]", "forbidden address: loopback"),
                       (f"{HOST}.", "address not written canonically")):
        check_refused(networked(), f"CONNECT {host}:{PORT} HTTP/1.1\r\nHost: {host}:{PORT}"
                      "\r\n\r\n", rule, host)


@test
def test_a_name_that_resolves_to_a_forbidden_address_is_refused():
    # localhost:PORT is allowed by name; it resolves to 127.0.0.1 (and ::1), for which no
    # exact-address rule exists.
    check_refused(networked(), f"GET http://localhost:{PORT}/hello HTTP/1.1\r\n"
                  f"Host: localhost:{PORT}\r\n\r\n", "forbidden address: loopback", "localhost")


@test
def test_a_port_not_allowed_is_refused():
    check_refused(networked(), f"CONNECT {HOST}:{OTHER_PORT} HTTP/1.1\r\n"
                  f"Host: {HOST}:{OTHER_PORT}\r\n\r\n", f"port {OTHER_PORT} is not allowed",
                  "another port of the allowed address")


@test
def test_a_context_without_network_has_none(context):
    check_eq(context["network"], {"allow": []}, "no network in the model")
    out = stdout_of(context, "import os, socket\n"
                    "print(sorted(k for k in os.environ if 'proxy' in k.lower()))\n"
                    "for addr in [('127.0.0.1', 1023), "
                    f"('{HOST}', {PORT})]:\n"
                    "    try:\n"
                    "        socket.create_connection(addr, timeout=5).close()\n"
                    "        print('reached', addr)\n"
                    "    except OSError as e:\n"
                    "        print('refused', addr)\n")
    lines = out.strip().splitlines()
    check_eq(lines[0], "[]", "no proxy variables")
    check(all(line.startswith("refused") for line in lines[1:]),
          "neither the proxy port nor the destination is reachable", out)


@test
def test_asking_for_more_than_the_ceiling_is_a_403_naming_the_hosts():
    r = api("POST", "/v1/contexts", {"network": {"allow": [f"{HOST}:{PORT}", "pypi.org",
                                                           f"{HOST}:{OTHER_PORT}"]}})
    check_eq(r.status, 403, "beyond --egress-allow")
    message = r.json().get("message", "")
    check("pypi.org" in message and f"{HOST}:{OTHER_PORT}" in message
          and f"{HOST}:{PORT}," not in message, "the 403 names the hosts beyond it", message)
    r = api("POST", "/v1/contexts", {"network": {"allow": ["127.1"]}})
    check_eq(r.status, 400, "a rule not written canonically is a bad request")


@test
def test_metrics_count_connections_by_decision():
    text = api("GET", "/metrics").body.decode()
    for decision in ("allowed", "refused"):
        m = re.search(r'^callisto_egress_connections_total\{decision="%s"\} (\S+)$' % decision,
                      text, re.M)
        check(m and float(m.group(1)) > 0, f"connections {decision} counted", text[-2000:])
    m = re.search(r'^callisto_egress_bytes_total\{decision="allowed",direction="down"\} (\S+)$',
                  text, re.M)
    check(m and float(m.group(1)) > 0, "bytes relayed counted")


@test
def test_audit_log_records_every_attempt():
    if not AUDIT_LOG:
        print("  no CALLISTO_E2E_AUDIT_LOG: not checked")
        return
    with open(AUDIT_LOG) as f:
        lines = [json.loads(line) for line in f if '"egress"' in line]
    egress = [line for line in lines if line.get("event") == "egress"]
    kernel = networked()["kernel_id"]
    allowed = [e for e in egress if e["decision"] == "allowed" and e["kernel"] == kernel]
    refused = [e for e in egress if e["decision"] == "refused" and e["kernel"] == kernel]
    check(allowed and refused, "both decisions recorded", egress[-5:])
    check(any(e["host"] == HOST and e["port"] == PORT and e["bytes_down"] > 0 for e in allowed),
          "an allowed line with host, port and bytes", allowed[-3:])
    check(any(e["host"] == "example.org" and e["rule"] == "not in the allowlist"
              for e in refused), "a refused line naming its rule", refused[-3:])
    check(all(e["user"] and "duration_s" in e and "bytes_up" in e for e in egress),
          "every line has user, duration and bytes")


def setup_module():
    start_servers()


def teardown_module():
    if _context is not None:
        delete_context(_context["id"])


if __name__ == "__main__":
    sys.exit(run_tests())
