"""End-to-end tests of /v1's events WebSocket: a long cell's events in order, following an
execution submitted over REST and interrupting it, closing with its context, and bad
messages answered with errors on a socket that stays.

Each test's context and its socket are conftest.py's `context` and `events`.

Run against a server (CALLISTO_URL, CALLISTO_TOKEN)."""

import json
import sys

import websocket  # websocket-client

from e2e_client import TOKEN, api, callisto_only, check, check_eq, run_tests
from v1_client import Stream, delete_context, events_ws, receive, receive_until_end


@callisto_only
def test_events_websocket_streams_a_long_cell_in_order(events):
    events.send(json.dumps({"type": "execute", "request_id": "r-1",
                            "code": "import time, os\nfor i in range(5):\n    print(i, flush=True)\n"
                                    "    time.sleep(0.2)\nprint(os.environ['WS_VAR'])\n1/0",
                            "env": {"WS_VAR": "from-ws"}}))
    queued = receive(events)
    check_eq(queued["type"], "queued", "first message")
    check_eq(queued["request_id"], "r-1", "request_id echoed")
    eid = queued["execution_id"]
    check_eq(queued["id"], eid, "id and execution_id agree")
    got, others = receive_until_end(events, eid)
    check_eq(others, [], "nothing else arrived")
    types = [e["type"] for e in got]
    check_eq(types[0], "start", "start first")
    check_eq(types[-2:], ["error", "end"], "error, then end")
    check(types.count("stdout") >= 2, "output in several events", types)
    text = "".join(e["text"] for e in got if e["type"] == "stdout")
    check_eq(text, "0\n1\n2\n3\n4\nfrom-ws\n", "stdout in order, env applied")
    end = got[-1]["execution"]
    check_eq(end["status"], "error", "end status")
    check_eq(end["id"], eid, "the end carries the whole execution")
    check("\x1b" not in "".join(end["error"]["traceback"]), "ANSI stripped by default")
    # The socket stays usable: a second execution on it.
    events.send(json.dumps({"type": "execute", "code": "6*7", "keep_ansi": True}))
    eid2 = receive(events)["execution_id"]
    got, _ = receive_until_end(events, eid2)
    check_eq(got[-1]["execution"]["results"][0]["data"]["text/plain"], "42", "result")


@callisto_only
def test_events_websocket_follows_an_execution_submitted_over_rest_and_interrupts_it(context,
                                                                                     events):
    s = Stream(context, "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n"
                        "    time.sleep(0.4)\n'done'")
    eid = s.event()["id"]
    while s.event()["type"] != "stdout":
        pass  # it has begun and printed: the follower must get that from the beginning
    events.send(json.dumps({"type": "follow", "execution_id": eid}))
    check_eq(receive(events)["type"], "following", "follow acknowledged")
    got, _ = receive_until_end(events, eid)
    s.close()
    check_eq(got[0]["type"], "start", "replayed from the start")
    text = "".join(e["text"] for e in got if e["type"] == "stdout")
    check_eq(text, "tick 0\ntick 1\ntick 2\n", "everything, replayed and live, once")
    check_eq(got[-1]["execution"]["status"], "ok", "ended ok")
    # Following a finished execution: its remembered events and the end.
    events.send(json.dumps({"type": "follow", "execution_id": eid}))
    check_eq(receive(events)["type"], "following", "follow a finished one")
    got, _ = receive_until_end(events, eid)
    check_eq([e["type"] for e in got], ["start", "stdout", "result", "end"], "replay")

    # Interrupt over the socket.
    events.send(json.dumps({"type": "execute", "code": "import time\nprint('go', flush=True)\n"
                                                       "time.sleep(60)"}))
    eid = receive(events)["execution_id"]
    while receive(events)["type"] != "stdout":
        pass
    events.send(json.dumps({"type": "interrupt", "execution_id": eid, "request_id": "stop"}))
    got, others = receive_until_end(events, eid)
    check_eq(got[-1]["execution"]["status"], "interrupted", "interrupted")
    check(any(o["type"] == "interrupting" and o["request_id"] == "stop" for o in others),
          "interrupt acknowledged", others)


@callisto_only
def test_events_websocket_closes_with_its_context_after_the_last_events(context, events):
    events.send(json.dumps({"type": "execute", "code": "import time\nprint('go', flush=True)\n"
                                                       "time.sleep(60)"}))
    eid = receive(events)["execution_id"]
    while receive(events)["type"] != "stdout":
        pass
    delete_context(context)
    got, _ = receive_until_end(events, eid)
    check_eq(got[-1]["execution"]["status"], "error", "the running execution ended")
    opcode, data = events.recv_data(control_frame=True)
    check_eq(opcode, websocket.ABNF.OPCODE_CLOSE, "then the socket closes")
    check_eq(int.from_bytes(data[:2], "big"), 1000, "a normal close")
    check_eq(data[2:].decode(), "the context was deleted", "with the reason")


@callisto_only
def test_events_websocket_of_an_idle_context_closes_as_soon_as_it_goes(context, events):
    delete_context(context)
    opcode, data = events.recv_data(control_frame=True)
    check_eq(opcode, websocket.ABNF.OPCODE_CLOSE, "closed with its context")


@callisto_only
def test_events_websocket_bad_messages_get_errors_and_the_socket_stays(context, events):
    unknown = "00000000-0000-4000-8000-000000000000"
    bad = ["not json", "[]", "{}", json.dumps({"type": "run"}),
           json.dumps({"type": "execute"}), json.dumps({"type": "execute", "code": 1}),
           json.dumps({"type": "execute", "code": "1", "env": {"LD_PRELOAD": "x"}}),
           json.dumps({"type": "execute", "code": "1", "extra": 1}),
           json.dumps({"type": "follow"}), json.dumps({"type": "follow", "execution_id": "x"}),
           json.dumps({"type": "follow", "execution_id": unknown}),
           json.dumps({"type": "interrupt", "execution_id": unknown})]
    for text in bad:
        events.send(text)
        m = receive(events)
        check_eq(m["type"], "error", f"answer to {text!r}")
        check(m["message"], f"says why for {text!r}", m)
    events.send(json.dumps({"type": "execute", "request_id": "named"}))
    check_eq(receive(events).get("request_id"), "named", "the error names the request")
    events.send_binary(b"\x00\x01")
    check("binary" in receive(events)["message"], "binary frames refused")
    events.send("x" * (5 * 1024 * 1024))
    check("larger than" in receive(events)["message"], "oversized message refused")
    # Still open and working.
    events.send(json.dumps({"type": "execute", "code": "'alive'"}))
    eid = receive(events)["execution_id"]
    got, _ = receive_until_end(events, eid)
    check_eq(got[-1]["execution"]["results"][0]["data"]["text/plain"], "'alive'", "works")
    events.close()
    delete_context(context)
    # A deleted context, or no token: refused before any upgrade.
    for token, status in [(TOKEN, 404), ("wrong-token", 401)]:
        try:
            events_ws(context, token=token)
            raise AssertionError("the upgrade should have been refused")
        except websocket.WebSocketBadStatusException as e:
            check_eq(e.status_code, status, f"upgrade with token {token[:5]}")


@callisto_only
def test_events_endpoint_refuses_a_plain_get_and_a_post(context):
    check_eq(api("GET", f"/v1/contexts/{context['id']}/events").status, 400, "plain GET")
    check_eq(api("POST", f"/v1/contexts/{context['id']}/events", {}).status, 405, "POST")


if __name__ == "__main__":
    sys.exit(run_tests())
