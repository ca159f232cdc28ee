#!/usr/bin/python3
"""What the python3 zygote (--zygote=on, issue 13) changes: Callisto with --zygote=on, Callisto
with --zygote=off and jupyter_server (the reference), each started here on a free loopback
port, one after another, measured the same way, and stopped again.

  /usr/bin/python3 bench/zygote_bench.py [--quick] [--only start,import,oneshot,churn,memory]
      [--servers zygote,exec,jupyter_server] [--capacity N] [--out OUT.jsonl]
      [--callisto PATH] [--uid-base UID] [--timeout SECS] [--keep-logs]

Measurements (each bounded in count and in time; --quick: small counts and 5 s durations):
  start    POST /api/kernels -> kernel_info_reply on the kernel's WebSocket, N=20 sequential
           (each kernel deleted after); p50/p90 ms, and Callisto's `launch` of each kernel
  import   `import numpy, pandas, matplotlib.pyplot` timed inside a fresh kernel with
           time.perf_counter, N=5; p50 ms
  oneshot  Callisto only: POST /v1/executions {"policy": "fresh"} of
           `import numpy as np; print(np.arange(3).sum())` from 4 clients for 30 s;
           executions/s, p50/p90 ms, every stdout checked to be "3"
  churn    POST /api/kernels then DELETE, 4 in flight, for 30 s; kernels/s
           (both also give the whole machine's busy CPU per operation, from /proc/stat:
           what bounds the rate when the cores are saturated)
  memory   K=20 kernels each with the data stack imported and a figure drawn, 3 s later the
           PSS of each kernel's process tree from /proc/PID/smaps_rollup (children through
           /proc/PID/task/*/children); per kernel, and with the zygote's own PSS shared out
  capacity only with --capacity N, only Callisto --zygote=on: up to N kernels with the data
           stack kept (stops adding below 2 GiB MemAvailable), then 200 GET /api/kernels;
           p50/p99 ms, total PSS, MemAvailable before/after

Callisto runs with --pool-size=0 and its sandbox on (so as root, like the e2e tests), each
instance with its own --runtime-dir, --workdir-root and --sandbox-uids. Prints one JSON line
per (server, measurement) as it goes (appended to --out too) and a Markdown table at the end;
progress goes to stderr. Needs websocket-client (Debian python3-websocket) and jupyter_server
in the Python that runs it (/usr/bin/python3 here).
"""

import argparse
import datetime
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import websocket

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVERS = ("zygote", "exec", "jupyter_server")
BENCHES = ("start", "import", "oneshot", "churn", "memory", "capacity")
STACK = "import numpy, pandas, matplotlib.pyplot"
DRAW = 'import numpy, pandas, matplotlib.pyplot as plt; plt.plot([1,2]); plt.close("all")'
ONESHOT_CODE = "import numpy as np; print(np.arange(3).sum())"
MIN_AVAILABLE = 2 << 30  # capacity stops adding kernels below this MemAvailable


def log(*args):
    print("[%s]" % time.strftime("%H:%M:%S"), *args, file=sys.stderr, flush=True)


def now():
    return time.perf_counter()


def pct(values, p):
    """Nearest rank on the sorted values (as bench/context_start.py)."""
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def ms(seconds):
    return round(seconds * 1000, 1)


class BenchError(Exception):
    pass


# -- machine and processes -------------------------------------------------------------------

def machine_info(callisto):
    def git(*args):
        try:
            return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
    try:
        built = datetime.datetime.fromtimestamp(os.stat(callisto).st_mtime, datetime.timezone.utc)
        built = built.strftime("%Y-%m-%dT%H:%M:%SZ")
    except OSError:
        built = None
    return {"nproc": os.cpu_count(), "kernel": os.uname().release,
            "mem_total_kib": meminfo().get("MemTotal", 0) // 1024,
            "commit": git("rev-parse", "HEAD"), "worktree_dirty": bool(git("status", "--porcelain")),
            "callisto_binary": callisto, "callisto_built": built}


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, rest = line.split(":", 1)
            out[key] = int(rest.split()[0]) * 1024
    return out


def read(path, binary=False):
    try:
        with open(path, "rb" if binary else "r") as f:
            return f.read()
    except OSError:
        return None


def cmdline(pid):
    raw = read("/proc/%d/cmdline" % pid, binary=True)
    return [a.decode(errors="replace") for a in raw.split(b"\0")[:-1]] if raw else []


