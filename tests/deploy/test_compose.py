#!/usr/bin/python3
"""compose.yaml, really run: a Debian 12 base made with debootstrap (no registry is reachable;
the base is cached between runs), Debian's dockerd started here on its own socket and data
directory, the images built from the repository's Dockerfiles, `docker-compose up`, then two
replicas behind nginx driven by test_nginx_replicas.py (every user on one replica, the users
over both, the WebSocket and /v1 through nginx, /metrics on both), Prometheus asked whether
it scrapes both, the kernels' sandbox (no network), and a snapshot taken on one replica restored
on the other (their shared snapshot volume). Everything it made goes at the end, the cached base excepted.

  /usr/bin/python3 tests/deploy/test_compose.py SOURCE_DIR [CALLISTO_BINARY]

CALLISTO_BINARY (only for --hash-token) defaults to build/gateway/callisto.
"""

import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

SOURCE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e", "python"))

from e2e_client import free_port, stop_process  # noqa: E402
CACHE = "/var/cache/callisto-tests"
DOCKER = "/usr/bin/docker"  # Debian's client, matching its dockerd
BASE_IMAGE = "callisto-test-base:bookworm"
PROJECT = "callisto-compose-test"


def log(*what):
    print(time.strftime("%H:%M:%S"), *what, flush=True)


