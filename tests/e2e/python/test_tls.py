#!/usr/bin/python3
"""TLS: HTTPS and WSS with the server's certificate (--certfile, --keyfile), TLS 1.2 at least,
plain HTTP on the TLS port answered in plain text, SIGHUP reloading the certificate without
dropping open connections, and mutual TLS (--client-ca).

  test_tls.py --make-certs DIR      writes a CA, two server certificates and a client one
  CALLISTO_URL=https://... CALLISTO_TOKEN=... CALLISTO_CA=DIR/ca.pem \\
      CALLISTO_TLS_DIR=DIR CALLISTO_PID=... test_tls.py [-k NAME]
"""

import errno
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (BASE_URL, TOKEN, KernelWS, api, callisto_only, check, check_eq,  # noqa: E402
                        kernel, poll, raw_websocket_upgrade, run_tests, tls_context)

URL = urllib.parse.urlsplit(BASE_URL)
TLS_DIR = os.environ.get("CALLISTO_TLS_DIR", "")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=120)


def make_certs(d):
    """A throwaway CA; server.pem/key and server2.pem/key for 127.0.0.1 (the second one for the
    reload); client.pem, a client certificate and its key in one file."""
    os.makedirs(d, exist_ok=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.pem", "-days", "2", "-subj", "/CN=callisto-test-ca", cwd=d)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    with open(os.path.join(d, "client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    for name, subject, ext in (("server", "/CN=127.0.0.1", "server.ext"),
                               ("server2", "/CN=127.0.0.1", "server.ext"),
                               ("client", "/CN=ana", "client.ext")):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
                f"{name}.csr", "-subj", subject, cwd=d)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", ext, cwd=d)
    with open(os.path.join(d, "client-both.pem"), "w") as out:
        for part in ("client.pem", "client.key"):
            with open(os.path.join(d, part)) as f:
                out.write(f.read())
    # What the server is started with; the reload test copies server2 over it.
    shutil.copy(os.path.join(d, "server.pem"), os.path.join(d, "live.pem"))
    shutil.copy(os.path.join(d, "server.key"), os.path.join(d, "live.key"))


