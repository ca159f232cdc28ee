#!/usr/bin/python3
"""The path JupyterLab uses to attach to a kernel gateway: a jupyter_server
started with --gateway-url pointing at the server under test, driven through
jupyter_server's own REST + WebSocket API. Usage:

  CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T /usr/bin/python3 test_jupyter_server_gateway.py [-k NAME]

Starts Debian's jupyter_server (/usr/bin/python3 -m jupyter_server, override
with CALLISTO_E2E_JUPYTER_SERVER="cmd ...") on a free port and always stops
it at the end. jupyter_server's gateway client speaks only the legacy JSON
WebSocket format to the gateway, without a session_id, and parses
last_activity with %Y-%m-%dT%H:%M:%S.%fZ.
"""

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import e2e_client as ec  # noqa: E402
from e2e_client import (  # noqa: E402
    BASE_URL, KERNEL_NAME, TOKEN, KernelWS, check, check_eq, free_port, http_request, parse_iso,
    poll, run_tests, test,
)

FRONT_TOKEN = "front-" + uuid.uuid4().hex
FRONT = {"url": None, "proc": None, "log": None, "dir": None}
START_TIMEOUT = 60



def start_front():
    port = free_port()
    root = tempfile.mkdtemp(prefix="callisto-e2e-front-")
    cmd = shlex.split(os.environ.get("CALLISTO_E2E_JUPYTER_SERVER",
                                     "/usr/bin/python3 -m jupyter_server"))
    cmd += [
        "--no-browser", "--allow-root",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--ServerApp.token={FRONT_TOKEN}", f"--ServerApp.root_dir={root}",
        "--ServerApp.iopub_data_rate_limit=0", "--ServerApp.iopub_msg_rate_limit=0",
        f"--gateway-url={BASE_URL}",
        f"--GatewayClient.auth_token={TOKEN}",
        "--GatewayClient.request_timeout=60",
        "--GatewayClient.connect_timeout=20",
        "--GatewayClient.gateway_retry_max=2",
    ]
    if os.environ.get("CALLISTO_CA"):  # an https:// gateway with its own CA
        cmd.append(f"--GatewayClient.ca_certs={os.environ['CALLISTO_CA']}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_GATEWAY_")}
    env["JUPYTER_CONFIG_DIR"] = os.path.join(root, ".jupyter-config")  # no user config
    env["JUPYTER_RUNTIME_DIR"] = os.path.join(root, ".jupyter-runtime")
    if os.environ.get("CALLISTO_CA"):
        # jupyter_server 1.23 (Debian 12) applies GatewayClient.ca_certs to its REST calls only
        # together with a client certificate; the CA trusted process-wide covers them, as an
        # operator with an internal CA would configure it.
        env["SSL_CERT_FILE"] = os.environ["CALLISTO_CA"]
    log = open(os.path.join(root, "jupyter_server.log"), "w+b")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root,
                            start_new_session=True)
    FRONT.update(url=f"http://127.0.0.1:{port}", proc=proc, log=log, dir=root)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter_server exited with {proc.returncode}:\n{front_log_tail()}")
        try:
            if http_request("GET", "/api", base_url=FRONT["url"], token=FRONT_TOKEN,
                            timeout=2).status == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"jupyter_server not up after {START_TIMEOUT} s:\n{front_log_tail()}")
        time.sleep(0.2)
    print(f"front jupyter_server at {FRONT['url']} (gateway {BASE_URL})", flush=True)


def front_log_tail(n=4000):
    log = FRONT.get("log")
    if not log:
        return ""
    log.flush()
    log.seek(0)
    return log.read().decode(errors="replace")[-n:]


def stop_front():
    proc = FRONT.get("proc")
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    if FRONT.get("log"):
        FRONT["log"].close()
    if FRONT.get("dir"):
        shutil.rmtree(FRONT["dir"], ignore_errors=True)


def front(method, path, body=None, **kw):
    return http_request(method, path, body=body, base_url=FRONT["url"], token=FRONT_TOKEN, **kw)


def gateway_ids():
    r = http_request("GET", "/api/kernels")
    check_eq(r.status, 200, "gateway GET /api/kernels")
    return [k["id"] for k in r.json()]


class front_kernel:
    def __enter__(self):
        r = front("POST", "/api/kernels", {"name": KERNEL_NAME})
        check_eq(r.status, 201, f"front POST /api/kernels ({r.body[:300]!r})")
        self.model = r.json()
        return self.model

    def __exit__(self, *exc):
        try:
            front("DELETE", f"/api/kernels/{self.model['id']}")
        except Exception as e:  # noqa: BLE001
            print(f"  (cleanup via front failed: {e})")
        ec.delete_kernel(self.model["id"])  # in case the front lost track of it
        return False


