#!/usr/bin/python3
"""What each language of an execution costs (issue 16): one Callisto started here on a free
loopback port (sandbox on, --pool-size=0), then, for each language, a context of the kernel
that runs it and N sequential executions of a trivial snippet through
POST /v1/contexts/{id}/executions, timed from the request to the whole answer.

  /usr/bin/python3 bench/languages_bench.py [--runs N] [--callisto PATH] [--out OUT.jsonl]

Measured per language (after two warm-up runs, so the runner modules are loaded):
  python  `1 + 1`
  bash    `true`  (one bash process per execution)
  sql     `SELECT COUNT(*) FROM t` over a 10,000-row CSV uploaded first (read once, cached)
  sql-csv the same after the CSV changed each time (re-read every run)
  r       `1 + 1` in an ir (IRkernel) context
and the context creation itself (POST /v1/contexts -> 201) for python3 and ir, N=5 each
(each context deleted with policy fresh, so every one is a new kernel).
Prints one JSON line per measurement and a Markdown table at the end.
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
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary):
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.dir = tempfile.mkdtemp(prefix="callisto-langbench-")
        os.chmod(self.dir, 0o755)  # the sandbox uids reach their runtime dirs through it
        self.proc = subprocess.Popen(
            [binary, "--ip=127.0.0.1", f"--port={self.port}", f"--token={self.token}",
             "--pool-size=0", f"--runtime-dir={self.dir}/rt", f"--workdir-root={self.dir}/work",
             "--sandbox-uids=62000-62099"],
            stdout=open(f"{self.dir}/log", "w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.request("GET", "/api")[0] == 200:
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("the server did not start; see " + self.dir + "/log")

    def request(self, method, path, body=None, raw=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        headers = {"Authorization": f"token {self.token}"}
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        out = r.read()
        c.close()
        return r.status, (json.loads(out) if out else None)

    def stop(self, failed=False):
        if failed:  # the server's own account of what went wrong
            with open(f"{self.dir}/log") as f:
                sys.stderr.write("".join(f.readlines()[-30:]))
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def percentiles(samples):
    s = sorted(samples)
    return {"n": len(s), "p50_ms": round(statistics.median(s), 1),
            "p90_ms": round(s[min(len(s) - 1, int(len(s) * 0.9))], 1)}


def timed_runs(server, context, body, runs, before_each=None):
    samples = []
    for i in range(runs + 2):
        if before_each:
            before_each(i)
        t = time.perf_counter()
        status, answer = server.request("POST", f"/v1/contexts/{context}/executions", body)
        ms = (time.perf_counter() - t) * 1000
        if status != 200 or answer["status"] != "ok":
            raise RuntimeError(f"{body}: {status} {answer}")
        if i >= 2:
            samples.append(ms)
    return percentiles(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--callisto", default=os.path.join(ROOT, "build/gateway/callisto"))
    ap.add_argument("--out")
    args = ap.parse_args()
    server = Server(args.callisto)
    results = []

    def record(name, figures):
        line = {"measurement": name, **figures,
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        results.append(line)
        print(json.dumps(line), flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(line) + "\n")

    try:
        for kernel in ("python3", "ir"):
            samples = []
            for _ in range(5):
                t = time.perf_counter()
                status, model = server.request("POST", "/v1/contexts",
                                               {"kernel": kernel, "policy": "fresh"})
                samples.append((time.perf_counter() - t) * 1000)
                if status != 201:
                    raise RuntimeError(f"context {kernel}: {status} {model}")
                server.request("DELETE", f"/v1/contexts/{model['id']}")
            record(f"context create {kernel}", percentiles(samples))

        _, py = server.request("POST", "/v1/contexts", {"kernel": "python3"})
        _, r = server.request("POST", "/v1/contexts", {"kernel": "ir"})
        csv = "n,v\n" + "".join(f"{i},{i * 0.5}\n" for i in range(10_000))
        server.request("PUT", f"/v1/contexts/{py['id']}/files/t.csv", raw=csv.encode())

        def touch(i):
            server.request("PUT", f"/v1/contexts/{py['id']}/files/t.csv",
                           raw=(csv + f"{10_000 + i},0\n").encode())

        record("python 1 + 1", timed_runs(server, py["id"], {"code": "1 + 1"}, args.runs))
        record("bash true", timed_runs(server, py["id"], {"code": "true", "language": "bash"},
                                       args.runs))
        record("sql over a cached 10k-row CSV",
               timed_runs(server, py["id"], {"code": "SELECT COUNT(*) FROM t", "language": "sql"},
                          args.runs))
        record("sql after the CSV changed",
               timed_runs(server, py["id"], {"code": "SELECT COUNT(*) FROM t", "language": "sql"},
                          args.runs, before_each=touch))
        record("r 1 + 1", timed_runs(server, r["id"], {"code": "1 + 1"}, args.runs))
    except BaseException:
        server.stop(failed=True)
        raise
    server.stop()

    print("\n| measurement | n | p50 ms | p90 ms |\n|---|---|---|---|")
    for line in results:
        print(f"| {line['measurement']} | {line['n']} | {line['p50_ms']} | {line['p90_ms']} |")


if __name__ == "__main__":
    sys.exit(main())
