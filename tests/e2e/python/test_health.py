#!/usr/bin/python3
"""Liveness and readiness probes, and the drain at SIGTERM (the server runs with
--drain-seconds=4): /healthz answers while the process lives, /readyz turns 503 (draining)
at SIGTERM while requests are still served, then the server stops.

  CALLISTO_URL=... CALLISTO_TOKEN=... CALLISTO_PID=<gateway pid> /usr/bin/python3 test_health.py
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import api, callisto_only, check, check_documented, check_eq, poll, run_tests  # noqa: E402

PID = int(os.environ.get("CALLISTO_PID", "0"))


@callisto_only
def test_probes_need_no_token_and_readiness_drains_at_sigterm():
    r = api("GET", "/healthz", auth=None)
    check_eq(r.status, 200, "healthz")
    check_eq(r.json(), {"status": "ok"}, "healthz body")
    check_documented("GET", "/healthz", r)
    # Ready once the warm pool has been full once.
    poll(lambda: api("GET", "/readyz", auth=None).status == 200, 60, what="ready")
    r = api("GET", "/readyz", auth=None)
    check_eq(r.json()["checks"]["warm_pool"], "filled", "pool filled")
    check_eq(r.json()["checks"]["draining"], False, "not draining")
    check_documented("GET", "/readyz", r)

    os.kill(PID, signal.SIGTERM)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        r = api("GET", "/readyz", auth=None)
        if r.status == 503:
            break
        time.sleep(0.1)
    check_eq(r.status, 503, "readyz while draining")
    check_eq(r.json()["checks"]["draining"], True, "says draining")
    check_documented("GET", "/readyz", r)
    check_eq(api("GET", "/healthz", auth=None).status, 200, "still alive while draining")
    check_eq(api("GET", "/api/kernels").status, 200, "still serving while draining")

    # Then it stops by itself, after the drain.
    def gone():
        try:
            os.kill(PID, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{PID}/stat") as f:
            return f.read().split()[2] == "Z"
    poll(gone, 30, what="the server stopped after the drain")


if __name__ == "__main__":
    sys.exit(run_tests())
