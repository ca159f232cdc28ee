#!/usr/bin/python3
"""The limits an agent relies on. Every /v1 execution has a deadline: a request that names no
timeout gets the server's --execution-timeout, one may ask for at most
--max-execution-timeout, and the answer says which applied; MCP's run_code keeps its own
default within the server's. A request may keep less output than the server's
--output-budget, and MCP's run_code keeps a model-sized 32 KiB unless asked for more. The
server under test runs with --execution-timeout=2, --max-execution-timeout=30 and
--interrupt-grace=2 (and the default 1 MiB --output-budget).

  CALLISTO_URL=... CALLISTO_TOKEN=... /usr/bin/python3 test_execution_limits.py
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    api, callisto_only, check, check_eq, run_code, run_tests,
)
from mcp_client import Session  # noqa: E402

TOKEN = os.environ.get("CALLISTO_TOKEN", "")


@callisto_only
def test_an_execution_without_a_timeout_stops_at_the_servers_deadline(context):
    start = time.monotonic()
    r = api("POST", f"/v1/contexts/{context['id']}/executions",
            {"code": "import time\nfor _ in range(600):\n    time.sleep(0.1)"}, timeout=60)
    took = time.monotonic() - start
    check_eq(r.status, 200, f"the answer: {r.body[:300]!r}")
    out = r.json()
    check_eq(out["status"], "timeout", "stopped at the deadline")
    check_eq(out["timeout"], 2, "the answer names the deadline that applied")
    check_eq(out["state_preserved"], True, "the interrupt sufficed")
    check(took < 20, "answered near the deadline, not after the code's minute", took)
    got = api("GET", f"/v1/contexts/{context['id']}/executions/{out['id']}").json()
    check_eq(got["timeout"], 2, "GET says it too")
    asked = run_code(context, "1", timeout=25)
    check_eq(asked["timeout"], 25, "a request's own timeout, within the maximum")
    check_eq(asked["status"], "ok", "and it ran")


@callisto_only
def test_a_timeout_past_the_maximum_is_refused_naming_it(context):
    r = api("POST", f"/v1/contexts/{context['id']}/executions", {"code": "1", "timeout": 31})
    check_eq(r.status, 400, "refused")
    check("at most 30 seconds" in r.body.decode(), "the maximum is named", r.body)
    r = api("POST", "/v1/executions", {"code": "1", "timeout": 31})
    check_eq(r.status, 400, "a one-shot too")


@callisto_only
def test_a_request_keeps_the_output_budget_it_asks_for(context):
    code = "print('a' * 100000, end='')"
    out = run_code(context, code, output_budget=1000)
    check(len(out["stdout"]) < 1200, "about 1000 bytes kept", len(out["stdout"]))
    check(out["truncated"]["stdout_bytes"] >= 99000, "the cut is counted", out["truncated"])
    check("truncated" in out["stdout"], "and marked in the text")
    whole = run_code(context, code)
    check_eq(len(whole["stdout"]), 100000, "without one, the server's 1 MiB keeps it all")
    r = api("POST", f"/v1/contexts/{context['id']}/executions",
            {"code": "1", "output_budget": 2 << 20})
    check_eq(r.status, 400, "more than the server's budget is refused")
    check("--output-budget" in r.body.decode(), "naming the option", r.body)


@callisto_only
def test_mcp_run_code_keeps_a_model_sized_budget():
    mcp = Session(TOKEN)
    try:
        text, is_error = mcp.tool("run_code", code="print('b' * 200000)")
        check(not is_error, "it ran", text[:300])
        check(len(text) < 40000, "about 32 KiB of the 200 KB printed", len(text))
        text, is_error = mcp.tool("run_code", code="print('c' * 100000)", output_budget=200000)
        check(text.count("c") >= 100000, "all of it when asked for", len(text))
    finally:
        mcp.end()


@callisto_only
def test_mcp_run_code_gets_a_deadline_within_the_servers():
    mcp = Session(TOKEN)
    try:
        start = time.monotonic()
        text, is_error = mcp.tool("run_code", code="import time\ntime.sleep(60)")
        check(time.monotonic() - start < 20, "stopped at the server's 2 s, not MCP's 120 s")
        check(is_error or "timeout" in text.lower() or "time limit" in text.lower(),
              "the result says it timed out", text)
    finally:
        mcp.end()


if __name__ == "__main__":
    sys.exit(run_tests())
