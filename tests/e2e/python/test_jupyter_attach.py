#!/usr/bin/python3
"""The README's Jupyter attach commands, as written there: jupyter-nbclassic (Debian 12's
classic notebook UI on jupyter_server 1.23, package python3-nbclassic) with --gateway-url to
the server under test, on a free port.

- As root, the command without --allow-root refuses to start and says why.
- With --allow-root as root, and without it as an unprivileged user, it starts and prints a
  /tree?token= address; that page is the notebook UI, a notebook's page opens, and the
  session the page makes gets a kernel on the server under test that runs code through the
  front's WebSocket; deleting the session deletes the kernel.

  CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T /usr/bin/python3 test_jupyter_attach.py [-k NAME]
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    BASE_URL, KERNEL_NAME, TOKEN, KernelWS, SkipTest, check, check_eq, free_port, http_request,
    poll, run_tests, stop_process, test,
)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
START_TIMEOUT = 120  # jupyter_server imports a lot; a loaded 2-core machine is slow
NOBODY = 65534


def readme_commands():
    """The two jupyter-nbclassic lines of the README's marked block: (plain, as root)."""
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    block = re.search(r"<!-- tests/e2e/python/test_jupyter_attach.py runs [^>]*-->\s*"
                      r"```sh\n(.*?)```", readme, re.S)
    check(block, "README.md has the marked attach block")
    lines = [line for line in block.group(1).splitlines()
             if line.startswith("jupyter-nbclassic ")]
    check_eq(len(lines), 2, "two jupyter-nbclassic lines")
    check_eq(lines[1], lines[0] + " --allow-root", "the root line adds --allow-root")
    return lines


def argv_of(line, port):
    """A README line with this server's URL and token and a free port for the front."""
    argv = shlex.split(line)
    replacements = {"--gateway-url=http://127.0.0.1:8888": f"--gateway-url={BASE_URL}",
                    "--GatewayClient.auth_token=$TOKEN": f"--GatewayClient.auth_token={TOKEN}",
                    "--port=8889": f"--port={port}"}
    for old, new in replacements.items():
        check_eq(argv.count(old), 1, f"the README line has {old}")
        argv[argv.index(old)] = new
    command = shutil.which(argv[0])
    check(command, f"{argv[0]} is installed (Debian package python3-nbclassic)")
    return [command] + argv[1:]


