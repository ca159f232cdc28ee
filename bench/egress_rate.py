#!/usr/bin/python3
"""One networked kernel floods its egress proxy while another downloads: does the second keep
its rate? (issue 36; docs/performance.md, "Egress: a flood beside a download").

Serves 16 MiB at http://127.0.0.2:PORT/big (loopback only; ?size=N for another length), makes
two /v1 contexts allowed to reach it, times one download in the second context alone, then
again while the first runs 8 downloads at once in a loop. Run against a server started with
  --egress-allow=127.0.0.2:PORT [--egress-rate=SIZE]

  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 bench/egress_rate.py PORT

With --steady SECONDS (and --cap MIB, the server's --egress-rate in MiB/s, to compare with),
the rates at steady state instead of a burst: the flood (8 connections) and one download each
run for SECONDS at once, long past the proxies' one-second buckets, and each kernel counts
what it received second by second; the rate over the seconds after the first --skip (3) is
the steady one, printed against the cap with the seconds that were furthest from it.
"""

import argparse
import http.server
import json
import os
import threading
import time
import urllib.parse
import urllib.request

URL = os.environ["CALLISTO_URL"].rstrip("/")
TOKEN = os.environ["CALLISTO_TOKEN"]
SIZE = 16 << 20
CHUNK = b"\0" * (1 << 16)


class handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        size = int(query.get("size", [SIZE])[0])
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        try:
            for _ in range(size // len(CHUNK)):
                self.wfile.write(CHUNK)
        except OSError:
            pass


def api(method, path, body=None, timeout=600):
    req = urllib.request.Request(URL + path, method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "token " + TOKEN,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        text = r.read()
        return json.loads(text) if text else None


def run(ctx, code, timeout=600):
    out = api("POST", f"/v1/contexts/{ctx}/executions", {"code": code, "timeout": timeout})
    if out["status"] != "ok":
        raise SystemExit(f"execution failed: {out.get('error')} {out.get('stderr')}")
    return out.get("stdout", "")


DOWNLOAD = """
import time, urllib.request
t = time.monotonic()
n = len(urllib.request.urlopen('http://127.0.0.2:{port}/big', timeout=600).read())
print(n, time.monotonic() - t)
"""

FLOOD = """
import threading, urllib.request, time
stop = time.monotonic() + {seconds}
total = [0]
def pull():
    while time.monotonic() < stop:
        r = urllib.request.urlopen('http://127.0.0.2:{port}/big', timeout=600)
        while time.monotonic() < stop:
            b = r.read(65536)
            if not b:
                break
            total[0] += len(b)
        r.close()
threads = [threading.Thread(target=pull) for _ in range(8)]
t = time.monotonic()
[x.start() for x in threads]
[x.join() for x in threads]
print(total[0], time.monotonic() - t)
"""

# Reads for `seconds` over `connections` connections (each a body far longer than that takes),
# counting the bytes received in each whole second since the start; prints them as JSON.
STEADY = """
import json, threading, time, urllib.request
connections, seconds = {connections}, {seconds}
t0 = time.monotonic()
stop = t0 + seconds
per_second = [0] * (int(seconds) + 1)
lock = threading.Lock()
def pull():
    while time.monotonic() < stop:
        r = urllib.request.urlopen('http://127.0.0.2:{port}/big?size={size}', timeout=600)
        while True:
            b = r.read(65536)
            now = time.monotonic()
            if not b or now >= stop:
                break
            with lock:
                per_second[int(now - t0)] += len(b)
        r.close()
threads = [threading.Thread(target=pull) for _ in range(connections)]
[x.start() for x in threads]
[x.join() for x in threads]
print(json.dumps(per_second[:int(seconds)]))
"""


def mib_s(line):
    n, secs = line.split()
    return int(n) / float(secs) / (1 << 20)


def steady(per_second, skip):
    """MiB/s over the seconds after `skip`, and the slowest and fastest of those seconds."""
    window = [n / (1 << 20) for n in per_second[skip:]]
    return sum(window) / len(window), min(window), max(window)


def burst_run(port, flooder, downloader):
    download = DOWNLOAD.format(port=port)
    alone = mib_s(run(downloader, download))
    print(f"download alone: {alone:.1f} MiB/s", flush=True)
    flood_out = {}
    seconds = 30
    t = threading.Thread(target=lambda: flood_out.update(
        line=run(flooder, FLOOD.format(port=port, seconds=seconds))))
    t.start()
    time.sleep(3)
    beside = mib_s(run(downloader, download))
    t.join()
    print(f"download beside a flood of 8 connections: {beside:.1f} MiB/s", flush=True)
    print(f"the flood, all 8 together: {mib_s(flood_out['line']):.1f} MiB/s", flush=True)


def steady_run(port, flooder, downloader, seconds, skip, cap):
    # Each body is longer than a connection can take in `seconds` at 1 GiB/s: never ends.
    size = (1 << 30) * seconds
    code = STEADY.replace("{port}", str(port)).replace("{size}", str(size))
    outs = {}

    def measure(name, ctx, connections, lead):
        outs[name] = json.loads(run(ctx, code.replace("{connections}", str(connections))
                                    .replace("{seconds}", str(seconds + lead)), seconds + 120))

    # The flood starts first and ends last: the download's every second has it beside.
    flood = threading.Thread(target=measure, args=("flood", flooder, 8, 4))
    flood.start()
    time.sleep(2)
    measure("download", downloader, 1, 0)
    flood.join()
    for name in ("download", "flood"):
        rate, low, high = steady(outs[name], skip)
        whole = sum(outs[name]) / len(outs[name]) / (1 << 20)
        against = f" = {100 * rate / cap:.1f}% of the cap" if cap else ""
        print(f"{name}{' (8 connections)' if name == 'flood' else ''}: steady {rate:.2f} MiB/s"
              f"{against} (seconds {skip}-{len(outs[name])}; slowest second {low:.2f}, "
              f"fastest {high:.2f}); {whole:.2f} MiB/s over all {len(outs[name])} s", flush=True)
    print("per second, MiB:", json.dumps({k: [round(n / (1 << 20), 2) for n in v]
                                         for k, v in outs.items()}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("port", type=int, help="the destination's port on 127.0.0.2")
    parser.add_argument("--steady", type=int, metavar="SECONDS",
                        help="measure steady rates over this long instead of a burst")
    parser.add_argument("--skip", type=int, default=3,
                        help="seconds left out of the steady rate (the bucket's burst)")
    parser.add_argument("--cap", type=float, default=0,
                        help="the server's --egress-rate in MiB/s, to compare with")
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.2", args.port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    allow = {"network": {"allow": [f"127.0.0.2:{args.port}"]}}
    flooder = api("POST", "/v1/contexts", allow)["id"]
    downloader = api("POST", "/v1/contexts", allow)["id"]
    try:
        if args.steady:
            steady_run(args.port, flooder, downloader, args.steady, args.skip, args.cap)
        else:
            burst_run(args.port, flooder, downloader)
    finally:
        for ctx in (flooder, downloader):
            api("DELETE", "/v1/contexts/" + ctx)


if __name__ == "__main__":
    main()
