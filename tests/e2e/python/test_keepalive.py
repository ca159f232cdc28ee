#!/usr/bin/python3
"""WebSocket keepalive. The server under test runs with --ws-ping-interval=1: an idle
connection gets pings, and one that answers them stays open. With PING_TIMEOUT set (the
server's --ws-ping-timeout), a client that answers nothing is closed after it, with a reason
in the close frame and in the server's log.

  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 test_keepalive.py
"""

import json
import os
import socket
import struct
import sys
import time
import urllib.parse

import websocket

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (BASE_URL, HTTP_TIMEOUT, callisto_only, check, check_eq,  # noqa: E402
                        kernel, raw_websocket_upgrade, run_tests, test)

PING_TIMEOUT = int(os.environ.get("PING_TIMEOUT", "0"))


@test
def test_idle_connection_is_pinged_and_stays_open(kernel_ws):
    ws = kernel_ws
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
def test_idle_events_websocket_is_pinged_and_stays_open(events):
    ws = events
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


def read_frame(sock):
    """One WebSocket frame from the server (unmasked): (opcode, payload)."""
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise EOFError("connection closed")
            data += chunk
        return data
    b0, b1 = exactly(2)
    size = b1 & 0x7F
    if size == 126:
        size = struct.unpack("!H", exactly(2))[0]
    elif size == 127:
        size = struct.unpack("!Q", exactly(8))[0]
    return b0 & 0x0F, exactly(size)


@callisto_only
def test_a_client_that_answers_nothing_is_closed_after_the_ping_timeout():
    if not PING_TIMEOUT:
        return
    with kernel() as k:
        url = urllib.parse.urlsplit(BASE_URL)
        sock = socket.create_connection((url.hostname, url.port), timeout=HTTP_TIMEOUT)
        raw_websocket_upgrade(sock, k["id"], url.netloc)
        # Read what comes, answering nothing: pings, then the close.
        start = time.monotonic()
        pings = 0
        sock.settimeout(PING_TIMEOUT + 30)
        while True:
            opcode, payload = read_frame(sock)
            if opcode == 0x9:
                pings += 1
            elif opcode == 0x8:
                break
        took = time.monotonic() - start
        code = struct.unpack("!H", payload[:2])[0]
        reason = payload[2:].decode()
        check(pings >= 2, f"pinged before being closed ({pings})")
        check_eq(code, 1001, "close code: going away")
        check("not even an answer to a ping" in reason, "the close frame says why", reason)
        check(took >= PING_TIMEOUT - 1, f"not closed before the timeout ({took:.1f} s)")
        sock.close()


if __name__ == "__main__":
    sys.exit(run_tests())