def children(pid):
    """Every thread's children (a child belongs to the thread that forked it)."""
    out = []
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tasks:
        text = read("/proc/%d/task/%s/children" % (pid, t))
        if text:
            out.extend(int(c) for c in text.split())
    return out


def tree(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children(p))
    return out


def pss(pid):
    """Pss of one process in bytes, None if it is gone."""
    text = read("/proc/%d/smaps_rollup" % pid)
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return None


def tree_pss(pid):
    return sum(pss(p) or 0 for p in tree(pid))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# -- servers ---------------------------------------------------------------------------------

class Server:
    """One server process of ours: started, waited for, stopped, its temp dirs removed."""

    def __init__(self, name, args):
        self.name = name
        self.port = free_port()
        self.token = "zbench-" + secrets.token_hex(8)
        self.tmp = tempfile.mkdtemp(prefix="zb-%s-" % name[:3], dir="/tmp")  # short: ipc paths
        os.chmod(self.tmp, 0o755)  # the sandbox uids pass through it to the runtime dir
        self.log_path = os.path.join(self.tmp, "server.log")
        self.callisto = name in ("zygote", "exec")
        if self.callisto:
            first = args.uid_base + (0 if name == "zygote" else 500)
            uids = (first, first + 499)
            self.runtime_dir = os.path.join(self.tmp, "rt")
            self.workdir_root = os.path.join(self.tmp, "work")
            argv = [args.callisto, "--ip=127.0.0.1", "--port=%d" % self.port,
                    "--token=" + self.token, "--pool-size=0",
                    "--zygote=" + ("on" if name == "zygote" else "off"),
                    "--runtime-dir=" + self.runtime_dir, "--workdir-root=" + self.workdir_root,
                    "--sandbox-uids=%d-%d" % uids, "--log-level=" + os.environ.get("ZB_LOG_LEVEL", "info")]
        else:
            root = os.path.join(self.tmp, "root")
            os.mkdir(root)
            argv = [args.python, "-m", "jupyter_server", "--no-browser", "--allow-root",
                    "--ServerApp.ip=127.0.0.1", "--ServerApp.port=%d" % self.port,
                    "--ServerApp.token=" + self.token, "--ServerApp.root_dir=" + root]
        self.argv = argv
        self.keep_logs = args.keep_logs
        self.timeout = args.timeout
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid
        self.url = "http://127.0.0.1:%d" % self.port

    def log_tail(self, lines=15):
        text = read(self.log_path) or ""
        return "\n".join(text.splitlines()[-lines:])

    def check_alive(self):
        if self.proc.poll() is not None:
            raise BenchError("%s exited with status %s; log tail:\n%s"
                             % (self.name, self.proc.returncode, self.log_tail()))

    # HTTP, a new connection per request (the same for every server and thread)
    def request(self, method, path, body=None, timeout=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout or self.timeout)
        headers = {"Authorization": "token " + self.token}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise BenchError("%s %s: %r" % (method, path, exc))
        finally:
            conn.close()
        try:
            obj = json.loads(raw) if raw else None
        except ValueError:
            obj = raw[:300].decode(errors="replace")
        return resp.status, obj

    def create_kernel(self):
        st, obj = self.request("POST", "/api/kernels", {"name": "python3"})
        if st not in (200, 201) or not isinstance(obj, dict) or "id" not in obj:
            raise BenchError("POST /api/kernels -> %s %s" % (st, obj))
        return obj["id"]

    def delete_kernel(self, kid):
        st, obj = self.request("DELETE", "/api/kernels/" + kid)
        if st not in (200, 204):
            raise BenchError("DELETE /api/kernels/%s -> %s %s" % (kid, st, obj))

    def kernel_model(self, kid):
        st, obj = self.request("GET", "/api/kernels/" + kid)
        if st != 200 or not isinstance(obj, dict):
            raise BenchError("GET /api/kernels/%s -> %s %s" % (kid, st, obj))
        return obj

    def zygote_pid(self):
        for c in children(self.pid):
            argv = cmdline(c)
            if argv and argv[0].endswith("callisto-zygote"):
                return c
        return None

    def launch_of(self, kid, zygote_children_before=None):
        """(launch, source): from the model's `callisto` object, or, for a Callisto that has
        none, from the process tree (a new child of the zygote)."""
        if not self.callisto:
            return None, None
        model = self.kernel_model(kid)
        if isinstance(model.get("callisto"), dict):
            return model["callisto"].get("launch"), "model"
        z = self.zygote_pid()
        if z is None:
            return "exec", "process_tree"
        new = set(children(z)) - set(zygote_children_before or ())
        return ("zygote" if new else "exec"), "process_tree"

    def wait_up(self):
        deadline = now() + 60
        while now() < deadline:
            self.check_alive()
            try:
                st, _ = self.request("GET", "/api", timeout=2)
                if st == 200:
                    return
            except BenchError:
                pass
            time.sleep(0.1)
        raise BenchError("%s did not answer GET /api within 60 s; log tail:\n%s"
                         % (self.name, self.log_tail()))

    def warm_up(self):
        """One kernel created and deleted (first-kernel one-off costs are nobody's figure);
        for --zygote=on, repeated until a kernel comes from the zygote (at most 60 s)."""
        deadline = now() + 60
        while True:
            self.check_alive()
            z = self.zygote_pid()
            before = children(z) if z else []
            kid = self.create_kernel()
            try:
                launch, source = self.launch_of(kid, before)
            finally:
                self.delete_kernel(kid)
            if self.name != "zygote" or launch == "zygote":
                return launch, source
            if now() > deadline:
                raise BenchError("no kernel came from the zygote within 60 s (last launch %r "
                                 "from %s); log tail:\n%s" % (launch, source, self.log_tail()))
            time.sleep(0.5)

    def stop(self):
        """SIGTERM, wait; SIGKILL the group after 60 s. Returns a note on anything odd."""
        notes = []
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                notes.append("did not stop within 60 s of SIGTERM: killed")
                os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait()
        rc = self.proc.returncode
        if rc not in (0, -signal.SIGTERM, 128 + signal.SIGTERM):
            notes.append("exit status %s" % rc)
        if self.callisto:
            # a stopped Callisto leaves no kernel behind: anything naming its runtime dir is one
            left = []
            for _ in range(50):
                left = [int(d) for d in os.listdir("/proc") if d.isdigit()
                        and any(self.runtime_dir in a for a in cmdline(int(d)))]
                if not left:
                    break
                time.sleep(0.1)
            if left:
                notes.append("%d process(es) outlived it, e.g. pid %d" % (len(left), left[0]))
            if os.path.isdir(self.workdir_root):  # after a kill: detach what is mounted there
                for entry in os.listdir(self.workdir_root):
                    subprocess.run(["umount", "-l", os.path.join(self.workdir_root, entry)],
                                   capture_output=True)
        if notes or self.keep_logs:
            log("%s log kept: %s" % (self.name, self.log_path))
            for entry in os.listdir(self.tmp):
                if entry != "server.log":
                    shutil.rmtree(os.path.join(self.tmp, entry), ignore_errors=True)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
        return notes