def run(cmd, env=None, timeout=1800, check=True, quiet=False):
    log("$", " ".join(cmd))
    p = subprocess.run(cmd, env=env, timeout=timeout, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if not quiet or p.returncode != 0:
        print(p.stdout[-6000:], flush=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited with {p.returncode}")
    return p



def base_tarball():
    """A minimal Debian 12 root, made once a month with debootstrap and kept."""
    os.makedirs(CACHE, exist_ok=True)
    tarball = os.path.join(CACHE, f"bookworm-minbase-{datetime.date.today():%Y%m}.tar")
    if os.path.exists(tarball):
        log("cached base", tarball)
        return tarball
    root = tempfile.mkdtemp(prefix="callisto-debootstrap-")
    try:
        run(["debootstrap", "--variant=minbase", "bookworm", root, "http://deb.debian.org/debian"],
            timeout=1200, quiet=True)
        run(["tar", "-C", root, "-cf", tarball + ".part", "."], quiet=True)
        os.rename(tarball + ".part", tarball)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return tarball


class RunningDockerd:
    """A daemon that already runs (the host's, or DOCKER_HOST's): used, never stopped."""

    def __init__(self, env):
        self.env = env

    def close(self):
        pass


def docker_daemon(workdir):
    """The host's daemon when one answers (two daemons would fight over docker0 and
    iptables), else one of our own."""
    if run([DOCKER, "info"], check=False, quiet=True).returncode == 0:
        log("using the running Docker daemon")
        return RunningDockerd(dict(os.environ))
    return Dockerd(workdir)


class Dockerd:
    """Debian's dockerd on its own socket, data and exec roots, stopped at the end."""

    def __init__(self, workdir):
        self.root = os.path.join(workdir, "docker")
        self.sock = os.path.join(workdir, "docker.sock")
        self.log = open(os.path.join(workdir, "dockerd.log"), "w")
        # Niced, and so are the image builds it runs: `make test` runs this test beside the
        # other suites, whose cases wait on kernels with deadlines.
        self.proc = subprocess.Popen(
            ["nice", "-n", "10", "dockerd", f"--data-root={self.root}/data", f"--exec-root={self.root}/exec",
             f"--pidfile={self.root}/dockerd.pid", f"-H=unix://{self.sock}",
             "--log-level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.env = dict(os.environ, DOCKER_HOST=f"unix://{self.sock}")
        deadline = time.monotonic() + 60
        while run([DOCKER, "info"], env=self.env, check=False, quiet=True).returncode != 0:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("dockerd did not start; see " + self.log.name)
            time.sleep(1)

    def close(self):
        stop_process(self.proc, timeout=60)
        self.log.close()


def users_file(workdir, binary):
    """Twelve users and an admin, as test_nginx_replicas.py expects."""
    tokens = [f"compose-user-{i}-token" for i in range(12)]
    admin = "compose-admin-token"
    entries = [{"name": f"user{i}", "token_sha256": hashlib.sha256(t.encode()).hexdigest()}
               for i, t in enumerate(tokens)]
    entries.append({"name": "ops", "role": "admin",
                    "token_sha256": hashlib.sha256(admin.encode()).hexdigest()})
    # The server's own hash must agree with ours.
    got = run([binary, f"--hash-token={admin}"], quiet=True).stdout.strip()
    assert got == entries[-1]["token_sha256"], (got, entries[-1])
    path = os.path.join(workdir, "users.json")
    with open(path, "w") as f:
        json.dump(entries, f)
    with open(os.path.join(workdir, "metrics-token"), "w") as f:
        f.write(admin)
    return path, tokens, admin


def wait_for(what, fn, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if fn():
                log("ok:", what)
                return
        except OSError:
            pass
        time.sleep(1)
    raise RuntimeError("timed out: " + what)


def post_json(url, token, body, patience=180):
    """POST as a well-behaved client: the replicas shed load by default, and CI runs this
    beside the e2e suite on two cores, so a 503 with Retry-After is waited out and asked again
    (within `patience` seconds)."""
    deadline = time.monotonic() + patience
    while True:
        req = urllib.request.Request(url, method="POST", data=json.dumps(body).encode(),
                                     headers={"Authorization": f"token {token}",
                                              "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            after = e.headers.get("Retry-After")
            if e.code != 503 or after is None or time.monotonic() >= deadline:
                raise
            log(f"503 {e.read()[:200]!r}; retrying after {after} s")
            time.sleep(min(float(after), 10))


def get_json(url, token=None):
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"} if token else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def main():
    binary = sys.argv[2] if len(sys.argv) > 2 else os.path.join(SOURCE, "build/gateway/callisto")
    workdir = tempfile.mkdtemp(prefix="callisto-compose-")
    dockerd = None
    compose = None
    try:
        tarball = base_tarball()
        dockerd = docker_daemon(workdir)
        env = dockerd.env
        with open(tarball, "rb") as f:
            log("$ docker import", tarball)
            subprocess.run([DOCKER, "import", "-", BASE_IMAGE], stdin=f, env=env, check=True,
                           stdout=subprocess.DEVNULL, timeout=600)
        users, tokens, admin = users_file(workdir, binary)
        ports = {k: free_port() for k in ("CALLISTO_PORT", "CALLISTO_1_PORT", "CALLISTO_2_PORT",
                                          "PROMETHEUS_PORT")}
        # Uids of their own, never the e2e suite's (60000-61399): per-uid process limits count
        # across containers, so a replica must not share them with a host's gateway.
        env = dict(env, BASE_IMAGE=BASE_IMAGE, CALLISTO_USERS_FILE=users,
                   CALLISTO_1_UIDS="63000-63999", CALLISTO_2_UIDS="64000-64999",
                   CALLISTO_METRICS_TOKEN_FILE=os.path.join(workdir, "metrics-token"),
                   **{k: str(v) for k, v in ports.items()})
        compose = ["docker-compose", "-p", PROJECT, "-f", os.path.join(SOURCE, "compose.yaml")]
        run(compose + ["build"], env=env, timeout=2400, quiet=True)
        run(compose + ["up", "-d"], env=env, timeout=600)
        replicas = [f"http://127.0.0.1:{ports['CALLISTO_1_PORT']}",
                    f"http://127.0.0.1:{ports['CALLISTO_2_PORT']}"]
        for r in replicas:
            wait_for(f"{r}/readyz", lambda r=r: urllib.request.urlopen(
                r + "/readyz", timeout=5).status == 200, 180)
        nginx = f"http://127.0.0.1:{ports['CALLISTO_PORT']}"
        wait_for("nginx", lambda: urllib.request.urlopen(nginx + "/healthz", timeout=5).status
                 == 200, 120)

        client = subprocess.run(
            ["/usr/bin/python3", os.path.join(SOURCE, "tests/e2e/python/test_nginx_replicas.py")],
            env=dict(os.environ, CALLISTO_URL=nginx, CALLISTO_TOKEN=admin,
                     CALLISTO_NGINX_URL=nginx, CALLISTO_REPLICAS=" ".join(replicas),
                     CALLISTO_USER_TOKENS=" ".join(tokens), CALLISTO_ADMIN_TOKEN=admin,
                     CALLISTO_SOURCE_DIR=SOURCE),
            timeout=900)
        if client.returncode != 0:
            raise RuntimeError("the two-replica checks failed through compose's nginx")

        prometheus = f"http://127.0.0.1:{ports['PROMETHEUS_PORT']}"

        def both_up():
            result = get_json(prometheus + "/api/v1/query?" +
                              urllib.parse.urlencode({"query": 'up{job="callisto"}'}))
            values = {s["metric"]["instance"]: s["value"][1] for s in result["data"]["result"]}
            log("prometheus up:", values)
            return values == {"callisto-1:8888": "1", "callisto-2:8888": "1"}

        wait_for("Prometheus scraping both replicas", both_up, 120)
        # The web UI is found without --web-root: the image puts it where the gateway looks
        # by default (<binary dir>/../share/callisto/web).
        with urllib.request.urlopen(replicas[0] + "/", timeout=10) as page:
            html = page.read().decode("utf-8", "replace")
            log("GET / ->", page.status, page.headers.get("Content-Type"))
        if "<html" not in html.lower():
            raise RuntimeError("the image serves no web UI at / without --web-root")
        # The kernels inside run sandboxed: a kernel has no network but its own loopback. Read
        # from the kernel's side (its interfaces), so the test sends nothing off the machine.
        stdout = post_json(replicas[0] + "/v1/executions", admin, {
            "code": 'import socket\nprint("interfaces:", sorted(n for _, n in socket.if_nameindex()))'
        })["stdout"]
        log("sandbox check:", stdout.strip())
        if "interfaces: ['lo']" not in stdout:
            raise RuntimeError("a kernel in the container has a network interface besides lo")
        # The replicas share one snapshot directory: a user's snapshot taken on one is
        # restored on the other, state and files, as when the first replica is lost.
        user = tokens[0]
        ctx = post_json(replicas[0] + "/v1/contexts", user, {})
        ran = post_json(replicas[0] + f"/v1/contexts/{ctx['id']}/executions", user,
                        {"code": "x = 41\nopen('kept.txt', 'w').write('on replica 1')"})
        if ran["status"] != "ok":
            raise RuntimeError(f"the state was not set up: {ran}")
        snapshot = post_json(replicas[0] + f"/v1/contexts/{ctx['id']}/snapshots", user, {})
        restored = post_json(replicas[1] + "/v1/contexts", user,
                             {"from_snapshot": snapshot["id"]})
        probe = post_json(replicas[1] + f"/v1/contexts/{restored['id']}/executions", user,
                          {"code": "print(x + 1, open('kept.txt').read())"})
        log("restored on replica 2:", probe["stdout"].strip())
        if probe["stdout"].strip() != "42 on replica 1":
            raise RuntimeError(f"a snapshot of replica 1 did not come back on replica 2: {probe}")
        for url in (f"{replicas[0]}/v1/contexts/{ctx['id']}",
                    f"{replicas[1]}/v1/contexts/{restored['id']}",
                    f"{replicas[1]}/v1/snapshots/{snapshot['id']}"):
            urllib.request.urlopen(urllib.request.Request(
                url, method="DELETE", headers={"Authorization": f"token {user}"}), timeout=60)
        log("PASS")
        return 0
    except Exception as e:  # noqa: BLE001 - report, clean up, fail
        log("FAIL:", e)
        if compose:
            run(compose + ["logs", "--tail=150", "callisto-1", "callisto-2", "nginx"], env=env,
                check=False, timeout=120)
        return 1
    finally:
        if compose:
            run(compose + ["down", "-v", "--rmi", "all", "--remove-orphans"], env=env,
                check=False, timeout=600, quiet=True)
        if dockerd:
            run([DOCKER, "rmi", "-f", BASE_IMAGE], env=dockerd.env, check=False, quiet=True)
            dockerd.close()  # ours: its data root goes with the work directory
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
