#!/usr/bin/python3
"""The floor under bench/scale_ceiling.sh: the same tiny executions, at the same rate per kernel,
sent straight to plain ipykernels over ZeroMQ with jupyter_client, no gateway in between.

    /usr/bin/python3 bench/direct_kernels.py --kernels=100 --interval=2.0 --duration=60

Starts K ipykernels (no sandbox), then one asyncio client per kernel sends `6 * 7` every
INTERVAL seconds (the kernels staggered evenly over one interval) and times each execution from
the send to both its execute_reply and its idle status, as callisto-load does. What this
machine's kernels take to answer when K of them share it is what no gateway can go under.
"""

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time

from jupyter_client.manager import AsyncKernelManager


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else float("nan")


async def drive(manager, offset, interval, ends, latencies):
    client = manager.client()
    client.start_channels()
    await client.wait_for_ready(timeout=120)
    await asyncio.sleep(offset)
    while time.monotonic() < ends:
        started = time.monotonic()
        msg_id = client.execute("6 * 7", store_history=True, stop_on_error=False)
        reply = idle = False
        while not (reply and idle):
            if not reply:
                # The reply comes on shell, the idle on iopub; wait on both.
                got = await client.get_shell_msg(timeout=60)
                reply = got["parent_header"].get("msg_id") == msg_id
            if not idle:
                got = await client.get_iopub_msg(timeout=60)
                idle = (got["parent_header"].get("msg_id") == msg_id
                        and got["msg_type"] == "status"
                        and got["content"]["execution_state"] == "idle")
        latencies.append((time.monotonic() - started) * 1000)
        await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))
    client.stop_channels()


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=100)
    ap.add_argument("--interval", type=float, default=2.0,
                    help="seconds between executions on each kernel (default 2.0)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    ap.add_argument("--json", help="also write the figures as JSON to this file")
    args = ap.parse_args()

    # Five sockets per kernel, and the kernels' pipes: far past the default 1,024 descriptors.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # the kernels' debugger notice
    sockets = tempfile.mkdtemp(prefix="direct-kernels-")
    managers = []
    try:
        for i in range(args.kernels):
            # ipc, as Callisto's kernels use: no race for TCP ports between a hundred starts.
            km = AsyncKernelManager(kernel_name="python3", transport="ipc",
                                    ip=os.path.join(sockets, f"k{i}"))
            await km.start_kernel()
            managers.append(km)
            print(f"\rstarted {i + 1}/{args.kernels} kernels", end="", file=sys.stderr)
        print(file=sys.stderr)
        latencies = []
        ends = time.monotonic() + args.duration
        await asyncio.gather(*(
            drive(km, args.interval * i / args.kernels, args.interval, ends, latencies)
            for i, km in enumerate(managers)))
    finally:
        await asyncio.gather(*(km.shutdown_kernel(now=True) for km in managers),
                             return_exceptions=True)
        shutil.rmtree(sockets, ignore_errors=True)

    figures = {
        "kernels": args.kernels, "interval_s": args.interval, "duration_s": args.duration,
        "executions": len(latencies),
        "per_second": round(len(latencies) / args.duration, 1),
        "p50_ms": round(percentile(latencies, 0.50), 1),
        "p90_ms": round(percentile(latencies, 0.90), 1),
        "p99_ms": round(percentile(latencies, 0.99), 1),
        "max_ms": round(max(latencies), 1) if latencies else None,
        "mean_ms": round(statistics.fmean(latencies), 1) if latencies else None,
    }
    print(json.dumps(figures))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    asyncio.run(main())
