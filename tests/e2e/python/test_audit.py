#!/usr/bin/python3
"""The audit log (--audit-log): every execution of the Jupyter WebSocket (execute_request on a
kernel's channels), of /v1 (one-shot and in a context) and of MCP's run_code gets a run line
(who ran what, where) before the kernel has the code, and an end line (how it ended, what it
wrote) linked to it by seq. The C++ case around it then checks the chain with `callisto
audit-verify --key`, on the files and on tampered copies.

  CALLISTO_URL=... CALLISTO_TOKEN=... CALLISTO_AUDIT_LOG=FILE /usr/bin/python3 test_audit.py

test_a_full_audit_disk_...: the log on a small tmpfs of its own; CALLISTO_AUDIT_FILL names a
file to create on it, to fill it.
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


def executions(lines):
    """The run lines, each with its end line's fields (status, duration...) when it ended."""
    ends = {line["run_seq"]: line for line in lines if line.get("event") == "end"}
    runs = []
    for line in lines:
        if line.get("event") == "run":
            run = dict(line)
            end = ends.get(line["seq"])
            if end:
                run["end"] = end
            runs.append(run)
    return runs


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
    # A result over the result cap becomes a file: the end line names it.
    r = api("POST", f"/v1/contexts/{ctx}/executions",
            {"code": "from IPython.display import HTML\nHTML('x' * 6_000_000)"})
    check_eq(r.json()["status"], "ok", "a big result")
    mcp = Session(TOKEN)
    text, is_error = mcp.tool("run_code", code="print(6 * 7)")
    check(not is_error and "42" in text, "MCP run_code ran", text)
    mcp.end()
    # Over a kernel's WebSocket, as JupyterLab or jupyter_client run code: one run line per
    # execute_request, named by its msg_id.
    with kernel() as k, KernelWS(k["id"]) as ws:
        ws_run = ws.run(f"print('{marker}-ws')")
        check_eq(ws_run.status, "ok", "the WebSocket execution")
        ws_failed = ws.run("raise ValueError('audited')")
        check_eq(ws_failed.status, "error", "a failing WebSocket execution")

    poll(lambda: sum(1 for e in executions(audit_lines()[before:]) if "end" in e) >= 6, 30,
         what="six executions recorded, each with its end")
    lines = audit_lines()[before:]
    by_api = {}
    for e in executions(lines):
        by_api.setdefault(e["api"], []).append(e)
    check_eq(len(by_api.get("v1", [])), 3, "three /v1 executions")
    check_eq(len(by_api.get("mcp", [])), 1, "one MCP execution")
    first = by_api["v1"][0]
    check(marker in first["code"], "the code is recorded", first)
    check_eq(first["end"]["status"], "ok", "its status")
    check_eq(first["user"], "admin", "who ran it")
    for key in ("time", "kernel", "context", "execution", "code_sha256", "code_bytes", "seq",
                "prev", "mac"):
        check(key in first, f"the run line has {key}", first)
    for key in ("time", "execution", "status", "duration_s", "output_bytes", "files_written",
                "run_seq", "seq", "prev", "mac"):
        check(key in first["end"], f"the end line has {key}", first["end"])
    check(first["end"]["seq"] > first["seq"], "the end after the run", first)
    check(first["end"]["output_bytes"] > len(marker), "output bytes counted", first)
    check_eq(by_api["v1"][1]["end"]["status"], "error", "the failure's status")
    big = by_api["v1"][2]
    check_eq(big["context"], ctx, "the context")
    written = big["end"]["files_written"]
    check(len(written) == 1 and written[0].startswith("callisto-outputs/"),
          "the file the oversized result went to", big)
    check("6 * 7" in by_api["mcp"][0]["code"], "MCP's code", by_api["mcp"][0])
    jupyter = by_api.get("jupyter", [])
    check_eq(len(jupyter), 2, "two Jupyter WebSocket executions")
    check_eq(jupyter[0]["execution"], ws_run.msg_id, "named by the execute_request's msg_id")
    check_eq(jupyter[0]["kernel"], k["id"], "the kernel")
    check_eq(jupyter[0]["user"], "admin", "who sent it")
    check(marker + "-ws" in jupyter[0]["code"], "its code", jupyter[0])
    check_eq(jupyter[0]["end"]["status"], "ok", "its status")
    check(jupyter[0]["end"]["output_bytes"] > len(marker), "its output counted", jupyter[0])
    check_eq(jupyter[1]["end"]["status"], "error", "the failure's status")
    # The chain: each line names the one before.
    for a, b in zip(lines, lines[1:]):
        check_eq(b["prev"], a["mac"], "the chain")
        check_eq(b["seq"], a["seq"] + 1, "the sequence")
    # The admin console's overview lists the latest executions, newest first, as the file has
    # them, with how they ended.
    latest = api("GET", "/v1/admin/overview").json()["audit"]
    check(latest["enabled"], "the overview knows of the audit log", latest)
    shown = {e["seq"]: e for e in latest["latest"]}
    newest = executions(lines)[-1]
    check(newest["seq"] in shown, "the newest execution is shown", latest["latest"][:2])
    check_eq(latest["latest"][0]["seq"], max(shown), "newest first")
    entry = shown[newest["seq"]]
    check_eq((entry["execution_id"], entry["kernel_id"], entry["user"], entry["status"]),
             (newest["execution"], newest["kernel"], newest["user"], newest["end"]["status"]),
             f"the overview's entry is the file's lines ({entry})")
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