def handshake(context):
    """The server's certificate (DER) and the TLS version, over a fresh connection."""
    with socket.create_connection((URL.hostname, URL.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=URL.hostname) as s:
            return s.getpeercert(binary_form=True), s.version()


@callisto_only
def test_https_and_curl():
    r = api("GET", "/api/kernels")
    check_eq(r.status, 200, "GET /api/kernels over HTTPS")
    p = subprocess.run(["curl", "-sS", "--cacert", os.environ["CALLISTO_CA"], "-H",
                        f"Authorization: token {TOKEN}", "-o", "/dev/null", "-w", "%{http_code}",
                        f"{BASE_URL}/api/kernels"], capture_output=True, timeout=60)
    check_eq(p.stdout.decode(), "200", "curl --cacert: " + p.stderr.decode())
    p = subprocess.run(["curl", "-sS", "-o", "/dev/null", f"{BASE_URL}/api"],
                       capture_output=True, timeout=60)
    check(p.returncode != 0, "curl without the CA does not trust it", p.returncode)
    r = api("POST", "/v1/executions", {"code": "print(6 * 7)"})
    check_eq(r.json()["stdout"], "42\n", "a /v1 execution over HTTPS")


@callisto_only
def test_wss_kernel_execution():
    with kernel() as k, KernelWS(k["id"]) as ws:
        check_eq(ws.run("6 * 7").result_text(), "42", "code over WSS")
        ws_v1 = KernelWS(k["id"], protocol="v1")
        check_eq(ws_v1.run("1 + 1").result_text(), "2", "the v1 subprotocol over WSS")
        ws_v1.close()


@callisto_only
def test_plain_http_on_the_tls_port_is_answered_in_plain_text():
    with socket.create_connection((URL.hostname, URL.port), timeout=10) as s:
        s.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while chunk := s.recv(4096):
            answer += chunk
    check(answer.startswith(b"HTTP/1.1 400"), "400 in plain text", answer[:200])
    check(b"https://" in answer, "says to use https", answer)
    check_eq(api("GET", "/api").status, 200, "still serving")


def split_hello_handshake(first_fragment, version):
    """A TLS handshake whose ClientHello goes out split over two records, the first holding
    `first_fragment` bytes of it (python's ssl sends it whole: its bytes are re-cut here,
    through memory BIOs), then GET /api over it. Returns the answer's first line, or what
    the server sent instead of a handshake."""
    ctx = tls_context()
    ctx.minimum_version = ctx.maximum_version = version
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname=URL.hostname)
    with socket.create_connection((URL.hostname, URL.port), timeout=10) as raw:
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        flight = outgoing.read()
        check_eq(flight[0], 0x16, "a handshake record")
        check_eq(len(flight), 5 + int.from_bytes(flight[3:5], "big"), "one record")
        hello = flight[5:]

        def record(fragment):
            return flight[:3] + len(fragment).to_bytes(2, "big") + fragment

        raw.sendall(record(hello[:first_fragment]) + record(hello[first_fragment:]))
        while True:
            data = raw.recv(65536)
            if not data:
                return None
            if data.startswith(b"HTTP/"):
                return data.split(b"\r\n", 1)[0]
            incoming.write(data)
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                pass
            if pending := outgoing.read():
                raw.sendall(pending)
        raw.sendall(outgoing.read())
        tls.write(b"GET /api HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        raw.sendall(outgoing.read())
        answer = b""
        while data := raw.recv(65536):  # to the end: the answer says Connection: close
            incoming.write(data)
            try:
                while chunk := tls.read(65536):
                    answer += chunk
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                pass
        return answer.split(b"\r\n", 1)[0]


@callisto_only
def test_a_client_hello_split_over_records_is_tls():
    """TLS lets a client cut its ClientHello over several records; the server answered one
    whose first record was short (under 34 bytes, or less than the whole message) in plain
    HTTP, as if it were not TLS."""
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        for first in (1, 4, 20, 40):
            got = split_hello_handshake(first, version)
            check_eq(got, b"HTTP/1.1 200 OK",
                     f"{version.name}, {first} bytes in the first record: served over TLS")


@callisto_only
def test_tls_1_2_at_least():
    ctx = tls_context()
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    _, version = handshake(ctx)
    check_eq(version, "TLSv1.2", "TLS 1.2 is accepted")
    old = tls_context()
    old.minimum_version = ssl.TLSVersion.TLSv1
    old.maximum_version = ssl.TLSVersion.TLSv1_1
    old.set_ciphers("DEFAULT:@SECLEVEL=0")
    try:
        _, version = handshake(old)
    except (ssl.SSLError, OSError):
        return
    raise AssertionError(f"a {version} handshake was accepted")


@callisto_only
def test_sighup_reloads_the_certificate_and_keeps_connections():
    before, _ = handshake(tls_context())
    with kernel() as k, KernelWS(k["id"]) as ws:
        check_eq(ws.run("x = 1").status, "ok", "a WSS connection before the reload")
        for ext in ("pem", "key"):
            shutil.copy(os.path.join(TLS_DIR, f"server2.{ext}"), os.path.join(TLS_DIR, f"live.{ext}"))
        os.kill(int(os.environ["CALLISTO_PID"]), signal.SIGHUP)
        poll(lambda: handshake(tls_context())[0] != before, 20, 0.2,
             what="new connections get the new certificate")
        check_eq(ws.run("x + 41").result_text(), "42", "the open connection kept working")
    check_eq(api("GET", "/api").status, 200, "serving with the new certificate")


def certificate_der(name):
    with open(os.path.join(TLS_DIR, f"{name}.pem")) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


@callisto_only
def test_sighup_with_a_fifo_for_a_file_keeps_the_certificate_and_signals_working():
    """The reload read the files where signals are handled: a FIFO in place of the key froze
    it (and every later signal). Now it is refused and the certificate in use stays; the next
    SIGHUP, with good files, is handled. (The suite's SIGTERM checks the last one.)"""
    pid = int(os.environ["CALLISTO_PID"])
    before, _ = handshake(tls_context())
    other = "server2" if before == certificate_der("server") else "server"
    key = os.path.join(TLS_DIR, "live.key")
    os.remove(key)
    os.mkfifo(key)
    try:
        os.kill(pid, signal.SIGHUP)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            check_eq(handshake(tls_context())[0], before, "the certificate in use stays")
            time.sleep(0.2)
        check_eq(api("GET", "/api").status, 200, "still serving")
        # A writer's non-blocking open succeeds only while a reader holds the FIFO open.
        try:
            os.close(os.open(key, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as e:
            check_eq(e.errno, errno.ENXIO, "nobody reads the FIFO")
        else:
            raise AssertionError("the gateway opened the FIFO and waits on it, where it "
                                 "handles signals")
    finally:
        os.remove(key)
        shutil.copy(os.path.join(TLS_DIR, f"{other}.key"), key)
        shutil.copy(os.path.join(TLS_DIR, f"{other}.pem"), os.path.join(TLS_DIR, "live.pem"))
    os.kill(pid, signal.SIGHUP)
    poll(lambda: handshake(tls_context())[0] == certificate_der(other), 20, 0.2,
         what="the next SIGHUP is handled: new connections get the good files' certificate")


@callisto_only
def test_client_certificate_required():
    """Against a server with --client-ca: no certificate, no connection; with one, served."""
    plain = tls_context()
    try:
        with socket.create_connection((URL.hostname, URL.port), timeout=10) as raw:
            with plain.wrap_socket(raw, server_hostname=URL.hostname) as s:
                s.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n")
                got = s.recv(100)  # TLS 1.3 reports the refusal on the first read
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        got = b""
    check_eq(got, b"", "nothing served without a client certificate")
    os.environ["CALLISTO_CLIENT_CERT"] = os.path.join(TLS_DIR, "client-both.pem")
    try:
        check_eq(api("GET", "/api/kernels").status, 200, "served with a client certificate")
        with kernel() as k, KernelWS(k["id"]) as ws:
            check_eq(ws.run("2 * 21").result_text(), "42", "WSS with a client certificate")
    finally:
        del os.environ["CALLISTO_CLIENT_CERT"]


def get_api(context, session=None):
    """GET /api over a fresh connection, offering `session` to resume: (status line, the
    connection's session, whether the server resumed it)."""
    with socket.create_connection((URL.hostname, URL.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=URL.hostname, session=session) as s:
            s.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = b""
            # Reading to the end also takes in the TLS 1.3 tickets sent after the handshake.
            while chunk := s.recv(4096):
                answer += chunk
            return answer.split(b"\r\n", 1)[0], s.session, s.session_reused


@callisto_only
def test_resumed_sessions_with_client_certificates():
    """Against a server with --client-ca: a client resuming with the newest session it holds
    (a TLS 1.2 ticket, a TLS 1.3 ticket: one new each connection) is served again, and the
    session is resumed, three times in a row. Before the fix OpenSSL refused every resumption
    with alert 80 (internal error): no session id context."""
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        ctx = tls_context()
        ctx.load_cert_chain(os.path.join(TLS_DIR, "client-both.pem"))
        ctx.minimum_version = ctx.maximum_version = version
        status, session, reused = get_api(ctx)
        check_eq(status, b"HTTP/1.1 200 OK", f"{version.name}: the first connection is served")
        check(not reused, f"{version.name}: the first connection is a full handshake")
        check(session is not None and session.has_ticket or version == ssl.TLSVersion.TLSv1_2,
              f"{version.name}: the server sent a ticket", session)
        for attempt in range(3):
            try:
                status, session, reused = get_api(ctx, session)
            except (ssl.SSLError, OSError) as e:
                raise AssertionError(f"{version.name}: resumption {attempt + 1} failed: {e}")
            check_eq(status, b"HTTP/1.1 200 OK", f"{version.name}: resumption {attempt + 1}")
            check(reused, f"{version.name}: resumption {attempt + 1} resumed the session")


# --------------------------------------------------------------------------
# Sessions resumed by their id (TLS 1.2 without tickets): the server keeps one only for a
# connection it shut down with close_notify, whichever way the connection ended
# --------------------------------------------------------------------------

def tls_1_2_without_tickets():
    ctx = tls_context()
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.options |= ssl.OP_NO_TICKET
    return ctx


def read_until_close(s):
    """Everything until the server ends the connection (its close_notify)."""
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    return data


def read_answer(s):
    """One HTTP answer with a Content-Length, on a connection that stays open."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    head, body = data.split(b"\r\n\r\n", 1)
    length = int([line.split(b":", 1)[1] for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:")][0])
    while len(body) < length:
        body += s.recv(65536)
    return head.split(b"\r\n", 1)[0]


def ends_with_the_server_closing(s):
    """Connection: close, answered, then ended by the server."""
    s.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    check(read_until_close(s).startswith(b"HTTP/1.1 200"), "served")


def ends_with_the_client_closing(s):
    """A keep-alive answer, then the client's close_notify, which the server answers."""
    s.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n")
    check_eq(read_answer(s), b"HTTP/1.1 200 OK", "served")
    return s.unwrap  # after the session is read: unwrap lets go of it


def ends_idle(s):
    """Nothing sent: the server gives up on the first request (--header-timeout)."""
    check_eq(read_until_close(s), b"", "nothing answered")


def websocket_closed_by_the_client(kernel_id):
    def run(s):
        raw_websocket_upgrade(s, kernel_id)
        s.sendall(bytes([0x88, 0x82, 0, 0, 0, 0]) + (1000).to_bytes(2, "big"))  # close, 1000
        read_until_close(s)  # the server's close frame, then its close_notify
    return run


def ndjson_stream_ended_by_the_server(context_id):
    def run(s):
        body = json.dumps({"code": "print(6*7)", "stream": True}).encode()
        s.sendall((f"POST /v1/contexts/{context_id}/executions HTTP/1.1\r\nHost: x\r\n"
                   f"Authorization: token {TOKEN}\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
        check(b'"42\\n"' in read_until_close(s), "the stream ran the code")
    return run


def resumed(ctx, exchange, session=None):
    """One connection doing `exchange` (which may return a last step), offering `session`:
    (its session, resumed or not)."""
    with socket.create_connection((URL.hostname, URL.port), timeout=30) as raw:
        s = ctx.wrap_socket(raw, server_hostname=URL.hostname, session=session)
        try:
            last_step = exchange(s)
            result = s.session, s.session_reused
            if last_step:
                last_step()
            return result
        finally:
            s.close()


@callisto_only
def test_tls_1_2_sessions_without_tickets_are_resumed_however_the_connection_ended():
    """Before, the server never sent close_notify: OpenSSL took every session for a broken one
    and dropped it from its cache, so no TLS 1.2 client without tickets ever resumed."""
    with kernel() as k:
        ctx_id = api("POST", "/v1/contexts", {}).json()["id"]
        try:
            ways = [("the server closing after its answer", ends_with_the_server_closing),
                    ("the client closing a keep-alive connection", ends_with_the_client_closing),
                    ("a WebSocket closed by the client", websocket_closed_by_the_client(k["id"])),
                    ("an NDJSON stream the server ends", ndjson_stream_ended_by_the_server(ctx_id)),
                    ("a connection idle past --header-timeout", ends_idle)]
            for how, exchange in ways:
                ctx = tls_1_2_without_tickets()
                session, reused = resumed(ctx, exchange)
                check(not reused and session is not None and not session.has_ticket,
                      f"{how}: a full handshake, a session without a ticket", session)
                for attempt in range(2):
                    session, reused = resumed(ctx, exchange, session)
                    check(reused, f"{how}: resumption {attempt + 1} resumed the session")
                print(f"  resumed twice after {how}")
        finally:
            api("DELETE", f"/v1/contexts/{ctx_id}")
    # openssl s_client, as an operator would check it.
    with tempfile.TemporaryDirectory() as d:
        saved = os.path.join(d, "session.pem")
        request = b"GET /api HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        for attempt, flags in enumerate((["-sess_out", saved], ["-sess_in", saved])):
            out = subprocess.run(
                ["openssl", "s_client", "-connect", f"{URL.hostname}:{URL.port}", "-tls1_2",
                 "-no_ticket", "-CAfile", os.environ["CALLISTO_CA"], "-ign_eof", *flags],
                input=request, capture_output=True, timeout=60).stdout.decode(errors="replace")
            check("HTTP/1.1 200 OK" in out, "s_client is served", out[-500:])
            want = "Reused, TLSv1.2" if attempt else "New, TLSv1.2"
            check(want in out, f"s_client says {want!r}",
                  [line for line in out.splitlines() if "TLSv1" in line])


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--make-certs":
        make_certs(sys.argv[2])
        sys.exit(0)
    sys.exit(run_tests())
