#!/usr/bin/python3
"""How many contexts one host holds when the idle ones are paused (issue 37). --workers clients
each make contexts one after another (policy fresh): a small state (a variable, a function, a
list of 10,000 numbers, a file), then pause, so at most --workers kernels are live at once,
until -n contexts are held paused. Every --every contexts: the host's memory in use
(MemTotal - MemAvailable), the gateway's RSS, the bytes the paused states take on disk, and how
long GET /v1/contexts takes. Then, with all of them held, --sample contexts chosen at random
are resumed by an execution that checks their state: resume p50/p99 (the server's
resumed.duration_ms and the execution's wall time). Everything is deleted at the end.

  bench/paused_hold.py --url http://127.0.0.1:P --token T -n 10000 [--workers 2] \\
      [--sample 200] --state-dir DIR --gateway-pid PID
"""

import http.client
import json
import os
import random
import statistics
import sys
import threading
import time
import urllib.parse

from pause_many import host_used_mib, percentile
from pause_resume import call, must, server_options

SETUP = ("x = {i}\ndef f(a):\n    return a + x\nnumbers = list(range(10_000))\n"
         "open('note.txt', 'w').write('context {i}')\n")
PROBE = "print(f(1), sum(numbers), open('note.txt').read())"


def expected(i):
    return f"{i + 1} {sum(range(10_000))} context {i}"


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024


def disk_mib(directory):
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total / 2**20


class Hold:
    def __init__(self, args):
        self.args = args
        self.url = urllib.parse.urlsplit(args.url)
        self.lock = threading.Lock()
        self.held = {}  # context id -> its number
        self.next = 0
        self.failure = None  # the first worker's failure stops them all
        self.started = time.monotonic()

    def connection(self):
        return http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=600)

    def take_number(self):
        with self.lock:
            if self.next >= self.args.n or self.failure:
                return None
            self.next += 1
            return self.next - 1

    def worker(self):
        try:
            self.fill()
        except BaseException as e:  # noqa: BLE001 - sys.exit in a thread would vanish
            with self.lock:
                self.failure = self.failure or repr(e)

    def fill(self):
        conn = self.connection()
        tok = self.args.token
        while (i := self.take_number()) is not None:
            ctx = must(*call(conn, tok, "POST", "/v1/contexts", {"policy": "fresh"}), 201,
                       "create")
            e = must(*call(conn, tok, "POST", f"/v1/contexts/{ctx['id']}/executions",
                           {"code": SETUP.format(i=i)}), 200, "setup")
            if e["status"] != "ok":
                sys.exit(f"setup failed: {e.get('error')}")
            must(*call(conn, tok, "POST", f"/v1/contexts/{ctx['id']}/pause"), 200, "pause")
            with self.lock:
                self.held[ctx["id"]] = i
                count = len(self.held)
            if count % self.args.every == 0:
                self.measure(conn, count)

    def measure(self, conn, count):
        t0 = time.perf_counter()
        status, listed = call(conn, self.args.token, "GET", "/v1/contexts")
        list_ms = (time.perf_counter() - t0) * 1000
        row = {"held": count, "elapsed_s": round(time.monotonic() - self.started),
               "host_used_mib": round(host_used_mib()),
               "gateway_rss_mib": round(rss_mib(self.args.gateway_pid)),
               "paused_disk_mib": round(disk_mib(self.args.state_dir)),
               "list_ms": round(list_ms), "listed": len(listed) if status == 200 else status}
        print(json.dumps(row), flush=True)

    def resume_sample(self):
        conn = self.connection()
        chosen = random.Random(7).sample(sorted(self.held.items()),
                                         min(self.args.sample, len(self.held)))
        server, wall = [], []
        for cid, i in chosen:
            t0 = time.perf_counter()
            e = must(*call(conn, self.args.token, "POST", f"/v1/contexts/{cid}/executions",
                           {"code": PROBE}), 200, "resume")
            wall.append((time.perf_counter() - t0) * 1000)
            if e["stdout"].strip() != expected(i):
                sys.exit(f"context {cid}: {e['stdout']!r} != {expected(i)!r}")
            server.append(e["resumed"]["duration_ms"])
            # Paused again, so the host keeps holding what it held.
            must(*call(conn, self.args.token, "POST", f"/v1/contexts/{cid}/pause"), 200,
                 "pause again")
        return {"resumed": len(chosen),
                "resume_server_ms_p50": percentile(server, 50),
                "resume_server_ms_p99": percentile(server, 99),
                "resume_wall_ms_p50": round(percentile(wall, 50)),
                "resume_wall_ms_p99": round(percentile(wall, 99)),
                "resume_wall_ms_max": round(max(wall))}

    def delete_all(self):
        conn = self.connection()
        for cid in list(self.held):
            call(conn, self.args.token, "DELETE", f"/v1/contexts/{cid}")


def main():
    ap = server_options(10000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--every", type=int, default=1000)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--state-dir", required=True, help="the server's --state-dir")
    ap.add_argument("--gateway-pid", type=int, required=True)
    ap.add_argument("--keep", action="store_true", help="leave the contexts paused")
    args = ap.parse_args()
    hold = Hold(args)
    threads = [threading.Thread(target=hold.worker) for _ in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    fill_s = time.monotonic() - hold.started
    if hold.failure:
        hold.delete_all()
        sys.exit(f"stopped after {len(hold.held)} contexts: {hold.failure}")
    hold.measure(hold.connection(), len(hold.held))
    summary = {"held": len(hold.held), "fill_s": round(fill_s),
               "per_context_ms": round(fill_s * 1000 / max(1, len(hold.held)) * args.workers),
               **hold.resume_sample()}
    print(json.dumps(summary), flush=True)
    if not args.keep:
        hold.delete_all()


if __name__ == "__main__":
    main()
