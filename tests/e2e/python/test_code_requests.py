#!/usr/bin/python3
"""Every message that makes a kernel run code is in the audit log, whatever the channel or the
field the code travels in (gateway/kernels/session/code_requests.hpp): an execute_request on the
control channel is refused (ipykernel would run it), user_expressions are recorded with their
execution, and the debugger's evaluations are recorded too. JupyterLab's debugger keeps
working through the gateway: initialize, attach, dumpCell, setBreakpoints, and an execution
stops at the breakpoint, where an evaluation sees the frame.

  CALLISTO_URL=... CALLISTO_TOKEN=... CALLISTO_AUDIT_LOG=FILE /usr/bin/python3 test_code_requests.py
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import callisto_only, check, check_eq, poll, run_code, run_tests  # noqa: E402

AUDIT = os.environ.get("CALLISTO_AUDIT_LOG", "")
TIMEOUT = 60


def audit_lines():
    with open(AUDIT) as f:
        return [json.loads(line) for line in f if line.strip()]


def audited(pred, what):
    return poll(lambda: next((a for a in audit_lines() if pred(a)), None), 20, 0.2, what)


class Debugger:
    """The Debug Adapter Protocol over debug_request/debug_reply on the control channel, as
    JupyterLab's debugger speaks it."""

    def __init__(self, ws):
        self.ws = ws
        self.seq = 0

    def request(self, command, arguments=None):
        self.seq += 1
        m = self.ws.msg("debug_request", {"type": "request", "seq": self.seq, "command": command,
                                          "arguments": arguments or {}}, channel="control")
        self.ws.send(m)
        reply = self.ws.reply_to(m["header"]["msg_id"], channel="control", timeout=TIMEOUT)
        check_eq(reply["msg_type"], "debug_reply", f"{command}: the reply's type")
        return reply["content"]


@callisto_only
def test_an_execute_request_on_the_control_channel_is_refused_and_never_runs(kernel_ws):
    ws = kernel_ws
    ws.kernel_info()
    before = len(audit_lines())
    m = ws.msg("execute_request", {"code": "planted_by_control = 1", "silent": False,
                                   "store_history": False, "user_expressions": {},
                                   "allow_stdin": False, "stop_on_error": True},
               channel="control")
    ws.send(m)
    reply = ws.reply_to(m["header"]["msg_id"], channel="control", timeout=TIMEOUT)
    check_eq(reply["content"]["status"], "error", "refused")
    check_eq(reply["content"]["ename"], "RequestRefused", "the reply says why")
    check("shell channel" in reply["content"]["evalue"], "the reason", reply["content"])
    ex = ws.run_not_aborted("print('planted_by_control' in globals())")
    check_eq(ex.stdout().strip(), "False", "the code never ran")
    check(not any(a.get("code") == "planted_by_control = 1" for a in audit_lines()[before:]),
          "nothing ran, so nothing is recorded")


@callisto_only
def test_user_expressions_are_recorded_with_their_execution(kernel_ws):
    ws = kernel_ws
    ws.kernel_info()
    m = ws.msg("execute_request", {"code": "", "silent": False, "store_history": False,
                                   "user_expressions": {"uid": "__import__('os').getuid()"},
                                   "allow_stdin": False, "stop_on_error": True})
    ws.send(m)
    reply = ws.reply_to(m["header"]["msg_id"], timeout=TIMEOUT)
    check_eq(reply["content"]["user_expressions"]["uid"]["status"], "ok", "it ran")
    line = audited(lambda a: a.get("execution") == m["header"]["msg_id"],
                   "the execution's audit line")
    check_eq(line["user_expressions"], {"uid": "__import__('os').getuid()"},
             "the expressions are in the record")
    check_eq(line["code"], "", "the code itself was empty")


@callisto_only
def test_the_debugger_stops_at_a_breakpoint_and_its_evaluations_are_recorded(kernel_ws):
    ws = kernel_ws
    ws.kernel_info()
    dbg = Debugger(ws)
    init = dbg.request("initialize", {
        "clientID": "callisto-e2e", "clientName": "callisto-e2e", "adapterID": "",
        "pathFormat": "path", "linesStartAt1": True, "columnsStartAt1": True,
        "supportsVariableType": True, "supportsVariablePaging": True,
        "supportsRunInTerminalRequest": True, "locale": "en"})
    check(init["success"], "initialize", init)
    attach = dbg.request("attach")
    check(attach["success"], "attach", attach)
    code = "def f(a, b):\n    c = a + b\n    return c\n\nf(2, 3)\n"
    cell = dbg.request("dumpCell", {"code": code})
    check(cell["success"], "dumpCell", cell)
    source = cell["body"]["sourcePath"]
    bps = dbg.request("setBreakpoints", {"breakpoints": [{"line": 2}],
                                         "source": {"path": source}, "sourceModified": False})
    check(bps["success"] and len(bps["body"]["breakpoints"]) == 1, "setBreakpoints", bps)
    check(dbg.request("configurationDone")["success"], "configurationDone")

    run_id = ws.execute(code)
    stopped = ws.wait_for(lambda m: m["msg_type"] == "debug_event"
                          and m["content"].get("event") == "stopped", TIMEOUT,
                          "the stopped event")
    thread = stopped["content"]["body"]["threadId"]
    frames = dbg.request("stackTrace", {"threadId": thread})
    check(frames["success"], "stackTrace", frames)
    frame = frames["body"]["stackFrames"][0]
    check_eq(frame["line"], 2, "stopped at the breakpoint's line")
    evaluation = dbg.request("evaluate", {"expression": "a + b", "frameId": frame["id"],
                                          "context": "repl"})
    check(evaluation["success"], "evaluate", evaluation)
    check_eq(evaluation["body"]["result"], "5", "the evaluation sees the frame")
    run = audited(lambda a: a.get("request") == "debug_request evaluate"
                  and a.get("code") == "a + b", "the evaluation's run line")
    audited(lambda a: a.get("event") == "end" and a.get("run_seq") == run["seq"]
            and a.get("status") == "ok", "its end line")
    check(dbg.request("continue", {"threadId": thread})["success"], "continue")
    reply = ws.reply_to(run_id, timeout=TIMEOUT)
    check_eq(reply["content"]["status"], "ok", "the execution finished")
    dbg.request("disconnect", {"restart": False, "terminateDebuggee": True})


@callisto_only
def test_files_written_names_what_an_execution_created_or_changed(context):
    ex = run_code(context,
                  "open('kept.txt', 'w').write('1'); open('edited.txt', 'w').write('a')")
    check_eq(ex["status"], "ok", "the first execution")
    ex = run_code(context, "import os\n"
                           "os.makedirs('out', exist_ok=True)\n"
                           "open('out/result.csv', 'w').write('a,b\\n1,2\\n')\n"
                           "open('edited.txt', 'a').write('b')\n"
                           "open('.env', 'w').write('X=1')\n")
    check_eq(ex["status"], "ok", "the second execution")
    line = audited(lambda a: a.get("event") == "end" and a.get("execution") == ex["id"],
                   "its end line")
    check_eq(line["files_written"], [".env", "edited.txt", "out/result.csv"],
             "what it created or changed, not what it left alone")
    ex = run_code(context, "1 + 1")
    line = audited(lambda a: a.get("event") == "end" and a.get("execution") == ex["id"],
                   "a third end line")
    check_eq(line["files_written"], [], "an execution that wrote nothing")


if __name__ == "__main__":
    sys.exit(run_tests())
