#!/usr/bin/python3
"""GET /metrics: the Prometheus text format, checked by promtool, and scraped by a real
Prometheus server (Debian's `prometheus`) while a scripted workload runs over the Jupyter
WebSocket, /v1 and the kernels REST API; the counts are then read back through Prometheus's
query API, as a dashboard would.

  CALLISTO_URL=... CALLISTO_TOKEN=... /usr/bin/python3 test_metrics.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (BASE_URL, KernelWS, api, callisto_only, check, check_eq, free_port,  # noqa: E402
                        http_request, stop_process,
                        kernel, poll, run_tests)

TOKEN = os.environ.get("CALLISTO_TOKEN", "")


def metrics_text():
    r = http_request("GET", "/metrics")
    check_eq(r.status, 200, "GET /metrics")
    check(r.headers.get("content-type", "").startswith("text/plain; version=0.0.4"),
          "the text format's content type", r.headers)
    return r.body.decode()


@callisto_only
def test_metrics_need_a_token_and_pass_promtool():
    r = http_request("GET", "/metrics", auth=None)
    check_eq(r.status, 401, "no token, no metrics")
    text = metrics_text()
    p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       capture_output=True, timeout=60)
    check_eq(p.returncode, 0, "promtool check metrics: " + (p.stdout + p.stderr).decode())
    for name in ("callisto_kernels", "callisto_pool_ready_kernels", "callisto_kernel_starts_total",
                 "callisto_kernel_start_seconds", "callisto_executions_total",
                 "callisto_http_requests_total", "callisto_open_connections",
                 "process_cpu_seconds_total", "process_resident_memory_bytes",
                 "process_open_fds"):
        check(f"# TYPE {name} " in text, f"{name} is exposed")
    check("kernel_id" not in text, "no per-kernel label")
    # Counters of events that may not have happened yet are there at zero, per kernelspec
    # where they have one: an alert on them needs the series before the first failure.
    for series in ('callisto_kernel_start_failures_total{kernelspec="python3"} ',
                   'callisto_pool_claims_total{kernelspec="python3",result="miss"} ',
                   'callisto_kernel_deaths_total{cause="oom"} ',
                   'callisto_output_truncations_total{api="v1",kind="stream"} '):
        check(series in text, f"{series.strip()} is exported before its first event")



class Prometheus:
    """Debian's Prometheus server on loopback, scraping Callisto every second."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="callisto-prometheus-")
        self.port = free_port()
        target = urllib.parse.urlparse(BASE_URL).netloc
        with open(os.path.join(self.dir, "token"), "w") as f:
            f.write(TOKEN)
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: callisto
    authorization:
      credentials_file: {self.dir}/token
    static_configs:
      - targets: ['{target}']
""")
        self.log = open(os.path.join(self.dir, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={self.dir}/prometheus.yml",
             f"--storage.tsdb.path={self.dir}/data", f"--web.listen-address=127.0.0.1:{self.port}",
             "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def query(self, promql):
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=5) as r:
            body = json.load(r)
        check_eq(body["status"], "success", f"query {promql}")
        return body["data"]["result"]

    def value(self, promql):
        try:
            result = self.query(promql)
        except OSError:
            return None  # not up yet
        return float(result[0]["value"][1]) if result else None

    def close(self):
        stop_process(self.proc)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@callisto_only
def test_a_real_prometheus_sees_the_workload():
    prom = Prometheus()
    try:
        poll(lambda: prom.value('up{job="callisto"}') == 1, 60, 0.5,
             what="Prometheus scraping Callisto (up == 1)")
        # The workload: 3 /v1 executions that succeed and 1 that fails; 2 over a kernel's
        # WebSocket; a restart asked for; a request for a kernel that does not exist.
        for i in range(3):
            check_eq(api("POST", "/v1/executions", {"code": f"print({i})"}).json()["status"], "ok",
                     "a /v1 execution")
        check_eq(api("POST", "/v1/executions", {"code": "1/0"}).json()["status"], "error",
                 "a failing /v1 execution")
        with kernel() as k:
            with KernelWS(k["id"]) as ws:
                for code in ("x = 6 * 7", "print(x)"):
                    check_eq(ws.run(code).status, "ok", "a WebSocket execution")
            check_eq(api("POST", f"/api/kernels/{k['id']}/restart").status, 200, "restart")
        check_eq(api("GET", "/api/kernels/00000000-0000-4000-8000-000000000000").status, 404,
                 "an unknown kernel")

        expected = {
            'callisto_executions_total{api="v1",status="ok"}': 3,
            'callisto_executions_total{api="v1",status="error"}': 1,
            'callisto_executions_total{api="jupyter",status="ok"}': 2,
            'callisto_kernel_restarts_total{reason="requested"}': 1,
            'callisto_http_requests_total{route="kernel_get",code="404"}': 1,
            'callisto_http_requests_total{route="kernel_channels",code="101"}': 1,
            'callisto_execution_seconds_count{api="v1"}': 4,
            'callisto_relay_client_message_bytes_count > bool 0': 1,
        }
        for promql, want in expected.items():
            poll(lambda: prom.value(promql) == want, 30, 0.5,
                 what=f"{promql} == {want} (is {prom.value(promql)})")
        # What a dashboard asks: kernel start latency p99 (the restart above started one while
        # Prometheus watched).
        p99 = "histogram_quantile(0.99, sum by (le) (rate(callisto_kernel_start_seconds_bucket[1m])))"
        poll(lambda: (prom.value(p99) or 0) > 0, 30, 0.5, what=f"{p99} > 0 (is {prom.value(p99)})")
    finally:
        prom.close()


if __name__ == "__main__":
    sys.exit(run_tests())
