#!/usr/bin/python3
"""An MCP session whose kernel was culled gets a new one on its next call, and the model is
told that its state is lost (instead of every later call failing on a dead kernel).

The server runs with --cull-idle-timeout=3 --cull-interval=1.

  CALLISTO_URL=… /usr/bin/python3 test_mcp_culled.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import TOKEN, api, callisto_only, check, check_eq, poll, run_tests  # noqa: E402
from mcp_client import Session  # noqa: E402


@callisto_only
def test_a_culled_kernel_is_replaced_and_the_model_told():
    session = Session(TOKEN)
    try:
        text, err = session.tool("run_code", code="x = 41")
        check(not err, "first call", text)
        contexts = api("GET", "/v1/contexts").json()
        check_eq(len(contexts), 1, "the session's context")
        kernel_id = contexts[0]["kernel_id"]
        poll(lambda: api("GET", f"/api/kernels/{kernel_id}").status == 410, 60,
             what="the idle kernel is culled")
        text, err = session.tool("run_code", code="print('alive')\nx")
        check("previous Python kernel is gone" in text and "culled" in text,
              "the model is told why its state is gone", text)
        check("alive" in text, "the code ran in a new kernel", text)
        check(err and "NameError" in text, "and the old state is lost", text)
        text, err = session.tool("run_code", code="x = 1\nprint(x + 1)")
        check(not err and "2" in text and "gone" not in text, "the notice comes once", text)
        now = api("GET", "/v1/contexts").json()
        check(len(now) == 1 and now[0]["id"] != contexts[0]["id"], "one context, a new one", now)
    finally:
        check_eq(session.end().status, 204, "end the session")


if __name__ == "__main__":
    sys.exit(run_tests())
