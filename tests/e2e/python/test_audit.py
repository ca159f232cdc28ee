#!/usr/bin/python3
"""The audit log (--audit-log): every execution of the Jupyter WebSocket (execute_request on a
kernel's channels), of /v1 (one-shot and in a context) and of MCP's run_code is one chained line with who ran what, where, how it ended and what it wrote. The C++
case around it then checks the chain with `callisto audit-verify`, on the file and on a
tampered copy.

  CALLISTO_URL=... CALLISTO_TOKEN=... CALLISTO_AUDIT_LOG=FILE /usr/bin/python3 test_audit.py
"""

import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (KernelWS, api, callisto_only, check, check_eq, kernel, poll,  # noqa: E402
                        run_tests)
from mcp_client import Session  # noqa: E402

AUDIT = os.environ.get("CALLISTO_AUDIT_LOG", "")
TOKEN = os.environ.get("CALLISTO_TOKEN", "")


def audit_lines():
    """Every line of the log and its rotated files, oldest first."""
    files = sorted(glob.glob(AUDIT + ".*"), key=lambda f: -int(f.rsplit(".", 1)[1]))
    lines = []
    for f in files + [AUDIT]:
        if os.path.exists(f):
            with open(f) as fh:
                lines += [json.loads(line) for line in fh if line.strip()]
    return lines


@callisto_only
def test_every_execution_of_every_api_is_recorded():
    before = len(audit_lines())
    marker = "audit-marker-" + str(os.getpid())
    r = api("POST", "/v1/executions", {"code": f"print('{marker}')"})
    check_eq(r.status, 200, "one-shot execution")
    r = api("POST", "/v1/executions", {"code": "1/0"})
    check_eq(r.json()["status"], "error", "a failing execution")
    c = api("POST", "/v1/contexts", {})
    check_eq(c.status, 201, "context")
    ctx = c.json()["id"]
    # A result over the result cap becomes a file: the line names it.
    r = api("POST", f"/v1/contexts/{ctx}/executions",
            {"code": "from IPython.display import HTML\nHTML('x' * 6_000_000)"})
    check_eq(r.json()["status"], "ok", "a big result")
    mcp = Session(TOKEN)
    text, is_error = mcp.tool("run_code", code="print(6 * 7)")
    check(not is_error and "42" in text, "MCP run_code ran", text)
    mcp.end()
    # Over a kernel's WebSocket, as JupyterLab or jupyter_client run code: one line per
    # execute_request, named by its msg_id.
    with kernel() as k, KernelWS(k["id"]) as ws:
        ws_run = ws.run(f"print('{marker}-ws')")
        check_eq(ws_run.status, "ok", "the WebSocket execution")
        ws_failed = ws.run("raise ValueError('audited')")
        check_eq(ws_failed.status, "error", "a failing WebSocket execution")

    poll(lambda: len(audit_lines()) >= before + 6, 30, what="six audit lines")
    lines = audit_lines()[before:]
    by_api = {}
    for line in lines:
        by_api.setdefault(line["api"], []).append(line)
    check_eq(len(by_api.get("v1", [])), 3, "three /v1 executions")
    check_eq(len(by_api.get("mcp", [])), 1, "one MCP execution")
    first = by_api["v1"][0]
    check(marker in first["code"], "the code is recorded", first)
    check_eq(first["status"], "ok", "its status")
    check_eq(first["user"], "admin", "who ran it")
    for key in ("time", "kernel", "context", "execution", "code_sha256", "code_bytes",
                "duration_s", "output_bytes", "files_written", "seq", "prev", "hash"):
        check(key in first, f"the line has {key}", first)
    check(first["output_bytes"] > len(marker), "output bytes counted", first)
    check_eq(by_api["v1"][1]["status"], "error", "the failure's status")
    big = by_api["v1"][2]
    check_eq(big["context"], ctx, "the context")
    check(len(big["files_written"]) == 1 and big["files_written"][0].startswith("callisto-outputs/"),
          "the file the oversized result went to", big)
    check("6 * 7" in by_api["mcp"][0]["code"], "MCP's code", by_api["mcp"][0])
    jupyter = by_api.get("jupyter", [])
    check_eq(len(jupyter), 2, "two Jupyter WebSocket executions")
    check_eq(jupyter[0]["execution"], ws_run.msg_id, "named by the execute_request's msg_id")
    check_eq(jupyter[0]["kernel"], k["id"], "the kernel")
    check_eq(jupyter[0]["user"], "admin", "who sent it")
    check(marker + "-ws" in jupyter[0]["code"], "its code", jupyter[0])
    check_eq(jupyter[0]["status"], "ok", "its status")
    check(jupyter[0]["output_bytes"] > len(marker), "its output counted", jupyter[0])
    check_eq(jupyter[1]["status"], "error", "the failure's status")
    # The chain: each line names the one before.
    for a, b in zip(lines, lines[1:]):
        check_eq(b["prev"], a["hash"], "the chain")
        check_eq(b["seq"], a["seq"] + 1, "the sequence")
    # The admin console's overview lists the latest lines, newest first, as the file has them.
    latest = api("GET", "/v1/admin/overview").json()["audit"]
    check(latest["enabled"], "the overview knows of the audit log", latest)
    shown = {e["seq"]: e for e in latest["latest"]}
    newest = lines[-1]
    check(newest["seq"] in shown, "the newest line is shown", latest["latest"][:2])
    check_eq(latest["latest"][0]["seq"], max(shown), "newest first")
    entry = shown[newest["seq"]]
    check_eq((entry["execution_id"], entry["kernel_id"], entry["user"], entry["status"]),
             (newest["execution"], newest["kernel"], newest["user"], newest["status"]),
             f"the overview's entry is the file's line ({entry})")
    api("DELETE", f"/v1/contexts/{ctx}")


@callisto_only
def test_websocket_execution_refused_while_the_log_cannot_be_written():
    """Run against a server whose --audit-log is /dev/full: the kernel answers as for a failed
    execution (busy, error, idle, execute_reply), and the code never reaches it."""
    with kernel() as k, KernelWS(k["id"]) as ws:
        refused = ws.run("print('must not run')")
        check_eq(refused.status, "error", "the reply's status")
        check_eq(refused.reply["content"]["ename"], "AuditUnavailable", "the reply says why")
        errors = refused.of_type("error")
        check(errors and errors[0]["content"]["ename"] == "AuditUnavailable",
              "an iopub error, as clients show", refused.iopub)
        check_eq(refused.stdout(), "", "nothing ran")


if __name__ == "__main__":
    sys.exit(run_tests())
