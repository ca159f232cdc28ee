#!/usr/bin/python3
"""What a client waiting for an answer gets when the server stops (SIGTERM): the answer, saying
why, and then the connection closes; not a connection dropped mid-request. The server under
test is this suite's alone: CALLISTO_PID names it, and the suite stops it.

  CALLISTO_URL=… CALLISTO_TOKEN=… CALLISTO_PID=… /usr/bin/python3 test_stop_answers.py
"""

import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mcp_client  # noqa: E402
from e2e_client import TOKEN, api, check, check_eq, create_context, run_tests, test  # noqa: E402

SLEEP = "import time\nprint('started', flush=True)\ntime.sleep(60)"


@test
def test_requests_in_flight_are_answered_when_the_server_stops():
    ctx = create_context()
    mcp = mcp_client.Session(TOKEN)
    check_eq(mcp.tool("run_code", code="1 + 1")[1], False, "the MCP session's kernel is up")
    answers = {}

    def rest():
        answers["rest"] = api("POST", f"/v1/contexts/{ctx['id']}/executions", {"code": SLEEP})

    def tool():
        answers["mcp"] = mcp.post({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                   "params": {"name": "run_code", "arguments": {"code": SLEEP}}})

    threads = [threading.Thread(target=f) for f in (rest, tool)]
    for t in threads:
        t.start()
    time.sleep(2)  # both submitted (queued or running: either way they must be answered)
    os.kill(int(os.environ["CALLISTO_PID"]), signal.SIGTERM)
    for t in threads:
        t.join(50)
    check(not any(t.is_alive() for t in threads), "both answered well before their code ends")

    r = answers.get("rest")
    check(r is not None, "the execution request got an HTTP answer")
    check_eq(r.status, 200, f"execution answer: {r.body[:300]!r}")
    check_eq(r.headers.get("connection"), "close", "and the connection closes after it")
    body = r.json()
    check_eq(body["status"], "error", "the execution ended with an error")
    check_eq(body["error"]["name"], "ContextClosed", "its context closed")
    check_eq(body["error"]["value"], "the server is stopping", "saying why")

    r = answers.get("mcp")
    check(r is not None, "the tool call got an HTTP answer")
    check_eq(r.status, 200, f"tool call answer: {r.body[:300]!r}")
    body = r.json()
    check_eq(body.get("id"), 7, "a JSON-RPC answer to the call")
    check("error" in body or body["result"]["isError"], "reporting the failure", body)


if __name__ == "__main__":
    sys.exit(run_tests())