@test
def test_kernelspecs_come_from_gateway():
    r = front("GET", "/api/kernelspecs")
    check_eq(r.status, 200, f"front kernelspecs ({r.body[:300]!r})")
    mine = r.json()
    theirs = http_request("GET", "/api/kernelspecs").json()
    check_eq(sorted(mine["kernelspecs"]), sorted(theirs["kernelspecs"]), "same kernelspec names")
    check_eq(mine["default"], theirs["default"], "same default")
    r = front("GET", f"/api/kernelspecs/{KERNEL_NAME}")
    check_eq(r.status, 200, "front single kernelspec")
    check_eq(r.json()["spec"]["display_name"],
             theirs["kernelspecs"][KERNEL_NAME]["spec"]["display_name"], "display_name")


@test
def test_kernelspec_resource_through_front():
    r = front("GET", f"/kernelspecs/{KERNEL_NAME}/logo-64x64.png")
    check_eq(r.status, 200, "logo through the front server")
    check(r.body.startswith(b"\x89PNG"), "PNG body", r.body[:8])


@test
def test_kernel_lifecycle_through_front():
    with front_kernel() as model:
        kid = model["id"]
        check(kid in gateway_ids(), "kernel appears in the gateway's GET /api/kernels", kid)
        r = front("GET", f"/api/kernels/{kid}")
        check_eq(r.status, 200, "front GET kernel (refresh_model parses last_activity)")
        m = r.json()
        check_eq(m["id"], kid, "id")
        check(m["execution_state"] in ("starting", "idle", "busy"), "state", m)
        r = front("GET", "/api/kernels")
        check(kid in [k["id"] for k in r.json()], "front lists it", r.json())

        # jupyter_server 1.23 in gateway mode answers its own clients in the legacy
        # format only (it does not echo the v1 subprotocol).
        for protocol in ("legacy",):
            with KernelWS(kid, protocol, base_url=FRONT["url"], token=FRONT_TOKEN) as ws:
                ws.kernel_info(timeout=60)
                ex = ws.run("1+1")
                check_eq(ex.result_text(), "2", f"{protocol}: 1+1 through the front")
                ex = ws.run("print('via front')")
                check_eq(ex.stdout(), "via front\n", f"{protocol}: print through the front")
                ex = ws.run("1/0")
                check_eq(ex.reply["content"]["ename"], "ZeroDivisionError", f"{protocol}: error")

        # The gateway's own model saw the activity, in the format the front parses.
        gm = http_request("GET", f"/api/kernels/{kid}").json()
        parse_iso(gm["last_activity"])

        r = front("DELETE", f"/api/kernels/{kid}")
        check_eq(r.status, 204, "front DELETE")
        poll(lambda: kid not in gateway_ids(), 20, 0.2, "kernel gone from the gateway")


@test
def test_interrupt_through_front():
    with front_kernel() as model:
        kid = model["id"]
        with KernelWS(kid, base_url=FRONT["url"], token=FRONT_TOKEN) as ws:
            ws.kernel_info(timeout=60)
            msg_id = ws.execute("import time\nprint('zz', flush=True)\ntime.sleep(30)")
            ws.wait_for(lambda m: m["msg_type"] == "stream"
                        and m["parent_header"].get("msg_id") == msg_id, 30, "sleep started")
            time.sleep(0.2)
            t0 = time.monotonic()
            r = front("POST", f"/api/kernels/{kid}/interrupt")
            check_eq(r.status, 204, f"front interrupt ({r.body[:200]!r})")
            reply = ws.reply_to(msg_id, timeout=10)
            dt = time.monotonic() - t0
            check(dt <= 3.0, f"reply soon after the interrupt (took {dt:.2f} s)")
            check_eq(reply["content"].get("ename"), "KeyboardInterrupt", "KeyboardInterrupt")


@test
def test_restart_through_front():
    with front_kernel() as model:
        kid = model["id"]
        with KernelWS(kid, base_url=FRONT["url"], token=FRONT_TOKEN) as ws:
            ws.kernel_info(timeout=60)
            check_eq(ws.run("y_e2e = 7\ny_e2e").result_text(), "7", "state set")
        r = front("POST", f"/api/kernels/{kid}/restart")
        check_eq(r.status, 200, f"front restart ({r.body[:300]!r})")
        check_eq(r.json()["id"], kid, "same kernel after restart")
        with KernelWS(kid, base_url=FRONT["url"], token=FRONT_TOKEN) as ws:
            ws.kernel_info(timeout=60)
            ex = ws.run("y_e2e")
            check_eq(ex.reply["content"].get("ename"), "NameError", "state cleared")


@pytest.fixture(scope="module", autouse=True)
def front_server(request):
    """The front jupyter_server, started once for the module and always stopped; its log's
    tail is shown when a test failed."""
    try:
        start_front()
    except Exception:
        stop_front()
        raise
    yield
    if request.session.testsfailed:
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        reporter.write_line("---- front jupyter_server log (tail) ----")
        reporter.write_line(front_log_tail())
    stop_front()


if __name__ == "__main__":
    sys.exit(run_tests())
