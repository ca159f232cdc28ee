"""Helpers for Callisto's end-to-end tests: pytest's markers and a script's own entry into
pytest (run_tests), a REST client on http.client, and a kernel WebSocket client speaking
both the legacy JSON format and the v1.kernel.websocket.jupyter.org subprotocol.

Debian's /usr/bin/python3 with pytest and pytest-timeout, `websocket` (websocket-client),
and `jsonschema` for the OpenAPI checks.

Environment:
  CALLISTO_URL         http://127.0.0.1:PORT of the server under test
  CALLISTO_TOKEN       its token
  CALLISTO_CA          with an https:// URL: the CA file its certificate chains to
  CALLISTO_CLIENT_CERT with mutual TLS: a PEM file holding the client's certificate and key
  CALLISTO_E2E_TARGET  "callisto" (default) or "jupyter_server": the latter skips
                       the checks of Callisto-only behaviour, for validating the
                       suites against jupyter_server.
"""

import base64
import datetime
import http.client
import json
import os
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time
import urllib.parse
import uuid

import pytest
import websocket  # websocket-client

V1_PROTOCOL = "v1.kernel.websocket.jupyter.org"
ISO_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"  # what jupyter_server's gateway client parses

BASE_URL = os.environ.get("CALLISTO_URL", "http://127.0.0.1:8888").rstrip("/")
TOKEN = os.environ.get("CALLISTO_TOKEN", "")
TARGET = os.environ.get("CALLISTO_E2E_TARGET", "callisto")
KERNEL_NAME = os.environ.get("CALLISTO_E2E_KERNEL", "python3")

# Bounds for every wait; generous enough for a loaded 2-core CI machine.
HTTP_TIMEOUT = float(os.environ.get("CALLISTO_E2E_HTTP_TIMEOUT", "60"))
EXEC_TIMEOUT = float(os.environ.get("CALLISTO_E2E_EXEC_TIMEOUT", "30"))
TEST_TIMEOUT = int(os.environ.get("CALLISTO_E2E_TEST_TIMEOUT", "180"))


# Set by e2e_tests under a ThreadSanitizer build (make test-tsan): TSan's shadow memory
# multiplies the gateway's RSS, so bounds on it say nothing there.
UNDER_TSAN = os.environ.get("CALLISTO_E2E_TSAN") == "1"


def check_memory_bound(cond, what):
    """check(cond, what) for a bound on the gateway's memory; not judged under TSan."""
    if UNDER_TSAN:
        print(f"  not judged under ThreadSanitizer: {what}")
        return
    check(cond, what)


def is_callisto():
    return TARGET != "jupyter_server"


# --------------------------------------------------------------------------
# Tests: pytest's (pytest.ini and conftest.py beside this file)
# --------------------------------------------------------------------------

SkipTest = pytest.skip.Exception  # raise SkipTest("why"): the test is skipped, saying why


def test(fn):
    """A test that must hold on every Jupyter-compatible server (pytest collects test_*)."""
    return fn


def callisto_only(fn):
    """A test of Callisto-only behaviour: skipped against jupyter_server."""
    return pytest.mark.skipif(not is_callisto(), reason="Callisto-only")(fn)


def check(cond, what, *detail):
    if not cond:
        msg = what
        if detail:
            msg += ": " + " ".join(repr(d) if not isinstance(d, str) else d for d in detail)
        raise AssertionError(msg)


def check_eq(actual, expected, what):
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


def run_tests(argv=None):
    """Runs the calling script's tests through pytest and returns its exit code: the
    script's own arguments -k SUBSTRING (a test whose name holds any of them; repeatable) and
    -l (list), then pytest's. What the script's main block set up (a server it started, a
    module global) is what its tests see: pytest is handed the module already loaded."""
    argv = list(sys.argv[1:] if argv is None else argv)
    script = sys.modules["__main__"]
    sys.modules.setdefault(os.path.splitext(os.path.basename(script.__file__))[0], script)
    args = [os.path.abspath(script.__file__), "-v", "-rfEs", f"--timeout={TEST_TIMEOUT}"]
    while argv:
        a = argv.pop(0)
        if a == "-k" and argv:
            args += ["--select", argv.pop(0)]
        elif a.startswith("-k") and len(a) > 2:
            args += ["--select", a[2:]]
        elif a in ("-l", "--list"):
            args += ["--collect-only", "-q"]
        else:
            args.append(a)
    print(f"target {TARGET} at {BASE_URL}", flush=True)
    # The script names its server, as it always has: conftest.py starts none, even for a phase
    # run while the server is down.
    os.environ.setdefault("CALLISTO_URL", BASE_URL)
    return int(pytest.main(args))


