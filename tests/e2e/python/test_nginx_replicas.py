#!/usr/bin/python3
"""Two Callisto replicas behind Debian's nginx, with the routing of deploy/nginx-callisto.conf
(the file compose.yaml uses): every user stays on one replica (their kernel, its WebSocket by
header or by ?token=, their /v1 context), and the users spread over both replicas.

  CALLISTO_REPLICAS="http://127.0.0.1:P1 http://127.0.0.1:P2" CALLISTO_USER_TOKENS="t1 t2 ..." \\
  CALLISTO_ADMIN_TOKEN=T CALLISTO_SOURCE_DIR=... /usr/bin/python3 test_nginx_replicas.py

Starts nginx itself on a free loopback port and always stops it, unless CALLISTO_NGINX_URL
names one already running (compose.yaml's, in tests/deploy/test_compose.py).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (KernelWS, check, check_eq, free_port, http_request, poll,  # noqa: E402
                        run_tests, stop_process, test)

REPLICAS = os.environ.get("CALLISTO_REPLICAS", "").split()
USERS = os.environ.get("CALLISTO_USER_TOKENS", "").split()
ADMIN = os.environ.get("CALLISTO_ADMIN_TOKEN", "")
ROUTING = os.path.join(os.environ.get("CALLISTO_SOURCE_DIR", "."), "deploy",
                       "nginx-callisto.conf")



class RunningNginx:
    """One started by someone else."""

    def __init__(self, url):
        self.url = url

    def close(self):
        pass


class Nginx:
    """nginx in the foreground, its files in a temporary directory: the main nginx.conf, and
    next to it the two files the routing includes (the replicas and the listen line)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="callisto-nginx-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        with open(os.path.join(self.dir, "callisto-replicas.conf"), "w") as f:
            for r in REPLICAS:
                f.write(f"server {r.split('://', 1)[1]};\n")
        with open(os.path.join(self.dir, "callisto-listen.conf"), "w") as f:
            f.write(f"listen 127.0.0.1:{self.port};\n")
        d = self.dir
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(f"""daemon off;
master_process on;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    include {ROUTING};
}}
""")
        subprocess.run(["/usr/sbin/nginx", "-t", "-p", d, "-c", f"{d}/nginx.conf"], check=True,
                       capture_output=True, timeout=30)
        self.proc = subprocess.Popen(["/usr/sbin/nginx", "-p", d, "-c", f"{d}/nginx.conf"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        poll(lambda: self._answers(), 20, 0.1, what="nginx answering")

    def _answers(self):
        try:
            return http_request("GET", "/healthz", auth=None, base_url=self.url).status == 200
        except OSError:
            return False

    def close(self):
        stop_process(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


def create(path, body, token, base_url, patience=180):
    """POST new work the way a well-behaved client does: a replica that sheds load answers 503
    with Retry-After (compose runs with --shed-load on, and CI runs it beside the e2e suite on
    two cores), so wait as told and ask again, within `patience` seconds."""
    deadline = time.monotonic() + patience
    while True:
        r = http_request("POST", path, body, token=token, base_url=base_url)
        after = r.headers.get("retry-after")
        if r.status != 503 or after is None or time.monotonic() >= deadline:
            return r
        print(f"  {path}: 503 {r.body[:200]!r}; retrying after {after} s", flush=True)
        time.sleep(min(float(after), 10))


def replica_of(kernel_id, token):
    """Which replica holds this kernel, asked of each directly; checks it is exactly one."""
    holders = [i for i, r in enumerate(REPLICAS)
               if http_request("GET", f"/api/kernels/{kernel_id}", token=token,
                               base_url=r).status == 200]
    check_eq(len(holders), 1, f"kernel {kernel_id} lives on one replica")
    return holders[0]


@test
def test_each_user_stays_on_one_replica_and_users_spread():
    check(len(REPLICAS) == 2 and len(USERS) >= 8, "two replicas, enough users", REPLICAS, USERS)
    given = os.environ.get("CALLISTO_NGINX_URL")
    nginx = RunningNginx(given) if given else Nginx()
    kernels = {}
    try:
        home = {}
        for token in USERS:
            r = create("/api/kernels", {"name": "python3"}, token, nginx.url)
            check_eq(r.status, 201, f"a kernel through nginx: {r!r}")
            kernels[token] = r.json()["id"]
            home[token] = replica_of(kernels[token], token)
        check_eq(set(home.values()), {0, 1}, "the users spread over both replicas")

        for token in USERS:
            kid = kernels[token]
            # Every later request of the user finds the kernel: it reaches the same replica.
            for _ in range(5):
                check_eq(http_request("GET", f"/api/kernels/{kid}", token=token,
                                      base_url=nginx.url).status, 200, "the same replica")
            # A second kernel joins the first.
            r = create("/api/kernels", {"name": "python3"}, token, nginx.url)
            check_eq(r.status, 201, f"a second kernel: {r!r}")
            check_eq(replica_of(r.json()["id"], token), home[token], "beside the first")
            http_request("DELETE", f"/api/kernels/{r.json()['id']}", token=token,
                         base_url=nginx.url)

        # The kernel WebSocket through nginx: by header, and by ?token= as browsers send it.
        for token in USERS[:3]:
            for auth in ("header", "query"):
                with KernelWS(kernels[token], auth=auth, token=token, base_url=nginx.url) as ws:
                    check_eq(ws.run("6 * 7").result_text(), "42", f"code over nginx ({auth})")
        # /v1: a context and an execution, on the user's replica.
        for token in USERS[:3]:
            c = create("/v1/contexts", {}, token, nginx.url)
            check_eq(c.status, 201, f"a context through nginx: {c!r}")
            ctx = c.json()
            check_eq(replica_of(ctx["kernel_id"], token), home[token], "on the user's replica")
            e = http_request("POST", f"/v1/contexts/{ctx['id']}/executions",
                             {"code": "print('via nginx')"}, token=token, base_url=nginx.url)
            check_eq(e.json()["stdout"], "via nginx\n", "an execution through nginx")
            check_eq(http_request("DELETE", f"/v1/contexts/{ctx['id']}", token=token,
                                  base_url=nginx.url).status, 204, "context deleted")
        # Both replicas served: their own metrics say so.
        for i, r in enumerate(REPLICAS):
            m = http_request("GET", "/metrics", token=ADMIN, base_url=r)
            check_eq(m.status, 200, f"/metrics on replica {i}")
            check('callisto_http_requests_total{route="kernel_create",code="201"}'
                  in m.body.decode(), f"replica {i} created kernels", m.body[:300])
    finally:
        for token, kid in kernels.items():
            http_request("DELETE", f"/api/kernels/{kid}", token=token, base_url=nginx.url)
        nginx.close()


if __name__ == "__main__":
    sys.exit(run_tests())
