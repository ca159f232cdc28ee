#!/usr/bin/python3
"""WebSocket keepalive. The server under test runs with --ws-ping-interval=1: an idle
connection gets pings, and one that answers them stays open.

  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 test_keepalive.py
"""

import os
import sys
import time

import websocket

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import KernelWS, check, check_eq, kernel, run_tests, test  # noqa: E402


@test
def test_idle_connection_is_pinged_and_stays_open():
    with kernel() as k, KernelWS(k["id"]) as ws:
        ws.kernel_info()
        pings = 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            ws.ws.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                opcode, data = ws.ws.recv_data(control_frame=True)
            except websocket.WebSocketTimeoutException:
                break
            if opcode == websocket.ABNF.OPCODE_PING:
                pings += 1
                ws.ws.pong(data)
        check(pings >= 2, f"pings on an idle connection ({pings})")
        check_eq(ws.run("1+1").result_text(), "2", "the pinged connection still works")


if __name__ == "__main__":
    sys.exit(run_tests())
