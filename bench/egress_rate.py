#!/usr/bin/python3
"""One networked kernel floods its egress proxy while another downloads: does the second keep
its rate? (issue 36; docs/performance.md, "Egress: a flood beside a download").

Serves 16 MiB at http://127.0.0.2:PORT/big (loopback only), makes two /v1 contexts allowed to
reach it, times one download in the second context alone, then again while the first runs 8
downloads at once in a loop. Run against a server started with
  --egress-allow=127.0.0.2:PORT [--egress-rate=SIZE]

  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 bench/egress_rate.py PORT
"""

import http.server
import json
import os
import sys
import threading
import time
import urllib.request

URL = os.environ["CALLISTO_URL"].rstrip("/")
TOKEN = os.environ["CALLISTO_TOKEN"]
PORT = int(sys.argv[1])
SIZE = 16 << 20
CHUNK = b"\0" * (1 << 16)


class handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(SIZE))
        self.end_headers()
        try:
            for _ in range(SIZE // len(CHUNK)):
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


DOWNLOAD = f"""
import time, urllib.request
t = time.monotonic()
n = len(urllib.request.urlopen('http://127.0.0.2:{PORT}/big', timeout=600).read())
print(n, time.monotonic() - t)
"""

FLOOD = f"""
import threading, urllib.request, time
stop = time.monotonic() + {{seconds}}
total = [0]
def pull():
    while time.monotonic() < stop:
        r = urllib.request.urlopen('http://127.0.0.2:{PORT}/big', timeout=600)
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


def mib_s(line):
    n, secs = line.split()
    return int(n) / float(secs) / (1 << 20)


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.2", PORT), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    allow = {"network": {"allow": [f"127.0.0.2:{PORT}"]}}
    flooder = api("POST", "/v1/contexts", allow)["id"]
    downloader = api("POST", "/v1/contexts", allow)["id"]
    try:
        alone = mib_s(run(downloader, DOWNLOAD))
        print(f"download alone: {alone:.1f} MiB/s", flush=True)
        flood_out = {}
        seconds = 30
        t = threading.Thread(target=lambda: flood_out.update(
            line=run(flooder, FLOOD.replace("{seconds}", str(seconds)))))
        t.start()
        time.sleep(3)
        beside = mib_s(run(downloader, DOWNLOAD))
        t.join()
        print(f"download beside a flood of 8 connections: {beside:.1f} MiB/s", flush=True)
        print(f"the flood, all 8 together: {mib_s(flood_out['line']):.1f} MiB/s", flush=True)
    finally:
        for ctx in (flooder, downloader):
            api("DELETE", "/v1/contexts/" + ctx)


if __name__ == "__main__":
    main()
