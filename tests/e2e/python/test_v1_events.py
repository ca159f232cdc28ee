"""End-to-end tests of /v1's events WebSocket: a long cell's events in order, following an
execution submitted over REST and interrupting it, closing with its context, and bad
messages answered with errors on a socket that stays.

Run against a server (CALLISTO_URL, CALLISTO_TOKEN)."""

import json
import sys

import websocket  # websocket-client

from e2e_client import TOKEN, api, callisto_only, check, check_eq, run_tests
from v1_client import Stream, delete_context, events_ws, new_context, receive, receive_until_end


@callisto_only
def test_events_websocket_streams_a_long_cell_in_order():
    ctx = new_context()
    ws = events_ws(ctx)
    try:
        ws.send(json.dumps({"type": "execute", "request_id": "r-1",
                            "code": "import time, os\nfor i in range(5):\n    print(i, flush=True)\n"
                                    "    time.sleep(0.2)\nprint(os.environ['WS_VAR'])\n1/0",
                            "env": {"WS_VAR": "from-ws"}}))
        queued = receive(ws)
        check_eq(queued["type"], "queued", "first message")
        check_eq(queued["request_id"], "r-1", "request_id echoed")
        eid = queued["execution_id"]
        check_eq(queued["id"], eid, "id and execution_id agree")
        events, others = receive_until_end(ws, eid)
        check_eq(others, [], "nothing else arrived")
        types = [e["type"] for e in events]
        check_eq(types[0], "start", "start first")
        check_eq(types[-2:], ["error", "end"], "error, then end")
        check(types.count("stdout") >= 2, "output in several events", types)
        text = "".join(e["text"] for e in events if e["type"] == "stdout")
        check_eq(text, "0\n1\n2\n3\n4\nfrom-ws\n", "stdout in order, env applied")
        end = events[-1]["execution"]
        check_eq(end["status"], "error", "end status")
        check_eq(end["id"], eid, "the end carries the whole execution")
        check("\x1b" not in "".join(end["error"]["traceback"]), "ANSI stripped by default")
        # The socket stays usable: a second execution on it.
        ws.send(json.dumps({"type": "execute", "code": "6*7", "keep_ansi": True}))
        eid2 = receive(ws)["execution_id"]
        events, _ = receive_until_end(ws, eid2)
        check_eq(events[-1]["execution"]["results"][0]["data"]["text/plain"], "42", "result")
    finally:
        ws.close()
        delete_context(ctx)


@callisto_only
def test_events_websocket_follows_an_execution_submitted_over_rest_and_interrupts_it():
    ctx = new_context()
    ws = events_ws(ctx)
    try:
        s = Stream(ctx, "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n"
                        "    time.sleep(0.4)\n'done'")
        eid = s.event()["id"]
        while s.event()["type"] != "stdout":
            pass  # it has begun and printed: the follower must get that from the beginning
        ws.send(json.dumps({"type": "follow", "execution_id": eid}))
        check_eq(receive(ws)["type"], "following", "follow acknowledged")
        events, _ = receive_until_end(ws, eid)
        s.close()
        check_eq(events[0]["type"], "start", "replayed from the start")
        text = "".join(e["text"] for e in events if e["type"] == "stdout")
        check_eq(text, "tick 0\ntick 1\ntick 2\n", "everything, replayed and live, once")
        check_eq(events[-1]["execution"]["status"], "ok", "ended ok")
        # Following a finished execution: its remembered events and the end.
        ws.send(json.dumps({"type": "follow", "execution_id": eid}))
        check_eq(receive(ws)["type"], "following", "follow a finished one")
        events, _ = receive_until_end(ws, eid)
        check_eq([e["type"] for e in events], ["start", "stdout", "result", "end"], "replay")

        # Interrupt over the socket.
        ws.send(json.dumps({"type": "execute", "code": "import time\nprint('go', flush=True)\n"
                                                       "time.sleep(60)"}))
        eid = receive(ws)["execution_id"]
        while receive(ws)["type"] != "stdout":
            pass
        ws.send(json.dumps({"type": "interrupt", "execution_id": eid, "request_id": "stop"}))
        events, others = receive_until_end(ws, eid)
        check_eq(events[-1]["execution"]["status"], "interrupted", "interrupted")
        check(any(o["type"] == "interrupting" and o["request_id"] == "stop" for o in others),
              "interrupt acknowledged", others)
    finally:
        ws.close()
        delete_context(ctx)