# -- the kernel WebSocket (the legacy JSON format, as every Jupyter client speaks it) ----------

class Channel:
    def __init__(self, server, kid, timeout):
        self.ws = websocket.create_connection(
            "ws://127.0.0.1:%d/api/kernels/%s/channels" % (server.port, kid),
            header=["Authorization: token " + server.token], timeout=timeout,
            skip_utf8_validation=True)
        self.session = uuid.uuid4().hex

    def send(self, channel, msg_type, content):
        mid = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": mid, "msg_type": msg_type, "username": "zbench",
                       "session": self.session, "version": "5.3",
                       "date": datetime.datetime.now(datetime.timezone.utc).isoformat()},
            "parent_header": {}, "metadata": {}, "content": content, "channel": channel,
            "buffers": []}))
        return mid

    def recv(self, deadline):
        while True:
            left = deadline - now()
            if left <= 0:
                raise BenchError("no message in time")
            self.ws.settimeout(left)
            try:
                opcode, data = self.ws.recv_data()
            except websocket.WebSocketTimeoutException:
                raise BenchError("no message in time")
            except (OSError, websocket.WebSocketException) as exc:
                raise BenchError("websocket: %r" % exc)
            if opcode == websocket.ABNF.OPCODE_TEXT:
                return json.loads(data)
            if opcode == websocket.ABNF.OPCODE_BINARY:  # u32 offsets, JSON first
                n = struct.unpack("!I", data[:4])[0]
                offsets = struct.unpack("!%dI" % n, data[4:4 + 4 * n]) + (len(data),)
                return json.loads(data[offsets[0]:offsets[1]])

    def kernel_info(self, timeout):
        """kernel_info_request, then its reply; resent every 1 s while nothing answers."""
        deadline = now() + timeout
        ours = set()
        while True:
            ours.add(self.send("shell", "kernel_info_request", {}))
            retry = min(deadline, now() + 1.0)
            while now() < retry:
                try:
                    msg = self.recv(retry)
                except BenchError:
                    break
                if ((msg.get("parent_header") or {}).get("msg_id") in ours
                        and msg.get("msg_type", msg["header"]["msg_type"]) == "kernel_info_reply"):
                    return msg
            if now() >= deadline:
                raise BenchError("no kernel_info_reply within %.0f s" % timeout)

    def execute(self, code, timeout):
        """Runs code; returns its stdout once the reply and status idle have both come."""
        deadline = now() + timeout
        mid = self.send("shell", "execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})
        stdout, reply, idle = [], None, False
        while reply is None or not idle:
            msg = self.recv(deadline)
            if (msg.get("parent_header") or {}).get("msg_id") != mid:
                continue
            mt = msg["header"]["msg_type"]
            if mt == "execute_reply":
                reply = msg["content"]
            elif mt == "status" and msg["content"].get("execution_state") == "idle":
                idle = True
            elif mt == "stream" and msg["content"].get("name") == "stdout":
                stdout.append(msg["content"].get("text", ""))
            elif mt == "error":
                stdout.append("".join(msg["content"].get("traceback", [])))
        if reply.get("status") != "ok":
            raise BenchError("execute %s: %s: %s" % (reply.get("status"), reply.get("ename"),
                                                      reply.get("evalue")))
        return "".join(stdout)

    def close(self):
        try:
            self.ws.close(timeout=2)
        except Exception:
            pass


def ready_kernel(server, timeout):
    kid = server.create_kernel()
    try:
        ch = Channel(server, kid, timeout)
        ch.kernel_info(timeout)
    except Exception:
        server.delete_kernel(kid)
        raise
    return kid, ch


def delete_all(server, kids, workers=4):
    """Deletes kernels, `workers` at a time; returns the errors."""
    errors, lock, todo = [], threading.Lock(), list(kids)

    def work():
        while True:
            with lock:
                if not todo:
                    return
                kid = todo.pop()
            try:
                server.delete_kernel(kid)
            except BenchError as exc:
                with lock:
                    errors.append(str(exc))
    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


# -- measurements ----------------------------------------------------------------------------

def release(server, kid, ch, errors):
    """Closes a measurement's channel and deletes its kernel; a failed delete is an error."""
    if ch:
        ch.close()
    if kid:
        try:
            server.delete_kernel(kid)
        except BenchError as exc:
            errors.append(str(exc))


def bench_start(server, cfg):
    totals, creates, launches, sources, errors = [], [], {}, set(), []
    truncated = False
    end = now() + cfg.max_seconds
    for i in range(cfg.start_n):
        if now() + cfg.timeout > end:
            truncated = True
            break
        server.check_alive()
        z = server.zygote_pid() if server.callisto else None
        before = children(z) if z else []
        kid, ch = None, None
        try:
            t0 = now()
            kid = server.create_kernel()
            t1 = now()
            ch = Channel(server, kid, cfg.timeout)
            ch.kernel_info(cfg.timeout)
            t2 = now()
            totals.append(t2 - t0)
            creates.append(t1 - t0)
            launch, source = server.launch_of(kid, before)
            if launch:
                launches[launch] = launches.get(launch, 0) + 1
                sources.add(source)
            log("  start %d/%d: %.0f ms%s" % (i + 1, cfg.start_n, (t2 - t0) * 1e3,
                                             " (%s)" % launch if launch else ""))
        except BenchError as exc:
            errors.append(str(exc))
            log("  start %d failed: %s" % (i + 1, exc))
        finally:
            release(server, kid, ch, errors)
    if not totals:
        raise BenchError("no kernel started: %s" % "; ".join(errors[:3]))
    res = {"n": len(totals), "p50_ms": ms(statistics.median(totals)), "p90_ms": ms(pct(totals, 90)),
           "min_ms": ms(min(totals)), "max_ms": ms(max(totals)),
           "create_p50_ms": ms(statistics.median(creates)),
           "unit": "ms from POST /api/kernels to kernel_info_reply on the kernel's WebSocket"}
    if server.callisto:
        res["launch"] = launches
        res["launch_source"] = ",".join(sorted(sources))
    return res, errors, truncated


def bench_import(server, cfg):
    code = ("import time as _t; _t0 = _t.perf_counter(); %s; "
            "print('IMPORT_MS', (_t.perf_counter() - _t0) * 1000)" % STACK)
    inside, wall, errors = [], [], []
    truncated = False
    end = now() + cfg.max_seconds
    for i in range(cfg.import_n):
        if now() + 2 * cfg.timeout > end:
            truncated = True
            break
        server.check_alive()
        kid, ch = None, None
        try:
            kid, ch = ready_kernel(server, cfg.timeout)
            t0 = now()
            out = ch.execute(code, cfg.timeout)
            wall.append(now() - t0)
            value = float(out.split("IMPORT_MS", 1)[1].split()[0])
            inside.append(value / 1000)
            log("  import %d/%d: %.0f ms inside, %.0f ms wall" % (i + 1, cfg.import_n, value,
                                                                   wall[-1] * 1e3))
        except (BenchError, IndexError, ValueError) as exc:
            errors.append(str(exc))
            log("  import %d failed: %s" % (i + 1, exc))
        finally:
            release(server, kid, ch, errors)
    if not inside:
        raise BenchError("no import measured: %s" % "; ".join(errors[:3]))
    return {"n": len(inside), "p50_ms": ms(statistics.median(inside)),
            "min_ms": ms(min(inside)), "max_ms": ms(max(inside)),
            "wall_p50_ms": ms(statistics.median(wall)),
            "unit": "ms of `%s` by time.perf_counter in a fresh kernel (wall: execute_request "
                    "to status idle, seen by the client)" % STACK}, errors, truncated


def machine_busy_ms():
    """CPU time all cores have spent busy since boot (user, nice, system, irq, softirq,
    steal), in ms."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) * 1000 / os.sysconf("SC_CLK_TCK")


def run_clients(clients, duration, one):
    """`clients` threads calling one() until `duration` s have passed (none starts a call
    after that); returns (latencies, errors, elapsed, the machine's busy CPU ms meanwhile:
    server, kernels, and these clients too)."""
    lock = threading.Lock()
    lat, errors = [], []
    stop_at = now() + duration

    def work():
        while now() < stop_at:
            t0 = now()
            try:
                one()
                with lock:
                    lat.append(now() - t0)
            except Exception as exc:  # counted, and the client goes on
                with lock:
                    errors.append(str(exc))
                time.sleep(0.2)
    t0, busy0 = now(), machine_busy_ms()
    threads = [threading.Thread(target=work, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return lat, errors, now() - t0, machine_busy_ms() - busy0


def client_load(server, cfg, one, counted, nothing_done):
    """run_clients with cfg's clients and duration, the server checked alive after: the
    latencies, the errors, and what each such bench reports first (clients, seconds, the calls
    that succeeded as `counted`, failed, per second, the machine's busy ms per call). Raises
    BenchError, `nothing_done` and the first errors, when no call succeeded."""
    lat, errors, elapsed, busy = run_clients(cfg.clients, cfg.duration, one)
    server.check_alive()
    if not lat:
        raise BenchError("%s: %s" % (nothing_done, "; ".join(errors[:3])))
    return lat, errors, {"clients": cfg.clients, "seconds": round(elapsed, 1), counted: len(lat),
                         "failed": len(errors), "per_s": round(len(lat) / elapsed, 2),
                         "machine_busy_ms_per_op": round(busy / len(lat), 1)}


def bench_oneshot(server, cfg):
    body = {"code": ONESHOT_CODE, "policy": "fresh", "timeout": cfg.timeout}

    def one():
        st, obj = server.request("POST", "/v1/executions", body, timeout=cfg.timeout + 30)
        if st != 200 or not isinstance(obj, dict):
            raise BenchError("POST /v1/executions -> %s %s" % (st, obj))
        if obj.get("status") != "ok" or (obj.get("stdout") or "").strip() != "3":
            raise BenchError("execution %s, stdout %r, error %s" % (
                obj.get("status"), obj.get("stdout"), obj.get("error")))
    lat, errors, result = client_load(server, cfg, one, "ok", "no one-shot execution succeeded")
    result.update({"p50_ms": ms(statistics.median(lat)), "p90_ms": ms(pct(lat, 90)),
                   "max_ms": ms(max(lat)),
                   "unit": "POST /v1/executions policy fresh, %d clients: finished ok per "
                           "second, latency of each" % cfg.clients})
    return result, errors, False


def bench_churn(server, cfg):
    lock, creates, deletes = threading.Lock(), [], []

    def one():
        t0 = now()
        kid = server.create_kernel()
        t1 = now()
        server.delete_kernel(kid)
        with lock:
            creates.append(t1 - t0)
            deletes.append(now() - t1)
    lat, errors, result = client_load(server, cfg, one, "cycles", "no kernel created and deleted")
    result.update({"cycle_p50_ms": ms(statistics.median(lat)), "cycle_max_ms": ms(max(lat)),
                   "create_p50_ms": ms(statistics.median(creates)),
                   "create_max_ms": ms(max(creates)),
                   "delete_p50_ms": ms(statistics.median(deletes)),
                   "delete_max_ms": ms(max(deletes)),
                   "deletes_over_4s": sum(1 for d in deletes if d > 4),
                   "unit": "kernels created and deleted per second (POST, then DELETE once it "
                           "answered), %d in flight" % cfg.clients})
    return result, errors, False


def kernel_roots(server, kids):
    """{kernel id: host pid of its top process} and how it was found."""
    if server.callisto:
        pids, source = {}, "model"
        for kid in kids:
            info = server.kernel_model(kid).get("callisto")
            if not isinstance(info, dict):
                pids = None
                break
            pids[kid] = info["pid"]
        if pids is not None:
            return pids, source
        # a Callisto without the model's pid: every child but the zygote, and the zygote's
        z = server.zygote_pid()
        roots = [c for c in children(server.pid) if c != z] + (children(z) if z else [])
        return {"pid-%d" % p: p for p in roots}, "process_tree"
    # jupyter_server: its children, matched to the kernel by the connection file's name
    pids = {}
    for c in children(server.pid):
        argv = " ".join(cmdline(c))
        for kid in kids:
            if "kernel-%s.json" % kid in argv:
                pids[kid] = c
    return pids, "process_tree"


def stack_kernels(server, cfg, count, end, stop=None):
    """Starts up to `count` kernels with the data stack imported and a figure drawn; returns
    (ids, errors). stop() true: add no more."""
    kids, errors = [], []
    for i in range(count):
        if now() + 2 * cfg.timeout > end or (stop and stop()):
            break
        server.check_alive()
        kid, ch = None, None
        try:
            kid, ch = ready_kernel(server, cfg.timeout)
            ch.execute(DRAW, cfg.timeout)
            kids.append(kid)
            kid = None
            if (i + 1) % 5 == 0 or i + 1 == count:
                log("  %d/%d kernels with the data stack" % (i + 1, count))
        except BenchError as exc:
            errors.append(str(exc))
            log("  kernel %d failed: %s" % (i + 1, exc))
        finally:
            if ch:
                ch.close()
            if kid:
                try:
                    server.delete_kernel(kid)
                except BenchError:
                    pass
    return kids, errors


def bench_memory(server, cfg):
    end = now() + cfg.max_seconds
    kids, errors = stack_kernels(server, cfg, cfg.kernels, end)
    try:
        if not kids:
            raise BenchError("no kernel started: %s" % "; ".join(errors[:3]))
        truncated = len(kids) < cfg.kernels
        time.sleep(3)
        roots, source = kernel_roots(server, kids)
        per = [tree_pss(p) for p in roots.values()]
        z = server.zygote_pid() if server.callisto else None
        zygote = (pss(z) or 0) if z else 0
        res = {"kernels": len(kids), "roots_found": len(roots), "pid_source": source,
               "pss_per_kernel_mb": round(statistics.mean(per) / 2**20, 1) if per else None,
               "pss_per_kernel_min_mb": round(min(per) / 2**20, 1) if per else None,
               "pss_per_kernel_max_mb": round(max(per) / 2**20, 1) if per else None,
               "zygote_pss_mb": round(zygote / 2**20, 1),
               "pss_with_zygote_per_kernel_mb": round((sum(per) + zygote) / len(kids) / 2**20, 1),
               "unit": "PSS (smaps_rollup) of each kernel's process tree, 3 s after `%s`; with "
                       "zygote: (all kernels + the zygote process) / kernels" % DRAW}
        if len(roots) != len(kids):
            errors.append("found %d kernel process trees for %d kernels" % (len(roots), len(kids)))
        if server.callisto:
            model = [server.kernel_model(k).get("callisto", {}).get("pss_bytes") for k in kids]
            model = [m for m in model if isinstance(m, int)]
            res["model_pss_per_kernel_mb"] = (round(statistics.mean(model) / 2**20, 1)
                                              if model else None)
        return res, errors, truncated
    finally:
        errors.extend(delete_all(server, kids))


def bench_capacity(server, cfg):
    end = now() + cfg.capacity_max_seconds
    before = meminfo()["MemAvailable"]
    low = []

    def stop():
        avail = meminfo()["MemAvailable"]
        if avail < MIN_AVAILABLE:
            low.append(avail)
            return True
        return False
    kids, errors = stack_kernels(server, cfg, cfg.capacity, end, stop)
    try:
        if not kids:
            raise BenchError("no kernel started: %s" % "; ".join(errors[:3]))
        time.sleep(3)
        lat = []
        for _ in range(200):
            t0 = now()
            st, obj = server.request("GET", "/api/kernels")
            lat.append(now() - t0)
            if st != 200 or not isinstance(obj, list):
                errors.append("GET /api/kernels -> %s" % st)
        after = meminfo()["MemAvailable"]
        roots, source = kernel_roots(server, kids)
        total = sum(tree_pss(p) for p in roots.values())
        z = server.zygote_pid()
        total += (pss(z) or 0) if z else 0
        return {"asked": cfg.capacity, "kernels": len(kids),
                "stopped_low_memory": bool(low), "listed": len(obj) if isinstance(obj, list) else None,
                "p50_ms": ms(statistics.median(lat)), "p99_ms": ms(pct(lat, 99)),
                "pss_total_mb": round(total / 2**20, 1), "pid_source": source,
                "mem_available_before_mb": before // 2**20, "mem_available_after_mb": after // 2**20,
                "unit": "200 sequential GET /api/kernels with the kernels idle, each with the data "
                        "stack; PSS of all kernels and the zygote"}, errors, len(kids) < cfg.capacity
    finally:
        errors.extend(delete_all(server, kids))


BENCH_FUNCS = {"start": bench_start, "import": bench_import, "oneshot": bench_oneshot,
               "churn": bench_churn, "memory": bench_memory, "capacity": bench_capacity}

# the headline of each measurement in the table: (key, label)
TABLE = [("start", "p50_ms", "start p50 ms"), ("start", "p90_ms", "start p90 ms"),
         ("start", "launch", "start launch"),
         ("import", "p50_ms", "first import p50 ms (inside)"),
         ("import", "wall_p50_ms", "first import p50 ms (wall)"),
         ("oneshot", "per_s", "one-shot fresh executions/s"),
         ("oneshot", "p50_ms", "one-shot p50 ms"), ("oneshot", "p90_ms", "one-shot p90 ms"),
         ("oneshot", "failed", "one-shot failed"),
         ("oneshot", "machine_busy_ms_per_op", "one-shot machine busy CPU ms each"),
         ("churn", "per_s", "churn kernels/s"), ("churn", "create_p50_ms", "churn create p50 ms"),
         ("churn", "delete_p50_ms", "churn delete p50 ms"),
         ("churn", "delete_max_ms", "churn delete max ms"), ("churn", "failed", "churn failed"),
         ("churn", "machine_busy_ms_per_op", "churn machine busy CPU ms each"),
         ("memory", "pss_per_kernel_mb", "PSS per kernel MiB"),
         ("memory", "pss_with_zygote_per_kernel_mb", "PSS per kernel incl. zygote MiB"),
         ("memory", "model_pss_per_kernel_mb", "PSS per kernel MiB (model's pss_bytes)"),
         ("capacity", "kernels", "capacity kernels"),
         ("capacity", "p50_ms", "capacity GET /api/kernels p50 ms"),
         ("capacity", "p99_ms", "capacity GET /api/kernels p99 ms"),
         ("capacity", "pss_total_mb", "capacity PSS total MiB"),
         ("capacity", "mem_available_after_mb", "capacity MemAvailable after MiB")]


def markdown(results, servers):
    lines = ["| measurement | " + " | ".join(servers) + " |",
             "|---|" + "---:|" * len(servers)]
    for bench, key, label in TABLE:
        cells = []
        for s in servers:
            r = results.get((s, bench))
            v = None if r is None else (r.get("error") and "error") or r.get(key)
            if isinstance(v, dict):
                v = ", ".join("%s %s" % kv for kv in sorted(v.items()))
            cells.append("" if v is None else str(v))
        if any(cells):
            lines.append("| %s | %s |" % (label, " | ".join(cells)))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="start,import,oneshot,churn,memory",
                    help="comma-separated, of %s (capacity also needs --capacity)" % ",".join(BENCHES))
    ap.add_argument("--servers", default=",".join(SERVERS),
                    help="comma-separated, of %s; run in this order" % ",".join(SERVERS))
    ap.add_argument("--capacity", type=int, default=0, metavar="N",
                    help="capacity with N kernels, Callisto --zygote=on only (default: off)")
    ap.add_argument("--quick", action="store_true", help="small counts and 5 s durations")
    ap.add_argument("--out", help="append the JSON lines to this file too")
    ap.add_argument("--callisto", default=os.environ.get(
        "CALLISTO", os.path.join(REPO, "build/gateway/callisto")))
    ap.add_argument("--python", default="/usr/bin/python3", help="runs jupyter_server")
    ap.add_argument("--uid-base", type=int, default=64000,
                    help="Callisto --zygote=on gets --sandbox-uids=BASE-(BASE+499), off the next "
                         "500 (default 64000: away from the default 60000-60999 and from the "
                         "ranges the tests use)")
    ap.add_argument("--timeout", type=float, default=60, help="per operation, seconds")
    ap.add_argument("--keep-logs", action="store_true", help="keep each server's log")
    cfg = ap.parse_args()
    only = [b.strip() for b in cfg.only.split(",") if b.strip()]
    servers = [s.strip() for s in cfg.servers.split(",") if s.strip()]
    for b in only:
        if b not in BENCHES:
            ap.error("unknown measurement %r" % b)
    for s in servers:
        if s not in SERVERS:
            ap.error("unknown server %r" % s)
    if cfg.capacity and "capacity" not in only:
        only.append("capacity")
    if "capacity" in only and not cfg.capacity:
        ap.error("capacity needs --capacity N")
    cfg.start_n, cfg.import_n, cfg.kernels = (3, 2, 3) if cfg.quick else (20, 5, 20)
    cfg.duration = 5 if cfg.quick else 30
    cfg.clients = 4
    cfg.max_seconds = 600  # start, import, memory: at most this each
    cfg.capacity_max_seconds = max(600, cfg.capacity * 2 * cfg.timeout // 4)
    if any(s != "jupyter_server" for s in servers) and not os.access(cfg.callisto, os.X_OK):
        ap.error("no callisto at %s (--callisto or $CALLISTO)" % cfg.callisto)

    machine = machine_info(cfg.callisto)
    out = open(cfg.out, "a") if cfg.out else None
    results = {}

    def emit(server, bench, res):
        line = {"bench": "zygote_bench", "server": server, "metric": bench,
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "quick": cfg.quick, "loadavg": [round(x, 2) for x in os.getloadavg()],
                **res, "machine": machine}
        results[(server, bench)] = res
        text = json.dumps(line)
        print(text, flush=True)
        if out:
            out.write(text + "\n")
            out.flush()

    interrupted = False
    for name in servers:
        todo = [b for b in only if not (b == "oneshot" and name == "jupyter_server")
                and not (b == "capacity" and name != "zygote")]
        if not todo:
            continue
        log("== %s: %s" % (name, ", ".join(todo)))
        server = Server(name, cfg)
        try:
            server.wait_up()
            t0 = now()
            launch, source = server.warm_up()
            log("%s up on port %d (pid %d), warm-up kernel in %.1f s%s" % (
                name, server.port, server.pid, now() - t0,
                ", launch %s (from the %s)" % (launch, source) if launch else ""))
            for bench in todo:
                log("%s: %s" % (name, bench))
                t0 = now()
                try:
                    res, errors, truncated = BENCH_FUNCS[bench](server, cfg)
                except BenchError as exc:
                    res, errors, truncated = {"error": str(exc)}, [], False
                    log("%s %s failed: %s" % (name, bench, exc))
                res["errors"] = errors[:5]
                res["error_count"] = len(errors)
                res["truncated"] = truncated
                res["bench_seconds"] = round(now() - t0, 1)
                emit(name, bench, res)
                server.check_alive()
        except BenchError as exc:
            log("%s: %s" % (name, exc))
            emit(name, "server", {"error": str(exc), "argv": server.argv})
        except KeyboardInterrupt:
            interrupted = True
        finally:
            notes = server.stop()
            if notes:
                log("%s at stop: %s" % (name, "; ".join(notes)))
                emit(name, "stop", {"error": "; ".join(notes), "log": server.log_path})
        if interrupted:
            break
    if out:
        out.close()
    print("\n" + markdown(results, servers))
    print("\n%s, %d cores, Linux %s, commit %s%s%s" % (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), machine["nproc"], machine["kernel"],
        (machine["commit"] or "?")[:12], " (work tree modified)" if machine["worktree_dirty"] else "",
        ", --quick" if cfg.quick else ""))
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
