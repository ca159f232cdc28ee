#!/usr/bin/python3
"""WebSocket keepalive. The server under test runs with --ws-ping-interval=1: an idle
connection gets pings, and one that answers them stays open.

  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 test_keepalive.py
"""

import json
import os
import sys
import time
import urllib.parse

import websocket

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (BASE_URL, HTTP_TIMEOUT, TOKEN, KernelWS, api, callisto_only,  # noqa: E402
                        check, check_eq, kernel, run_tests, test)


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


@callisto_only
def test_idle_events_websocket_is_pinged_and_stays_open():
    r = api("POST", "/v1/contexts", {})
    check_eq(r.status, 201, "create context")
    ctx = r.json()
    url = urllib.parse.urlsplit(BASE_URL)
    ws = websocket.create_connection(f"ws://{url.netloc}/v1/contexts/{ctx['id']}/events",
                                     header=[f"Authorization: token {TOKEN}"], timeout=HTTP_TIMEOUT)
    try:
        pings = 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            ws.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                opcode, data = ws.recv_data(control_frame=True)
            except websocket.WebSocketTimeoutException:
                break
            if opcode == websocket.ABNF.OPCODE_PING:
                pings += 1
                ws.pong(data)
        check(pings >= 2, f"pings on an idle events socket ({pings})")
        ws.settimeout(HTTP_TIMEOUT)
        ws.send(json.dumps({"type": "execute", "code": "1+1"}))
        while True:
            opcode, data = ws.recv_data(control_frame=True)
            if opcode == websocket.ABNF.OPCODE_PING:
                ws.pong(data)
                continue
            m = json.loads(data)
            if m["type"] == "end":
                break
        check_eq(m["execution"]["results"][0]["data"]["text/plain"], "2", "still works")
    finally:
        ws.close()
        api("DELETE", "/v1/contexts/" + ctx["id"])


if __name__ == "__main__":
    sys.exit(run_tests())