def fill_to(path, free_bytes):
    """Fills the file system that holds `path` until `free_bytes` are left, with one file."""
    st = os.statvfs(os.path.dirname(path))
    have = st.f_bavail * st.f_frsize
    with open(path, "ab") as f:
        f.write(b"\0" * max(0, have - free_bytes))
    st = os.statvfs(os.path.dirname(path))
    return st.f_bavail * st.f_frsize


@callisto_only
def test_a_full_audit_disk_refuses_executions_until_space_is_back():
    """The issue: a 2 MiB execution on a nearly full disk ran unrecorded, and from then on every
    execution of every user was refused, still 25 s after space came back."""
    fill = os.environ["CALLISTO_AUDIT_FILL"]
    with kernel() as k, KernelWS(k["id"]) as ws:
        # 1.5 MiB left: a 2 MiB execution's run line holds its hash and size, so it fits, and
        # the code runs (over the WebSocket: a /v1 body is at most 1 MiB).
        left = fill_to(fill, 1536 << 10)
        check(left < 2 << 20, "the disk is nearly full", left)
        big = "x = '" + "a" * (2 << 20) + "'\nprint(len(x))"
        ran = ws.run(big)
        check_eq((ran.status, ran.stdout().strip()), ("ok", str(2 << 20)), "the 2 MiB execution ran")
        run = [e for e in executions(audit_lines()) if e.get("code_bytes") == len(big)]
        check(len(run) == 1 and run[0].get("code_over_limit") and "code" not in run[0],
              "recorded by its hash and size", run)

        # Under 1 MiB left: refused, over /v1 and over the WebSocket, and nothing runs.
        fill_to(fill, 256 << 10)
        r = api("POST", "/v1/executions", {"code": "print('must not run')"})
        check_eq(r.json()["status"], "error", "refused")
        check_eq(r.json()["error"]["name"], "AuditUnavailable", "the answer says why")
        check_eq(r.json()["stdout"], "", "nothing ran")
        refused = ws.run("print('must not run')")
        check_eq(refused.reply["content"]["ename"], "AuditUnavailable", "the WebSocket's too")
        check_eq(refused.stdout(), "", "nothing ran there either")

        # Space is back: the next executions run, and are recorded. No lock-out.
        os.remove(fill)
        again = ws.run("print('runs again')")
        check_eq((again.status, again.stdout().strip()), ("ok", "runs again"),
                 "the WebSocket runs again at once")
    r = api("POST", "/v1/executions", {"code": "print('v1 runs again')"})
    check_eq((r.json()["status"], r.json()["stdout"].strip()), ("ok", "v1 runs again"),
             "/v1 runs again at once")
    codes = [e.get("code") for e in executions(audit_lines())]
    check("print('runs again')" in codes and "print('v1 runs again')" in codes,
          "both recorded", codes[-3:])
    check("print('must not run')" not in codes, "the refused ones ran not, and are not recorded")


if __name__ == "__main__":
    sys.exit(run_tests())
