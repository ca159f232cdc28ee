#!/usr/bin/python3
"""Pause and resume of a /v1 context (issue 37), for a small state and for one numpy array of
--mib MiB (random floats: incompressible): the pause's answer (its own duration_ms: snapshot
and write), the wall time of POST .../pause, the resume as the next execution reports it
(resumed.duration_ms) and the wall time of that execution, and the saved size. Each round makes
a context, gives it the state, pauses it, resumes it by an execution that checks the state,
and deletes it.

  bench/pause_resume.py --url http://127.0.0.1:P --token T [-n 5] [--mib 100] [--json OUT.jsonl]
"""

import argparse
import http.client
import json
import statistics
import sys
import time
import urllib.parse

STATES = {
    "small": ("x = 42\ndef f(a):\n    return a + x\nclass C:\n    pass\n"
              "open('notes.txt', 'w').write('hello')\n",
              "print(f(1), type(C()).__name__, open('notes.txt').read())",
              "43 C hello"),
    "numpy": ("import numpy as np\nbig = np.random.default_rng(7).random({n})\n"
              "check = float(big.sum())\n",
              "print(float(big.sum()) == check, big.nbytes)",
              "True {bytes}"),
}


def call(conn, token, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data,
                 headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    resp = conn.getresponse()
    payload = resp.read()
    return resp.status, (json.loads(payload) if payload else None)


def server_options(n):
    """The options the benches against a running server share: its --url and --token, and -n,
    how many (by default `n`). Each bench adds its own."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("-n", type=int, default=n)
    return ap


def must(status, body, want, what):
    if status != want:
        sys.exit(f"{what}: {status} {body}")
    return body


def one_round(conn, token, setup, probe, expect):
    ctx = must(*call(conn, token, "POST", "/v1/contexts", {"policy": "fresh"}), 201, "create")
    cid = ctx["id"]
    try:
        e = must(*call(conn, token, "POST", f"/v1/contexts/{cid}/executions", {"code": setup,
                                                                              "timeout": 600}),
                 200, "setup")
        if e["status"] != "ok":
            sys.exit(f"setup failed: {e.get('error')}")
        t0 = time.perf_counter()
        paused = must(*call(conn, token, "POST", f"/v1/contexts/{cid}/pause"), 200, "pause")
        pause_wall = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        e = must(*call(conn, token, "POST", f"/v1/contexts/{cid}/executions", {"code": probe}),
                 200, "resume")
        resume_wall = (time.perf_counter() - t0) * 1000
        if e["stdout"].strip() != expect:
            sys.exit(f"the state did not come back: {e['stdout']!r} != {expect!r}")
        return {"size": paused["paused"]["size"], "pause_ms": paused["paused"]["duration_ms"],
                "pause_wall_ms": round(pause_wall), "resume_ms": e["resumed"]["duration_ms"],
                "resume_wall_ms": round(resume_wall)}
    finally:
        call(conn, token, "DELETE", f"/v1/contexts/{cid}")


def main():
    ap = server_options(5)
    ap.add_argument("--mib", type=int, default=100)
    ap.add_argument("--json")
    args = ap.parse_args()
    url = urllib.parse.urlsplit(args.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=900)
    n_floats = args.mib * 2**20 // 8
    out = []
    for name, (setup, probe, expect) in STATES.items():
        setup = setup.replace("{n}", str(n_floats))
        expect = expect.replace("{bytes}", str(n_floats * 8))
        rounds = [one_round(conn, args.token, setup, probe, expect) for _ in range(args.n)]
        row = {"state": name if name == "small" else f"numpy {args.mib} MiB", "n": args.n,
               "size": rounds[0]["size"]}
        for key in ("pause_ms", "pause_wall_ms", "resume_ms", "resume_wall_ms"):
            values = [r[key] for r in rounds]
            row[key + "_median"] = statistics.median(values)
            row[key + "_max"] = max(values)
        out.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "a") as f:
            for row in out:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
