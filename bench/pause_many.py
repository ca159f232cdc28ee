#!/usr/bin/python3
"""Many idle contexts, paused (issue 37): makes N contexts (policy fresh), gives each the same
state (a numpy array of --mib MiB and a function), then measures what the host holds with all of
them live, pauses them all, measures again, and resumes each by an execution that checks its
state. Memory is the host's (MemTotal - MemAvailable, /proc/meminfo) and the kernels' own
(the sum of the PSS of every process running as a sandbox uid); resume times are what each
execution reports (resumed.duration_ms) and its wall time. Contexts are deleted at the end.

  bench/pause_many.py --url http://127.0.0.1:P --token T [-n 50] [--mib 8] [--uids 60000-60999]
"""

import http.client
import json
import os
import statistics
import sys
import time
import urllib.parse

from pause_resume import call, must, server_options  # the same helpers, beside this script


def host_used_mib():
    info = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, value = line.split(":")
            info[key] = int(value.split()[0])
    return (info["MemTotal"] - info["MemAvailable"]) / 1024


def kernels_pss_mib(first, last):
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as f:
                uid = next(int(l.split()[1]) for l in f if l.startswith("Uid:"))
            if not first <= uid <= last:
                continue
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total += next(int(l.split()[1]) for l in f if l.startswith("Pss:"))
        except (OSError, StopIteration):
            continue
    return total / 1024


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main():
    ap = server_options(50)
    ap.add_argument("--mib", type=int, default=8)
    ap.add_argument("--uids", default="60000-60999")
    args = ap.parse_args()
    first, last = (int(x) for x in args.uids.split("-"))
    url = urllib.parse.urlsplit(args.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=900)
    floats = args.mib * 2**20 // 8
    setup = (f"import numpy as np\nbig = np.random.default_rng(7).random({floats})\n"
             "check = float(big.sum())\ndef f(a):\n    return a * 2\n")
    probe = "print(float(big.sum()) == check, f(21))"

    before = host_used_mib()
    ids = []
    try:
        for _ in range(args.n):
            ctx = must(*call(conn, args.token, "POST", "/v1/contexts", {"policy": "fresh"}), 201,
                       "create")
            ids.append(ctx["id"])
            e = must(*call(conn, args.token, "POST", f"/v1/contexts/{ctx['id']}/executions",
                           {"code": setup, "timeout": 600}), 200, "setup")
            if e["status"] != "ok":
                sys.exit(f"setup failed: {e.get('error')}")
        time.sleep(2)
        live_host, live_pss = host_used_mib(), kernels_pss_mib(first, last)
        pause_ms = []
        for cid in ids:
            p = must(*call(conn, args.token, "POST", f"/v1/contexts/{cid}/pause"), 200, "pause")
            pause_ms.append(p["paused"]["duration_ms"])
        time.sleep(2)
        paused_host, paused_pss = host_used_mib(), kernels_pss_mib(first, last)
        resume_ms, resume_wall = [], []
        for cid in ids:
            t0 = time.perf_counter()
            e = must(*call(conn, args.token, "POST", f"/v1/contexts/{cid}/executions",
                           {"code": probe}), 200, "resume")
            resume_wall.append((time.perf_counter() - t0) * 1000)
            if e["stdout"].strip() != "True 42":
                sys.exit(f"the state did not come back: {e['stdout']!r}")
            resume_ms.append(e["resumed"]["duration_ms"])
        row = {
            "contexts": args.n, "state_mib": args.mib,
            "host_used_mib": {"before": round(before), "live": round(live_host),
                              "paused": round(paused_host)},
            "kernels_pss_mib": {"live": round(live_pss), "paused": round(paused_pss)},
            "pause_ms": {"p50": statistics.median(pause_ms), "max": max(pause_ms)},
            "resume_ms": {"p50": statistics.median(resume_ms), "p99": percentile(resume_ms, 99),
                          "max": max(resume_ms)},
            "resume_wall_ms": {"p50": round(statistics.median(resume_wall)),
                               "p99": round(percentile(resume_wall, 99))},
        }
        print(json.dumps(row), flush=True)
    finally:
        for cid in ids:
            call(conn, args.token, "DELETE", f"/v1/contexts/{cid}")


if __name__ == "__main__":
    main()