# --------------------------------------------------------------------------
# REST
# --------------------------------------------------------------------------

class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-case names
        self.body = body

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        return f"<Response {self.status} {self.body[:300]!r}>"


def http_request(method, path, body=None, auth="header", token=None, headers=None,
                 base_url=None, timeout=HTTP_TIMEOUT):
    """One HTTP request. auth: "header" (Authorization: token T), "query"
    (?token=T), or None. body: dict/list (sent as JSON), bytes or str."""
    url = urllib.parse.urlsplit(base_url or BASE_URL)
    tok = TOKEN if token is None else token
    prefix = url.path.rstrip("/")
    target = prefix + path
    hdrs = {}
    if auth == "header":
        hdrs["Authorization"] = f"token {tok}"
    elif auth == "query":
        sep = "&" if "?" in target else "?"
        target += sep + "token=" + urllib.parse.quote(tok)
    data = None
    if body is not None:
        if isinstance(body, (dict, list)):
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        elif isinstance(body, str):
            data = body.encode()
            hdrs["Content-Type"] = "application/json"
        else:
            data = body
    elif method in ("POST", "PUT", "PATCH"):
        data = b""
    hdrs.update(headers or {})
    conn = connection(url, timeout)
    try:
        conn.request(method, target, body=data, headers=hdrs)
        resp = conn.getresponse()
        payload = resp.read()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload)
    finally:
        conn.close()


def free_port():
    """A loopback port nobody listens on now, for a helper server a test starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc, timeout=20):
    """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def tls_context():
    """The client side of HTTPS and WSS: trusts CALLISTO_CA, presents CALLISTO_CLIENT_CERT."""
    ctx = ssl.create_default_context(cafile=os.environ.get("CALLISTO_CA") or None)
    if os.environ.get("CALLISTO_CLIENT_CERT"):
        ctx.load_cert_chain(os.environ["CALLISTO_CLIENT_CERT"])
    return ctx


def connection(url, timeout=None):
    """An http.client connection to a urlsplit() URL, HTTPS when it says so."""
    if url.scheme == "https":
        return http.client.HTTPSConnection(url.hostname, url.port or 443, timeout=timeout,
                                           context=tls_context())
    return http.client.HTTPConnection(url.hostname, url.port or 80, timeout=timeout)


def ws_sslopt():
    """websocket-client's TLS options for a wss:// URL."""
    opt = {"ca_certs": os.environ.get("CALLISTO_CA")} if os.environ.get("CALLISTO_CA") else {}
    if os.environ.get("CALLISTO_CLIENT_CERT"):
        opt["certfile"] = os.environ["CALLISTO_CLIENT_CERT"]
    return opt


def api(method, path, body=None, **kw):
    return http_request(method, path, body=body, **kw)


# --------------------------------------------------------------------------
# The OpenAPI document (GET /openapi.json): answers checked against it
# --------------------------------------------------------------------------


# Raw HTTP, for what no client library sends: a socket to the server under test, and what the
# server answers on it before it closes.

def raw_connection(source=None, timeout=15):
    """A TCP connection to the server under test, from the address `source` when given."""
    url = urllib.parse.urlsplit(BASE_URL)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if source:
        s.bind((source, 0))
    s.connect((url.hostname, url.port))
    return s


def read_until_closed(s, limit=1 << 16):
    """Everything the server answers on `s` before it closes, resets or times out (about
    `limit` bytes at the most: an answer, not a stream)."""
    chunks = []
    while sum(map(len, chunks)) < limit:
        try:
            b = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks)


def raw_websocket_upgrade(s, kernel_id, host="x"):
    """Asks on the raw socket `s` for kernel_id's channels WebSocket, as TOKEN's user; checks
    the 101 and returns the answer's head. Read a byte at a time, so that the frames after it
    are left for the caller to read."""
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /api/kernels/{kernel_id}/channels HTTP/1.1\r\nHost: {host}\r\n"
               f"Authorization: token {TOKEN}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        byte = s.recv(1)
        if not byte:
            break  # closed before a whole head: the check below shows what came
        head += byte
    check(head.startswith(b"HTTP/1.1 101"), "upgraded", head[:200])
    return head


def raw_exchange(data, timeout=15):
    """Sends raw bytes on a connection of their own, ends the sending side, and returns
    everything the server answers before it closes."""
    with raw_connection(timeout=timeout) as s:
        s.sendall(data)
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        return read_until_closed(s)


