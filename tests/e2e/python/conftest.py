"""pytest's hooks and fixtures for the end-to-end suites.

- A server: the suites run against CALLISTO_URL with CALLISTO_TOKEN, as e2e_tests.cpp starts
  them. Without CALLISTO_URL, `python3 -m pytest tests/e2e/python/...` starts the build's
  callisto itself (CALLISTO_E2E_BINARY, else build/gateway/callisto) on a free loopback port
  with a token of its own, as e2e_tests.cpp's server_process does, and stops it at the end.
- `context`: a /v1 context of the test's own (@pytest.mark.context(body, token=...) says what
  to ask for, as create_context's arguments); `events`: that context's events WebSocket;
  `kernel_ws`: a kernel of its own and a WebSocket to it. All go after the test, whatever
  happened (a context the test deleted itself is deleted again quietly).
- --select NAME runs the tests whose name holds NAME (repeatable: any of them), as the
  scripts' own -k always has, matched against the test's name only (pytest's -k matches the
  file's name too).
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
_started = {}  # the server this session started, if any


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server():
    binary = os.environ.get("CALLISTO_E2E_BINARY", os.path.join(ROOT, "build/gateway/callisto"))
    if not os.access(binary, os.X_OK):
        raise pytest.UsageError(f"no CALLISTO_URL, and no server to start at {binary}: build it "
                                "(make build) or set CALLISTO_E2E_BINARY")
    port = _free_port()
    token = f"e2e-token-{os.getpid()}-{port}"
    scratch = tempfile.mkdtemp(prefix=f"cle2e-{port}-")
    os.chmod(scratch, 0o711)  # the kernels, as the sandbox's uids, reach their workdirs below
    log = open(os.path.join(scratch, "callisto.log"), "wb")
    proc = subprocess.Popen(
        [binary, "--ip=127.0.0.1", f"--port={port}", f"--token={token}",
         f"--runtime-dir=/tmp/cle2e-{port}", f"--workdir-root={scratch}/work", "--shed-load=off"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url + "/api", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            log.close()
            with open(log.name, errors="replace") as f:
                why = f.read()[-4000:]
            shutil.rmtree(scratch, ignore_errors=True)
            raise pytest.UsageError(f"{binary} did not start:\n{why}")
        time.sleep(0.05)
    _started.update(proc=proc, log=log, scratch=scratch)
    os.environ.update(CALLISTO_URL=url, CALLISTO_TOKEN=token, CALLISTO_PID=str(proc.pid))


def pytest_addoption(parser):
    parser.addoption("--select", action="append", default=[], metavar="NAME",
                     help="run the tests whose name holds NAME (repeatable: any of them)")


def pytest_configure(config):
    # Before any suite imports e2e_client, which reads CALLISTO_URL once.
    if "CALLISTO_URL" not in os.environ and not config.option.collectonly:
        _start_server()


def pytest_unconfigure(config):
    proc = _started.get("proc")
    if proc is None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    _started["log"].close()
    shutil.rmtree(_started["scratch"], ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    names = config.getoption("select")
    if not names:
        return
    chosen, dropped = [], []
    for item in items:
        (chosen if any(n in item.name for n in names) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = chosen


@pytest.fixture
def context(request):
    """A /v1 context of the test's own, deleted after it: create_context()'s, or with the
    arguments of the test's @pytest.mark.context(body, token=...)."""
    import e2e_client
    mark = request.node.get_closest_marker("context")
    args, kwargs = (mark.args, mark.kwargs) if mark else ((), {})
    ctx = e2e_client.create_context(*args, **kwargs)
    yield ctx
    e2e_client.delete_context(ctx["id"], token=kwargs.get("token"))


@pytest.fixture
def events(context):
    """The events WebSocket of the test's `context` (/v1/contexts/{id}/events), closed after
    the test; a test that names `context` too gets the same context."""
    import v1_client
    ws = v1_client.events_ws(context)
    yield ws
    ws.close()


@pytest.fixture
def kernel_ws():
    """A kernel of the test's own and a WebSocket to it, both gone after the test."""
    import e2e_client
    with e2e_client.kernel() as k, e2e_client.KernelWS(k["id"]) as ws:
        yield ws
