#!/usr/bin/python3
"""From POST /v1/contexts to the answer of a first execution (`1+1`), repeated: what an agent
waits before its first tool result. Each round deletes its context, so under the reuse policy
the next round gets the kernel the previous one left (reset and kept), under fresh a kernel
from the warm pool or a cold start.

  bench/context_start.py --url http://127.0.0.1:P --token T --policy reuse|fresh -n 20 \
      [--pause SECS] [--label NAME] [--json OUT.jsonl]
"""

import http.client
import json
import statistics
import sys
import time
import urllib.parse

from pause_resume import call, server_options  # the same helpers, beside this script


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    ap = server_options(20)
    ap.add_argument("--policy", choices=("reuse", "fresh"), required=True)
    ap.add_argument("--pause", type=float, default=0.5, help="seconds between rounds")
    ap.add_argument("--label", default="")
    ap.add_argument("--json")
    args = ap.parse_args()
    url = urllib.parse.urlsplit(args.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    create_ms, first_ms, total_ms, uses = [], [], [], []
    for _ in range(args.n + 1):  # one warm-up round, not counted
        t0 = time.perf_counter()
        status, ctx = call(conn, args.token, "POST", "/v1/contexts", {"policy": args.policy})
        t1 = time.perf_counter()
        if status != 201:
            sys.exit(f"create failed: {status} {ctx}")
        status, out = call(conn, args.token, "POST", f"/v1/contexts/{ctx['id']}/executions",
                           {"code": "1+1"})
        t2 = time.perf_counter()
        if status != 200 or out["status"] != "ok":
            sys.exit(f"execution failed: {status} {out}")
        call(conn, args.token, "DELETE", f"/v1/contexts/{ctx['id']}")
        create_ms.append((t1 - t0) * 1000)
        first_ms.append((t2 - t1) * 1000)
        total_ms.append((t2 - t0) * 1000)
        uses.append(ctx["kernel_uses"])
        time.sleep(args.pause)
    create_ms, first_ms, total_ms, uses = create_ms[1:], first_ms[1:], total_ms[1:], uses[1:]
    result = {
        "bench": "context_start", "label": args.label, "policy": args.policy, "n": args.n,
        "total_p50_ms": round(statistics.median(total_ms), 2),
        "total_p90_ms": round(pct(total_ms, 90), 2),
        "create_p50_ms": round(statistics.median(create_ms), 2),
        "first_execution_p50_ms": round(statistics.median(first_ms), 2),
        "reused_rounds": sum(1 for u in uses if u > 1),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(json.dumps(result))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