@callisto_only
def test_events_websocket_closes_with_its_context_after_the_last_events():
    ctx = new_context()
    ws = events_ws(ctx)
    try:
        ws.send(json.dumps({"type": "execute", "code": "import time\nprint('go', flush=True)\n"
                                                       "time.sleep(60)"}))
        eid = receive(ws)["execution_id"]
        while receive(ws)["type"] != "stdout":
            pass
        delete_context(ctx)
        events, _ = receive_until_end(ws, eid)
        check_eq(events[-1]["execution"]["status"], "error", "the running execution ended")
        opcode, data = ws.recv_data(control_frame=True)
        check_eq(opcode, websocket.ABNF.OPCODE_CLOSE, "then the socket closes")
        check_eq(int.from_bytes(data[:2], "big"), 1000, "a normal close")
        check_eq(data[2:].decode(), "the context was deleted", "with the reason")
    finally:
        ws.close()
    # With nothing running, the socket closes as soon as its context goes.
    ctx = new_context()
    ws = events_ws(ctx)
    try:
        delete_context(ctx)
        opcode, data = ws.recv_data(control_frame=True)
        check_eq(opcode, websocket.ABNF.OPCODE_CLOSE, "closed with its context")
    finally:
        ws.close()


@callisto_only
def test_events_websocket_bad_messages_get_errors_and_the_socket_stays():
    ctx = new_context()
    ws = events_ws(ctx)
    try:
        unknown = "00000000-0000-4000-8000-000000000000"
        bad = ["not json", "[]", "{}", json.dumps({"type": "run"}),
               json.dumps({"type": "execute"}), json.dumps({"type": "execute", "code": 1}),
               json.dumps({"type": "execute", "code": "1", "env": {"LD_PRELOAD": "x"}}),
               json.dumps({"type": "execute", "code": "1", "extra": 1}),
               json.dumps({"type": "follow"}), json.dumps({"type": "follow", "execution_id": "x"}),
               json.dumps({"type": "follow", "execution_id": unknown}),
               json.dumps({"type": "interrupt", "execution_id": unknown})]
        for text in bad:
            ws.send(text)
            m = receive(ws)
            check_eq(m["type"], "error", f"answer to {text!r}")
            check(m["message"], f"says why for {text!r}", m)
        ws.send(json.dumps({"type": "execute", "request_id": "named"}))
        check_eq(receive(ws).get("request_id"), "named", "the error names the request")
        ws.send_binary(b"\x00\x01")
        check("binary" in receive(ws)["message"], "binary frames refused")
        ws.send("x" * (5 * 1024 * 1024))
        check("larger than" in receive(ws)["message"], "oversized message refused")
        # Still open and working.
        ws.send(json.dumps({"type": "execute", "code": "'alive'"}))
        eid = receive(ws)["execution_id"]
        events, _ = receive_until_end(ws, eid)
        check_eq(events[-1]["execution"]["results"][0]["data"]["text/plain"], "'alive'", "works")
    finally:
        ws.close()
        delete_context(ctx)
    # An unknown or deleted context, no token, or a plain GET: refused before any upgrade.
    for token, status in [(TOKEN, 404), ("wrong-token", 401)]:
        try:
            events_ws(ctx, token=token)
            raise AssertionError("the upgrade should have been refused")
        except websocket.WebSocketBadStatusException as e:
            check_eq(e.status_code, status, f"upgrade with token {token[:5]}")
    ctx2 = new_context()
    try:
        check_eq(api("GET", f"/v1/contexts/{ctx2['id']}/events").status, 400, "plain GET")
        check_eq(api("POST", f"/v1/contexts/{ctx2['id']}/events", {}).status, 405, "POST")
    finally:
        delete_context(ctx2)


if __name__ == "__main__":
    sys.exit(run_tests())
