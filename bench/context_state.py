#!/usr/bin/python3
"""What carrying a context's state costs (issue 37), against building it again: for a data file
of --mib MiB (a CSV an agent uploaded and analyses), one round

  1. makes a context (policy fresh) and uploads the CSV             -> create_ms, upload_ms
  2. runs the setup an agent would: pandas reads the CSV, derives a
     column, fits a line, defines a function                        -> setup_ms
  3. snapshots it                                                   -> snapshot_ms, size
  4. restores the snapshot into a new context, checks its state     -> restore_ms
  5. forks it once, then four times, and checks every copy          -> fork1_ms, fork4_ms
  6. pauses it and resumes it (POST .../resume), checks its state   -> pause_ms, resume_ms
  7. inside the kernel: os.fork() of the kernel holding that state,
     the child exiting at once (the floor of a live fork, not a
     usable kernel: see docs/performance.md)                        -> live_fork_floor_ms

Every time is the client's wall time of the request (what an agent waits), and the server's
own duration_ms where it reports one. "Building it again" is create + upload + setup.
The kernel's resident memory after the setup is read from /proc/self/status inside it.

  bench/context_state.py --url http://127.0.0.1:P --token T --mib 100 [-n 3] [--json OUT]

The server needs limits that fit the state (--upload-limit, --memory-limit, --file-size-limit,
--disk-quota, --snapshot-quota-bytes): docs/performance.md has the command line used.
"""

import http.client
import json
import os
import statistics
import sys
import time
import urllib.parse

from pause_resume import call, must, server_options  # the same helpers, beside this script

SETUP = r"""
import pandas as pd, numpy as np
df = pd.read_csv("data.csv")
df["z"] = (df["a"] - df["a"].mean()) / df["a"].std()
coef = np.polyfit(df["a"], df["b"], 1)
def predict(x):
    return coef[0] * x + coef[1]
print(len(df), round(float(predict(1.0)), 6))
"""

PROBE = r"""
print(len(df), round(float(predict(1.0)), 6), round(float(df["z"].abs().max()), 6))
"""

RSS = r"""
print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:")))
"""

LIVE_FORK = r"""
import os, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print(round((time.perf_counter() - t0) * 1000, 1))
"""


def data_file(mib, directory):
    """A CSV of `mib` MiB (a little more: whole rows): four float columns and a short text
    one, made once."""
    path = os.path.join(directory, f"callisto-bench-{mib}mib.csv")
    if os.path.exists(path):
        return path
    import numpy as np
    rng = np.random.default_rng(7)
    tmp = path + ".part"
    with open(tmp, "w") as f:
        f.write("a,b,c,d,label\n")
        while f.tell() < mib * 2**20:
            n = 20_000
            a = rng.random(n)
            cols = np.column_stack([a, 2 * a + rng.normal(0, 0.1, n), rng.random(n),
                                    rng.random(n)])
            labels = rng.integers(0, 1000, n)
            f.writelines(f"{r[0]:.7f},{r[1]:.7f},{r[2]:.7f},{r[3]:.7f},k{l}\n"
                         for r, l in zip(cols, labels))
    os.rename(tmp, path)
    return path


class Client:
    def __init__(self, url, token):
        self.url = urllib.parse.urlsplit(url)
        self.token = token
        self.conn = http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=3600)

    def timed(self, method, path, body=None, want=200, what=""):
        t0 = time.perf_counter()
        status, answer = call(self.conn, self.token, method, path, body)
        ms = (time.perf_counter() - t0) * 1000
        return must(status, answer, want, what or f"{method} {path}"), round(ms)

    def run(self, cid, code, what):
        e, ms = self.timed("POST", f"/v1/contexts/{cid}/executions",
                           {"code": code, "timeout": 3600}, 200, what)
        if e["status"] != "ok":
            sys.exit(f"{what} failed: {e.get('error')}")
        return e["stdout"].strip(), ms

    def upload(self, cid, path):
        size = os.path.getsize(path)
        conn = http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=3600)
        t0 = time.perf_counter()
        conn.putrequest("PUT", f"/v1/contexts/{cid}/files/data.csv")
        conn.putheader("Authorization", f"token {self.token}")
        conn.putheader("Content-Length", str(size))
        conn.endheaders()
        with open(path, "rb") as f:
            while piece := f.read(1 << 20):
                conn.send(piece)
        resp = conn.getresponse()
        resp.read()
        conn.close()
        if resp.status not in (200, 201, 204):
            sys.exit(f"upload: {resp.status}")
        return round((time.perf_counter() - t0) * 1000)

    def delete(self, cid):
        call(self.conn, self.token, "DELETE", f"/v1/contexts/{cid}")