def raw_status(answer):
    """The status of a raw HTTP/1.1 answer; None when it is not one."""
    return int(answer[9:12]) if answer.startswith(b"HTTP/1.1 ") else None


def raw_json_body(answer):
    return json.loads(answer.split(b"\r\n\r\n", 1)[1])


def still_serving():
    """After bad input: the server still answers an ordinary request."""
    r = api("GET", "/api/kernelspecs")
    check_eq(r.status, 200, "the server still serves")


SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
OPENAPI_FILE = os.path.join(SOURCE_DIR, "docs", "openapi.json")
_openapi = None


def openapi_document():
    """The document the server serves (fetched once, public)."""
    global _openapi
    if _openapi is None:
        r = http_request("GET", "/openapi.json", auth=None)
        check_eq(r.status, 200, "GET /openapi.json")
        _openapi = r.json()
    return _openapi


def check_schema(instance, schema, what):
    """Validate instance against a schema of the served document (JSON Schema 2020-12, as
    OpenAPI 3.1 uses); schema is a component name or a schema object."""
    import jsonschema  # python3-jsonschema; only the OpenAPI checks need it
    doc = openapi_document()
    if isinstance(schema, str):
        schema = {"$ref": "#/components/schemas/" + schema}
    validator = jsonschema.Draft202012Validator(
        schema, resolver=jsonschema.RefResolver.from_schema(doc),
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
    if errors:
        raise AssertionError(f"{what} does not match the OpenAPI document: " + "; ".join(
            f"at {'/'.join(map(str, e.path)) or '(root)'}: {e.message[:300]}" for e in errors[:5]))


def openapi_resolve(node):
    """Follow local $refs ("#/components/...") in the served document."""
    doc = openapi_document()
    while isinstance(node, dict) and "$ref" in node:
        target = doc
        for part in node["$ref"][2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def check_documented(method, path_template, r):
    """The answer r to METHOD path_template is one the document describes: its status is
    listed, its content type is one of the status's, a JSON or NDJSON body matches the
    schema, Location / Retry-After and required headers are there when documented, and a
    header documented with a const has that value. Returns r."""
    what = f"{method} {path_template} -> {r.status}"
    doc = openapi_document()
    check(path_template in doc["paths"], f"{path_template} is documented")
    op = doc["paths"][path_template].get(method.lower())
    check(op is not None, f"{method} {path_template} is documented")
    res = op["responses"].get(str(r.status))
    check(res is not None, f"{what}: status not listed in the OpenAPI document",
          sorted(op["responses"]), r.body[:300])
    res = openapi_resolve(res)
    content = res.get("content")
    if not content:
        check_eq(r.body, b"", f"{what}: documented without a body")
    else:
        ctype = r.headers.get("content-type", "").split(";")[0].strip()
        check(ctype in content, f"{what}: content type {ctype!r} not documented", sorted(content))
        schema = content[ctype].get("schema")
        if ctype == "application/json":
            check_schema(json.loads(r.body), schema, what)
        elif ctype == "application/x-ndjson":
            for line in r.body.decode().splitlines():
                check_schema(json.loads(line), schema, what + " event")
    for header, spec in res.get("headers", {}).items():
        # Retry-After documented as "sent only ..." is conditional (a user's own quota has none).
        conditional = "sent only" in openapi_resolve(spec).get("description", "")
        if header == "Location" or (header == "Retry-After" and not conditional):
            check(header.lower() in r.headers, f"{what}: documented header {header} missing",
                  r.headers)
        # Required headers (the security headers) are always sent; one documented with a
        # single value has it.
        spec = openapi_resolve(spec)
        if spec.get("required"):
            check(header.lower() in r.headers, f"{what}: required header {header} missing",
                  r.headers)
        const = spec.get("schema", {}).get("const")
        if const is not None and header.lower() in r.headers:
            check_eq(r.headers[header.lower()], const, f"{what}: documented header {header}")
    return r


def create_kernel(name=KERNEL_NAME, body=None):
    """POST /api/kernels; checks 201 + Location and returns the model."""
    r = api("POST", "/api/kernels", body if body is not None else {"name": name})
    check_eq(r.status, 201, f"POST /api/kernels status ({r.body[:300]!r})")
    model = r.json()
    check("location" in r.headers, "201 has a Location header", r.headers)
    check(r.headers["location"].endswith("/api/kernels/" + model["id"]),
          "Location names the kernel", r.headers["location"], model["id"])
    return model


def delete_quietly(path, token=None, timeout=HTTP_TIMEOUT):
    """DELETE that never raises, for finally blocks: the status, or None when it failed."""
    try:
        return api("DELETE", path, token=token, timeout=timeout).status
    except Exception as e:  # noqa: BLE001
        print(f"  (cleanup: DELETE {path} failed: {e})")
        return None


def delete_kernel(kernel_id, token=None):
    """DELETE /api/kernels/{id} as `token`'s user that never raises: for finally blocks."""
    return delete_quietly(f"/api/kernels/{kernel_id}", token=token)


def kernel_ids():
    """The ids of the kernels GET /api/kernels lists."""
    return {k["id"] for k in api("GET", "/api/kernels").json()}


def get_kernel(kernel_id):
    r = api("GET", f"/api/kernels/{kernel_id}")
    check_eq(r.status, 200, f"GET /api/kernels/{kernel_id}")
    return r.json()


class kernel:
    """Context manager: a fresh kernel, deleted on exit."""

    def __init__(self, name=KERNEL_NAME):
        self.name = name
        self.model = None

    def __enter__(self):
        self.model = create_kernel(self.name)
        return self.model

    def __exit__(self, *exc):
        if self.model:
            delete_kernel(self.model["id"])
        return False


def process_tree(top):
    """`top` and every descendant (host pids), parents before children."""
    pids, pending = [], [top]
    while pending:
        pid = pending.pop()
        pids.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    pending += [int(child) for child in f.read().split()]
        except OSError:
            pass
    return pids


def gateway_args(pid=None):
    """The --name=value flags the server under test runs with ($CALLISTO_PID), as a dict."""
    pid = pid or os.environ["CALLISTO_PID"]
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        args = [a.decode() for a in f.read().split(b"\0") if a]
    return dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)


def gateway_status_kib(field):
    """VmRSS, VmHWM or another /proc status field of the gateway under test ($CALLISTO_PID),
    in KiB."""
    pid = os.environ["CALLISTO_PID"]
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def reset_gateway_peak():
    """VmHWM of the gateway under test from here on: clear_refs 5 resets it to the current
    RSS."""
    with open(f"/proc/{os.environ['CALLISTO_PID']}/clear_refs", "w") as f:
        f.write("5")


def real_uid(pid):
    """The real uid `pid` runs as; None when there is no such process, or a zombie."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:") and line.split()[1] == "Z":
                    return None  # a zombie runs nothing
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def pids_of_uids(first, last):
    """Running processes whose real uid is in [first, last]."""
    return [int(p) for p in os.listdir("/proc")
            if p.isdigit() and first <= (real_uid(int(p)) or -1) <= last]


def alive(pid):
    """Whether `pid` is a running process (a zombie is not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def launch_info(kernel_id):
    """The kernel model's "callisto" object, checked: how the kernel started ("zygote": forked
    by its kernelspec's callisto-zygote; "exec": bwrap and python exec'd), the host pid of its
    top process, and its PSS in bytes (null when unknown)."""
    model = get_kernel(kernel_id)
    info = model.get("callisto")
    check(isinstance(info, dict), "the kernel model has a 'callisto' object", model)
    check(info.get("launch") in ("zygote", "exec"), "callisto.launch is 'zygote' or 'exec'", info)
    pid = info.get("pid")
    check(isinstance(pid, int) and not isinstance(pid, bool) and pid > 0,
          "callisto.pid is a positive integer", info)
    pss = info.get("pss_bytes", "absent")
    check(pss is None or (isinstance(pss, int) and not isinstance(pss, bool) and pss > 0),
          "callisto.pss_bytes is a positive integer or null", info)
    return info


def _start_as(launch, create, delete, kernel_id_of, timeout):
    """create() until what it made runs a kernel started the way `launch` says ("zygote" or
    "exec"): while no zygote is ready (at server start, or while a dead one restarts) kernels
    start the old way, so for "zygote" those are deleted (delete(made)) and the create retried
    for up to `timeout` seconds. Returns (made, its kernel's checked "callisto" object)."""
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        made = create()
        try:
            info = launch_info(kernel_id_of(made))
        except BaseException:
            delete(made)
            raise
        if info["launch"] == launch:
            return made, info
        delete(made)
        seen.append(info["launch"])
        if launch != "zygote" or time.monotonic() >= deadline:
            raise AssertionError(f"kernel started by {info['launch']!r}, expected "
                                 f"{launch!r} (launches seen: {seen})")
        time.sleep(1)


class launched_kernel:
    """Context manager: a fresh kernel started the way `launch` says ("zygote" or "exec"),
    deleted on exit; its model carries the checked "callisto" object. While no zygote is
    ready (at server start, or while a dead one restarts) kernels start the old way: for
    "zygote" those are deleted and the create retried for up to `timeout` seconds. Against
    jupyter_server, a plain kernel."""

    def __init__(self, launch, name=KERNEL_NAME, body=None, timeout=90):
        self.launch = launch
        self.body = body if body is not None else {"name": name}
        self.timeout = timeout
        self.model = None

    def __enter__(self):
        if not is_callisto():
            self.model = create_kernel(body=self.body)
            return self.model
        model, info = _start_as(self.launch, lambda: create_kernel(body=self.body),
                                lambda m: delete_kernel(m["id"]), lambda m: m["id"],
                                self.timeout)
        model["callisto"] = info
        self.model = model
        return model

    def __exit__(self, *exc):
        if self.model:
            delete_kernel(self.model["id"])
        return False


def create_context(body=None, token=None, timeout=120):
    """POST /v1/contexts with `body` (by default {}) as `token`'s user; checks 201 and returns
    the context."""
    r = api("POST", "/v1/contexts", body if body is not None else {}, token=token,
            timeout=timeout)
    check_eq(r.status, 201, f"POST /v1/contexts status ({r.body[:300]!r})")
    return r.json()


def delete_context(context_id, token=None, timeout=120):
    """DELETE /v1/contexts/{id} as `token`'s user that never raises: for finally blocks. Returns
    the status (None when the request failed), for a caller that checks it."""
    return delete_quietly(f"/v1/contexts/{context_id}", token=token, timeout=timeout)


def _context_id(context):
    return context["id"] if isinstance(context, dict) else context


def run_code(context, code, token=None, http_timeout=300, **fields):
    """POST /v1/contexts/{id}/executions with `code` and the body's other `fields` (language,
    timeout, env, ...) as `token`'s user; checks the 200 and returns the execution. `context`:
    the context's model or its id. http_timeout bounds the wait for the answer; by default it
    lies past the test's own bound (CALLISTO_E2E_TEST_TIMEOUT), which decides: an execution's
    deadline ladder, a kernel's first start or a paused context's resume on a loaded machine all
    take their time."""
    body = {"code": code}
    body.update(fields)
    r = api("POST", f"/v1/contexts/{_context_id(context)}/executions", body, token=token,
            timeout=http_timeout)
    check_eq(r.status, 200, f"execution of {code[:60]!r} answered ({r.body[:300]!r})")
    return r.json()


def run_code_ok(context, code, token=None, http_timeout=300, **fields):
    """run_code(), and the execution's status is "ok"."""
    e = run_code(context, code, token=token, http_timeout=http_timeout, **fields)
    check_eq(e["status"], "ok", f"execution of {code[:60]!r} ran ({e.get('error')!r}, "
             f"{e.get('stderr', '')[-300:]!r})")
    return e


class launched_context:
    """Context manager: a new /v1 context (POST /v1/contexts with `body`, by default policy
    "fresh": a kernel no one used before) whose kernel started the way `launch` says, retried
    as launched_kernel does; deleted on exit. The context carries its kernel's checked
    "callisto" object."""

    def __init__(self, launch, body=None, timeout=90):
        self.launch = launch
        self.body = body if body is not None else {"policy": "fresh"}
        self.timeout = timeout
        self.ctx = None

    def __enter__(self):
        ctx, info = _start_as(self.launch, lambda: create_context(self.body),
                              lambda c: delete_context(c["id"]),
                              lambda c: c["kernel_id"], self.timeout)
        ctx["callisto"] = info
        self.ctx = ctx
        return ctx

    def __exit__(self, *exc):
        if self.ctx:
            delete_context(self.ctx["id"])
        return False


def run_json(ws, code, timeout=60):
    """Runs kernel code that prints one JSON line last; returns it parsed."""
    ex = ws.run(code, timeout=timeout)
    out = ex.stdout().strip().splitlines()
    check(ex.status == "ok" and out, "kernel code ran", ex.status,
          [m["content"] for m in ex.of_type("error")], ex.stdout()[-500:])
    return json.loads(out[-1])


def gateway_pid():
    """Host pid of the callisto serving BASE_URL (found by its --port)."""
    port = str(urllib.parse.urlparse(BASE_URL).port)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if args and args[0].endswith(b"callisto") and f"--port={port}".encode() in args:
            return int(entry)
    raise AssertionError("gateway process not found")


def parse_iso(s):
    return datetime.datetime.strptime(s, ISO_FORMAT)


def poll(fn, timeout, interval=0.1, what="condition"):
    """Call fn() until it returns a truthy value; returns it, or raises."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


# --------------------------------------------------------------------------
# Messages and WebSocket formats
# --------------------------------------------------------------------------

def now_iso():
    return datetime.datetime.utcnow().strftime(ISO_FORMAT)


def make_msg(msg_type, content=None, channel="shell", session=None, metadata=None,
             parent=None, buffers=None):
    header = {
        "msg_id": uuid.uuid4().hex,
        "msg_type": msg_type,
        "username": "e2e",
        "session": session or uuid.uuid4().hex,
        "date": now_iso(),
        "version": "5.3",
    }
    return {
        "channel": channel,
        "header": header,
        "parent_header": parent or {},
        "metadata": metadata or {},
        "content": content if content is not None else {},
        "buffers": list(buffers or []),
        "msg_id": header["msg_id"],
        "msg_type": msg_type,
    }


def encode_v1(msg):
    """v1 frame: u64 LE count of offsets, u64 LE offsets, channel, header,
    parent_header, metadata, content, buffers (offsets from frame start)."""
    parts = [json.dumps(msg[k]).encode() for k in ("header", "parent_header", "metadata", "content")]
    parts += [bytes(b) for b in msg.get("buffers", [])]
    return encode_v1_parts(msg["channel"], parts)


def encode_v1_parts(channel, parts):
    ch = channel.encode()
    n = 2 + len(parts)
    offsets = [8 * (1 + n)]
    offsets.append(offsets[-1] + len(ch))
    for p in parts:
        offsets.append(offsets[-1] + len(p))
    return b"".join([struct.pack("<Q", n)] + [struct.pack("<Q", o) for o in offsets] + [ch] + parts)


def decode_v1(frame):
    n = struct.unpack_from("<Q", frame, 0)[0]
    if n < 2 or 8 * (1 + n) > len(frame):
        raise ValueError(f"bad v1 offset count {n} for frame of {len(frame)} bytes")
    offsets = list(struct.unpack_from("<" + "Q" * n, frame, 8))
    if offsets != sorted(offsets) or offsets[-1] > len(frame) or offsets[0] != 8 * (1 + n):
        raise ValueError(f"bad v1 offsets {offsets} for frame of {len(frame)} bytes")
    channel = frame[offsets[0]:offsets[1]].decode()
    parts = [frame[offsets[i]:offsets[i + 1]] for i in range(1, n - 1)]
    if len(parts) < 4:
        raise ValueError(f"v1 frame has {len(parts)} message parts, want >= 4")
    msg = {
        "channel": channel,
        "header": json.loads(parts[0]),
        "parent_header": json.loads(parts[1]),
        "metadata": json.loads(parts[2]),
        "content": json.loads(parts[3]),
        "buffers": parts[4:],
    }
    msg["msg_type"] = msg["header"].get("msg_type")
    msg["msg_id"] = msg["header"].get("msg_id")
    return msg


def encode_legacy_binary(msg):
    """Legacy binary frame (only when buffers exist): u32 BE count, u32 BE
    offsets, JSON message, buffers."""
    m = {k: v for k, v in msg.items() if k != "buffers"}
    bufs = [json.dumps(m).encode()] + [bytes(b) for b in msg["buffers"]]
    offsets = [4 * (len(bufs) + 1)]
    for b in bufs[:-1]:
        offsets.append(offsets[-1] + len(b))
    return struct.pack("!" + "I" * (len(bufs) + 1), len(bufs), *offsets) + b"".join(bufs)


def decode_legacy(data, binary):
    if not binary:
        msg = json.loads(data)
        msg.setdefault("buffers", [])
    else:
        n = struct.unpack_from("!I", data, 0)[0]
        offsets = list(struct.unpack_from("!" + "I" * n, data, 4)) + [len(data)]
        bufs = [data[offsets[i]:offsets[i + 1]] for i in range(n)]
        msg = json.loads(bufs[0].decode())
        msg["buffers"] = bufs[1:]
    msg.setdefault("msg_type", msg.get("header", {}).get("msg_type"))
    msg.setdefault("msg_id", msg.get("header", {}).get("msg_id"))
    return msg


def ws_url(kernel_id, session_id=None, auth="header", token=None, base_url=None, extra_query=None):
    url = urllib.parse.urlsplit(base_url or BASE_URL)
    scheme = "wss" if url.scheme == "https" else "ws"
    q = dict(extra_query or {})
    if session_id is not None:
        q["session_id"] = session_id
    if auth == "query":
        q["token"] = TOKEN if token is None else token
    query = ("?" + urllib.parse.urlencode(q)) if q else ""
    return f"{scheme}://{url.netloc}{url.path.rstrip('/')}/api/kernels/{kernel_id}/channels{query}"


class KernelWS:
    """A client WebSocket on /api/kernels/{id}/channels.

    protocol: "legacy" or "v1". Received messages are decoded to dicts with
    channel/header/parent_header/metadata/content/buffers/msg_type/msg_id. All
    received messages are kept in `history`; `pending` holds those not yet
    consumed by a wait."""

    def __init__(self, kernel_id, protocol="legacy", session_id=None, auth="header",
                 token=None, connect_timeout=HTTP_TIMEOUT, base_url=None, send_session_id=True,
                 extra_query=None):
        self.kernel_id = kernel_id
        self.protocol = protocol
        self.session = session_id or uuid.uuid4().hex
        headers = []
        tok = TOKEN if token is None else token
        if auth == "header":
            headers.append(f"Authorization: token {tok}")
        kw = {"sslopt": ws_sslopt()}
        if protocol == "v1":
            kw["subprotocols"] = [V1_PROTOCOL]
        self.ws = websocket.create_connection(
            ws_url(kernel_id, self.session if send_session_id else None, auth, token, base_url,
                   extra_query),
            header=headers, timeout=connect_timeout, enable_multithread=False, **kw)
        if protocol == "v1":
            got = self.ws.getsubprotocol()
            check_eq(got, V1_PROTOCOL, "server selected the v1 subprotocol")
        self.history = []
        self.pending = []
        self.undecodable = []

    # -- sending
    def send(self, msg):
        if self.protocol == "v1":
            self.ws.send_binary(encode_v1(msg))
        elif msg.get("buffers"):
            self.ws.send_binary(encode_legacy_binary(msg))
        else:
            m = {k: v for k, v in msg.items() if k != "buffers"}
            m["buffers"] = []
            self.ws.send(json.dumps(m))
        return msg

    def send_text(self, text):
        self.ws.send(text)

    def send_binary(self, data):
        self.ws.send_binary(data)

    def msg(self, msg_type, content=None, channel="shell", **kw):
        return make_msg(msg_type, content, channel, session=self.session, **kw)

    def execute(self, code, allow_stdin=False, silent=False, store_history=True):
        m = self.msg("execute_request", {
            "code": code, "silent": silent, "store_history": store_history,
            "user_expressions": {}, "allow_stdin": allow_stdin, "stop_on_error": True,
        })
        self.send(m)
        return m["header"]["msg_id"]

    # -- receiving
    def _recv_one(self, timeout):
        """One decoded message, or None at the deadline."""
        # Pings come back to us (answered) so the deadline holds: websocket-client would
        # otherwise wait again after each one, and a server's keep-alive pings never end.
        deadline = time.monotonic() + max(timeout, 0.001)
        while True:
            self.ws.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                opcode, data = self.ws.recv_data(control_frame=True)
            except (websocket.WebSocketTimeoutException, TimeoutError):
                return None
            if opcode not in (websocket.ABNF.OPCODE_PING, websocket.ABNF.OPCODE_PONG):
                break
            if time.monotonic() >= deadline:
                return None
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            raise ConnectionError("server closed the WebSocket")
        binary = opcode == websocket.ABNF.OPCODE_BINARY
        try:
            if self.protocol == "v1":
                if not binary:
                    raise ValueError("text frame on a v1 connection")
                msg = decode_v1(data)
            else:
                msg = decode_legacy(data.decode() if not binary else data, binary)
        except Exception as e:  # keep it for the assertion messages
            self.undecodable.append((e, data[:200]))
            raise AssertionError(f"undecodable frame ({e}): {data[:200]!r}")
        self.history.append(msg)
        return msg

    def wait_for(self, pred, timeout=EXEC_TIMEOUT, what="message"):
        """First pending or new message matching pred (consumed); raises on timeout."""
        for i, m in enumerate(self.pending):
            if pred(m):
                return self.pending.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            m = self._recv_one(left)
            if m is None:
                break
            if pred(m):
                return m
            self.pending.append(m)
        seen = [(m["channel"], m["msg_type"]) for m in self.pending[-15:]]
        raise AssertionError(f"timed out after {timeout} s waiting for {what}; recent: {seen}")

    def drain(self, duration):
        """Receive for `duration` seconds into pending; returns what arrived."""
        got = []
        deadline = time.monotonic() + duration
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return got
            m = self._recv_one(left)
            if m is None:
                return got
            self.pending.append(m)
            got.append(m)

    def reply_to(self, msg_id, channel="shell", timeout=EXEC_TIMEOUT):
        return self.wait_for(
            lambda m: m["channel"] == channel and m["parent_header"].get("msg_id") == msg_id,
            timeout, f"{channel} reply to {msg_id}")

    def kernel_info(self, timeout=EXEC_TIMEOUT, retry_every=2.0):
        """kernel_info_request, resent every few seconds (a fresh or restarted
        kernel may miss the first); returns the reply."""
        deadline = time.monotonic() + timeout
        sent = set()
        while True:
            m = self.msg("kernel_info_request", {})
            self.send(m)
            sent.add(m["header"]["msg_id"])
            try:
                return self.wait_for(
                    lambda x: x["channel"] == "shell" and x["msg_type"] == "kernel_info_reply"
                    and x["parent_header"].get("msg_id") in sent,
                    min(retry_every, max(0.01, deadline - time.monotonic())), "kernel_info_reply")
            except AssertionError:
                if time.monotonic() >= deadline:
                    raise

    def run(self, code, timeout=EXEC_TIMEOUT, allow_stdin=False):
        """Execute and collect until the execute_reply and the iopub idle for it
        have both arrived. Returns an Execution."""
        msg_id = self.execute(code, allow_stdin=allow_stdin)
        return self.collect(msg_id, timeout)

    def run_not_aborted(self, code, tries=5, timeout=EXEC_TIMEOUT):
        """run(), again while the kernel answers "aborted": after an error ipykernel aborts
        what arrives until its stop_on_error timer fires, which on a busy machine can be the
        next request. That is the kernel's call, not the gateway's."""
        for _ in range(tries):
            ex = self.run(code, timeout)
            if ex.status != "aborted":
                break
            time.sleep(0.5)
        return ex

    def collect(self, msg_id, timeout=EXEC_TIMEOUT):
        ex = Execution(msg_id)
        deadline = time.monotonic() + timeout

        def mine(m):
            return m["parent_header"].get("msg_id") == msg_id

        while ex.reply is None or not ex.idle:
            m = self.wait_for(mine, max(0.0, deadline - time.monotonic()),
                              f"execution of {msg_id} (reply={ex.reply is not None}, idle={ex.idle})")
            ex.add(m)
        return ex

    def close(self):
        try:
            self.ws.close(timeout=2)
        except Exception:  # noqa: BLE001
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Execution:
    def __init__(self, msg_id):
        self.msg_id = msg_id
        self.reply = None
        self.idle = False
        self.iopub = []

    def add(self, m):
        if m["channel"] == "shell" and m["msg_type"] == "execute_reply":
            self.reply = m
        elif m["channel"] == "iopub":
            self.iopub.append(m)
            if m["msg_type"] == "status" and m["content"].get("execution_state") == "idle":
                self.idle = True

    def of_type(self, t):
        return [m for m in self.iopub if m["msg_type"] == t]

    def stdout(self):
        return "".join(m["content"]["text"] for m in self.of_type("stream")
                       if m["content"].get("name") == "stdout")

    def result_text(self):
        r = self.of_type("execute_result")
        return r[0]["content"]["data"].get("text/plain") if r else None

    @property
    def status(self):
        return self.reply["content"]["status"] if self.reply else None


HEADER_FIELDS = ("msg_id", "msg_type", "username", "session", "version")


def check_header(m, what="message"):
    """@jupyterlab/services rejects a message whose header lacks any of these
    as a string (validateMessage), so server-made messages need them all."""
    for f in HEADER_FIELDS:
        check(isinstance(m["header"].get(f), str), f"{what}: header.{f} is a string", m["header"])
    check_eq(m["header"]["msg_type"], m["msg_type"], f"{what}: msg_type")
    check(isinstance(m["metadata"], dict) and isinstance(m["content"], dict),
          f"{what}: metadata and content are objects", m)


def kernel_pid(ws):
    ex = ws.run("import os; print(os.getpid())")
    return int(ex.stdout().strip())


def kill_kernel_process(ws):
    """SIGKILL the kernel process. From the test when the kernel's pid is a
    host pid of an ipykernel; from inside the kernel when it runs in its own
    pid namespace (Callisto's sandbox), where its pid means nothing here."""
    pid = kernel_pid(ws)
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
    except OSError:
        cmd = b""
    if b"ipykernel" in cmd and os.environ.get("CALLISTO_E2E_KILL") != "self":
        os.kill(pid, signal.SIGKILL)
        return "host", pid
    # A pid-namespace init ignores SIGKILL from inside: fall back to _exit there.
    ws.execute("import os, signal\nif os.getpid() == 1:\n    os._exit(137)\n"
               "os.kill(os.getpid(), signal.SIGKILL)")
    return "self", pid