class Front:
    """The README's command running in a directory of its own (its HOME too), as root or
    as `uid`; the log holds what it printed."""

    def __init__(self, line, uid=None):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="callisto-e2e-attach-")
        env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
        env.update(HOME=self.dir, JUPYTER_CONFIG_DIR=os.path.join(self.dir, ".jupyter-config"))
        if os.environ.get("CALLISTO_CA"):  # an https:// server: what the README says to set
            env["SSL_CERT_FILE"] = os.environ["CALLISTO_CA"]
        extra = {}
        if uid is not None:
            os.chown(self.dir, uid, uid)
            extra = {"user": uid, "group": uid, "extra_groups": []}
        self.log_path = os.path.join(self.dir, "front.log")
        self.log = open(self.log_path, "w+b")
        self.proc = subprocess.Popen(argv_of(line, self.port), stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env, cwd=self.dir,
                                     start_new_session=True, **extra)

    def output(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def address(self):
        """(base URL, token) from the /tree?token= address it prints, once it answers."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            found = re.search(r"http://(?:localhost|127\.0\.0\.1):(\d+)/tree\?token=(\w+)",
                              self.output())
            if found:
                check_eq(int(found.group(1)), self.port, "it serves on --port")
                base = f"http://127.0.0.1:{self.port}"
                try:
                    if http_request("GET", "/api", base_url=base, token=found.group(2),
                                    timeout=5).status == 200:
                        return base, found.group(2)
                except OSError:
                    pass
            check(self.proc.poll() is None, "the front exited", self.output()[-3000:])
            check(time.monotonic() < deadline, "the front is not up", self.output()[-3000:])
            time.sleep(0.3)

    def stop(self):
        stop_process(self.proc)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def gateway_ids():
    return [k["id"] for k in http_request("GET", "/api/kernels").json()]


def check_the_notebook_ui(front):
    base, token = front.address()

    def get(path, **kw):
        return http_request("GET", path, base_url=base, token=token, **kw)

    r = get("/", auth="query")
    check_eq(r.status, 302, "/ redirects")
    check(r.headers["location"].split("?")[0].endswith("/tree"), "to the file list", r.headers)
    r = get("/tree", auth="query")
    check_eq(r.status, 200, "the file list")
    check(b"<title>Home</title>" in r.body and b"notebook_list" in r.body,
          "the classic notebook UI, not an empty Jupyter Server page", r.body[:300])
    specs = get("/api/kernelspecs").json()
    check_eq(sorted(specs["kernelspecs"]),
             sorted(http_request("GET", "/api/kernelspecs").json()["kernelspecs"]),
             "New offers the server's kernelspecs")

    r = http_request("PUT", "/api/contents/attach.ipynb", {"type": "notebook", "content": {
        "nbformat": 4, "nbformat_minor": 5, "cells": [],
        "metadata": {"kernelspec": {"name": KERNEL_NAME, "display_name": KERNEL_NAME}}}},
        base_url=base, token=token)
    check_eq(r.status, 201, f"a notebook file beside the front ({r.body[:200]!r})")
    r = get("/notebooks/attach.ipynb", auth="query")
    check_eq(r.status, 200, "the notebook's page")
    check(b'data-notebook-name="attach.ipynb"' in r.body, "the notebook page", r.body[:300])

    # What the page does next: a session for the notebook, then the kernel's WebSocket.
    r = http_request("POST", "/api/sessions", {"path": "attach.ipynb", "type": "notebook",
                                               "name": "", "kernel": {"name": KERNEL_NAME}},
                     base_url=base, token=token)
    check_eq(r.status, 201, f"the notebook's session ({r.body[:300]!r})")
    session, kernel_id = r.json()["id"], r.json()["kernel"]["id"]
    check(kernel_id in gateway_ids(), "the notebook's kernel is the server's", kernel_id)
    with KernelWS(kernel_id, base_url=base, token=token) as ws:
        # Resent until answered: jupyter_server 1.23 drops what arrives before its own
        # connection to the gateway is open (the README says what a user sees).
        ws.kernel_info(timeout=90)
        check_eq(ws.run("6 * 7").result_text(), "42", "a cell runs on the server's kernel")
    r = http_request("DELETE", f"/api/sessions/{session}", base_url=base, token=token)
    check_eq(r.status, 204, "closing the notebook's session")
    poll(lambda: kernel_id not in gateway_ids(), 30, 0.3, "its kernel is gone from the server")


@test
def test_as_root_the_readme_command_needs_allow_root():
    if os.geteuid() != 0:
        raise SkipTest("not root")
    plain, _ = readme_commands()
    with Front(plain) as front:
        try:
            code = front.proc.wait(START_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError("it started as root without --allow-root") from None
        check(code != 0, "it exits with an error", code)
        check("Running as root is not recommended. Use --allow-root to bypass."
              in front.output(), "and says so", front.output()[-2000:])


@test
def test_the_readme_command_for_root_opens_the_notebook_ui():
    if os.geteuid() != 0:
        raise SkipTest("not root")
    _, as_root = readme_commands()
    with Front(as_root) as front:
        check_the_notebook_ui(front)


@test
def test_the_readme_command_as_an_unprivileged_user_opens_the_notebook_ui():
    plain, _ = readme_commands()
    if os.geteuid() != 0:  # already unprivileged: run it as we are
        with Front(plain) as front:
            check_the_notebook_ui(front)
        return
    with Front(plain, uid=NOBODY) as front:
        check_the_notebook_ui(front)


if __name__ == "__main__":
    sys.exit(run_tests())