def one_round(c, csv):
    r = {}
    ctx, r["create_ms"] = c.timed("POST", "/v1/contexts", {"policy": "fresh"}, 201, "create")
    cid = ctx["id"]
    made = [cid]
    snapshot = None
    try:
        r["upload_ms"] = c.upload(cid, csv)
        _, r["setup_ms"] = c.run(cid, SETUP, "setup")
        expect_probe, _ = c.run(cid, PROBE, "probe")
        r["kernel_rss_mib"] = round(int(c.run(cid, RSS, "rss")[0]) / 1024)
        r["rebuild_ms"] = r["create_ms"] + r["upload_ms"] + r["setup_ms"]

        snap, r["snapshot_ms"] = c.timed("POST", f"/v1/contexts/{cid}/snapshots", None, 201,
                                         "snapshot")
        snapshot = snap["id"]
        r["size_mib"] = round(snap["size"] / 2**20, 1)
        r["snapshot_server_ms"] = snap["duration_ms"]

        restored, r["restore_ms"] = c.timed("POST", "/v1/contexts",
                                            {"from_snapshot": snapshot, "policy": "fresh"}, 201,
                                            "restore")
        made.append(restored["id"])
        r["restore_server_ms"] = restored["restored"]["duration_ms"]
        if c.run(restored["id"], PROBE, "probe restored")[0] != expect_probe:
            sys.exit("the restored state differs")
        c.delete(made.pop())

        for count in (1, 4):
            forks, ms = c.timed("POST", f"/v1/contexts/{cid}/fork", {"count": count}, 201,
                                f"fork x{count}")
            r[f"fork{count}_ms"] = ms
            ids = [f["id"] for f in forks["contexts"]]
            made += ids
            for f in ids:
                if c.run(f, PROBE, "probe fork")[0] != expect_probe:
                    sys.exit("a fork's state differs")
            for f in ids:
                c.delete(f)
                made.remove(f)

        paused, r["pause_ms"] = c.timed("POST", f"/v1/contexts/{cid}/pause", None, 200, "pause")
        r["paused_size_mib"] = round(paused["paused"]["size"] / 2**20, 1)
        resumed, r["resume_ms"] = c.timed("POST", f"/v1/contexts/{cid}/resume", None, 200,
                                          "resume")
        r["resume_server_ms"] = resumed["resumed"]["duration_ms"]
        if c.run(cid, PROBE, "probe resumed")[0] != expect_probe:
            sys.exit("the resumed state differs")
        r["live_fork_floor_ms"] = float(c.run(cid, LIVE_FORK, "live fork")[0])
        return r
    finally:
        for m in made:
            c.delete(m)
        if snapshot:
            call(c.conn, c.token, "DELETE", f"/v1/snapshots/{snapshot}")


def main():
    ap = server_options(3)
    ap.add_argument("--mib", type=int, default=100, help="the CSV's size")
    ap.add_argument("--data-dir", default="/var/tmp")
    ap.add_argument("--json")
    args = ap.parse_args()
    csv = data_file(args.mib, args.data_dir)
    c = Client(args.url, args.token)
    rounds = []
    for i in range(args.n):
        rounds.append(one_round(c, csv))
        print(json.dumps({"round": i + 1, **rounds[-1]}), flush=True)
    row = {"csv_mib": args.mib, "n": args.n}
    for key in rounds[0]:
        row[key] = statistics.median(r[key] for r in rounds)
    print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
