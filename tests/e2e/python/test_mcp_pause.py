#!/usr/bin/python3
"""Snapshots, forks, pause and resume through MCP (issue 37): the tools snapshot_context,
list_snapshots, delete_snapshot, restore_snapshot, fork_context, pause_context and
resume_context do what the /v1 routes do, with their checks, as tool errors a model reads;
run_code's context_id, and the file tools' and restart_context's, reach the contexts they make,
resuming a paused one first.

The server runs with --users=FILE: ana (ana-token-1, max_kernels 2), bob (bob-token-1) and
root (root-token-1, admin), as e2e_tests writes it, and keeps snapshots (a --state-dir).

  CALLISTO_URL=… /usr/bin/python3 test_mcp_pause.py [-k NAME]
"""

import json
import os
import re
import sys
import threading
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    api, callisto_only, check, check_eq, delete_context, poll, run_tests,
)
from mcp_client import Session  # noqa: E402

ANA, BOB = "ana-token-1", "bob-token-1"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

SETUP = r"""
x = 41
def twice(v):
    return 2 * v
class Box:
    def __init__(self, v):
        self.v = v
box = Box("kept")
open("kept.txt", "w").write("a file")
print("ready")
"""

STATE = r"""
import json
print(json.dumps({"x": x, "twice": twice(x), "box": box.v, "file": open("kept.txt").read()}))
"""


def ok(session, name, **arguments):
    text, err = session.tool(name, **arguments)
    check(not err, f"{name} succeeds", text)
    return text


def refused(session, name, **arguments):
    text, err = session.tool(name, **arguments)
    check(err, f"{name} is a tool error", text)
    return text


def state_of(session, context_id=None):
    args = {"code": STATE}
    if context_id:
        args["context_id"] = context_id
    text = ok(session, "run_code", **args)
    line = [s for s in text.splitlines() if s.startswith("{")]
    check(line, "the state printed", text)
    return json.loads(line[-1])


def context_model(token, context_id):
    r = api("GET", f"/v1/contexts/{context_id}", token=token)
    check_eq(r.status, 200, f"GET context {context_id} ({r.body[:200]!r})")
    return r.json()


def session_context(token):
    """The MCP session's own context, as /v1 lists it."""
    mine = [c for c in api("GET", "/v1/contexts", token=token).json()
            if c.get("state") != "paused"]
    check(mine, "the session's context is listed", mine)
    return mine


@callisto_only
def test_snapshot_fork_pause_resume_through_mcp_keep_the_state():
    bob = Session(BOB)
    made = []
    try:
        check("ready" in ok(bob, "run_code", code=SETUP), "setup ran")
        text = ok(bob, "snapshot_context")
        snapshot = re.search(r"snapshot (" + UUID + ") saved", text)
        check(snapshot, "snapshot_context names its snapshot", text)
        snapshot = snapshot.group(1)
        check(snapshot in ok(bob, "list_snapshots"), "list_snapshots lists it")

        # Two copies, each independent of the other and of the session's own state.
        text = ok(bob, "fork_context", count=2)
        forks = re.search(r"2 new context\(s\): (" + UUID + "), (" + UUID + ")", text)
        check(forks, "fork_context names two new contexts", text)
        forks = [forks.group(1), forks.group(2)]
        made += forks
        for f in forks:
            check_eq(state_of(bob, f), {"x": 41, "twice": 82, "box": "kept", "file": "a file"},
                     f"fork {f} has the state and the file")
        ok(bob, "run_code", code="x = 1", context_id=forks[0])
        check_eq(state_of(bob, forks[1])["x"], 41, "the other fork is untouched")
        check_eq(state_of(bob)["x"], 41, "the session's context is untouched")
        # They are bob's contexts, as /v1 sees them.
        for f in forks:
            check_eq(context_model(BOB, f)["state"] != "paused", True, "a fork is live")

        # Paused through MCP: listed paused over /v1; its next run_code resumes it whole.
        text = ok(bob, "pause_context", context_id=forks[0])
        check("is paused" in text, "pause_context says it paused", text)
        check_eq(context_model(BOB, forks[0])["state"], "paused", "/v1 lists it paused")
        text = ok(bob, "pause_context", context_id=forks[0])
        check("is paused" in text, "pausing it again answers the same", text)
        text, err = bob.tool("run_code", code=STATE, context_id=forks[0])
        check(not err and "was paused; it was resumed in" in text,
              "run_code resumes it and says so", text)
        check('"x": 1' in text, "its own state came back", text)

        # Paused again, then resume_context brings it back with its state.
        ok(bob, "pause_context", context_id=forks[0])
        text = ok(bob, "resume_context", context_id=forks[0])
        check(re.search(r"is live again \(resumed in \d+ ms\)", text), "resume_context says so",
              text)
        check("was live" in ok(bob, "resume_context", context_id=forks[0]),
              "resuming a live context changes nothing")
        check_eq(state_of(bob, forks[0])["x"], 1, "the state is kept across the resume")

        # The snapshot restored into a new context: the state as it was when taken.
        text = ok(bob, "restore_snapshot", snapshot_id=snapshot)
        restored = re.search(r"restored into the new context (" + UUID + ")", text)
        check(restored, "restore_snapshot names the new context", text)
        made.append(restored.group(1))
        check_eq(state_of(bob, restored.group(1)),
                 {"x": 41, "twice": 82, "box": "kept", "file": "a file"}, "restored whole")

        check("deleted" in ok(bob, "delete_snapshot", snapshot_id=snapshot), "deleted")
        check(snapshot not in ok(bob, "list_snapshots"), "no longer listed")
        check("does not exist" in refused(bob, "delete_snapshot", snapshot_id=snapshot),
              "deleting it again is a tool error")
    finally:
        check_eq(bob.end().status, 204, "bob ends his session")
        for c in made:
            delete_context(c, token=BOB)


@callisto_only
def test_what_mcp_refuses_is_a_tool_error_with_the_reason():
    bob = Session(BOB)
    ana = Session(ANA)
    made = []
    try:
        ok(bob, "run_code", code=SETUP)
        snapshot = re.search(r"snapshot (" + UUID + ")", ok(bob, "snapshot_context")).group(1)
        fork = re.search(UUID, ok(bob, "fork_context")).group(0)
        made.append(fork)

        # Another user's snapshot and contexts do not exist for her, whatever the tool.
        check("does not exist" in refused(ana, "restore_snapshot", snapshot_id=snapshot).lower(),
              "ana cannot restore bob's snapshot")
        check("does not exist" in refused(ana, "delete_snapshot", snapshot_id=snapshot).lower(),
              "nor delete it")
        check(snapshot not in ok(ana, "list_snapshots"), "nor list it")
        for tool in ("pause_context", "resume_context", "snapshot_context", "fork_context"):
            check("does not exist" in refused(ana, tool, context_id=fork),
                  f"ana's {tool} of bob's context")
        check("does not exist" in refused(ana, "run_code", code="1", context_id=fork),
              "ana cannot run code in bob's context")
        check_eq(context_model(BOB, fork)["state"] != "paused", True, "bob's fork is untouched")

        # Unknown, well-formed ids.
        nobody = str(uuid.uuid4())
        for tool in ("pause_context", "resume_context"):
            check("does not exist" in refused(bob, tool, context_id=nobody), f"{tool}: unknown")
        check("does not exist" in refused(bob, "restore_snapshot", snapshot_id=nobody).lower(),
              "restore of an unknown snapshot")

        # The session's own context is not paused: the session finds it live.
        own = [c["id"] for c in session_context(BOB) if c["id"] != fork]
        check_eq(len(own), 1, "bob has one session context besides the fork")
        text = refused(bob, "pause_context", context_id=own[0])
        check("MCP session" in text, "pausing the session's context is refused", text)

        # A busy context is not snapshotted, forked nor paused.
        started = threading.Event()

        def sleep_in_fork():
            started.set()
            api("POST", f"/v1/contexts/{fork}/executions",
                {"code": "import time; time.sleep(6)"}, token=BOB, timeout=60)
        t = threading.Thread(target=sleep_in_fork)
        t.start()
        started.wait()
        for _ in range(100):
            if context_model(BOB, fork).get("running"):
                break
            threading.Event().wait(0.05)
        for tool in ("snapshot_context", "fork_context", "pause_context"):
            text = refused(bob, tool, context_id=fork)
            check("busy" in text, f"{tool} of a busy context", text)
        t.join()

        # A count out of range never reaches the server's work: invalid params.
        bob.next_id += 1
        r = bob.post({"jsonrpc": "2.0", "id": bob.next_id, "method": "tools/call",
                      "params": {"name": "fork_context", "arguments": {"count": 17}}})
        body = r.json()
        check("error" in body and "from 1 to 16" in body["error"]["message"],
              "count 17 is refused", body)

        # Ana's kernel quota (2) applies to her forks: all are made, or none.
        # Kernels of ana's contexts from earlier suites count against her quota while the
        # reuse policy resets them: her session's first call may wait for one to give way.
        def first_call():
            text, err = ana.tool("run_code", code="y = 1")
            check(not err or "limit" in text, "ana runs code", text)
            return not err
        poll(first_call, 60, interval=0.5, what="ana's first call within her quota")
        before = {c["id"] for c in api("GET", "/v1/contexts", token=ANA).json()}
        text = refused(ana, "fork_context", count=2)
        check("limit" in text.lower() or "kernels" in text.lower(), "past her quota", text)
        after = {c["id"] for c in api("GET", "/v1/contexts", token=ANA).json()}
        check_eq(after, before, "no copy of a failed fork is left")
        listed = ok(bob, "list_snapshots")
        for s in json.loads(listed[listed.index("\n") + 1:]):
            ok(bob, "delete_snapshot", snapshot_id=s["id"])
    finally:
        ana.end()
        bob.end()
        for c in made:
            delete_context(c, token=BOB)


@callisto_only
def test_file_tools_and_restart_reach_a_context_by_id():
    bob = Session(BOB)
    ana = Session(ANA)
    made = []
    try:
        ok(bob, "run_code", code=SETUP)
        fork = re.search(UUID, ok(bob, "fork_context")).group(0)
        made.append(fork)

        # Files go to, and come from, the context named; the session's own stays as it was.
        ok(bob, "upload_file", path="only-fork.txt", content="in the fork", context_id=fork)
        listed = ok(bob, "list_files", context_id=fork)
        check("only-fork.txt" in listed and "kept.txt" in listed, "the fork's files", listed)
        check("only-fork.txt" not in ok(bob, "list_files"), "not in the session's context")
        check("in the fork" in ok(bob, "read_file", path="only-fork.txt", context_id=fork),
              "read back from the fork")
        check("no such file" in refused(bob, "read_file", path="only-fork.txt"),
              "the session's context has no such file")

        # A paused context is resumed for a file tool, and the model is told.
        ok(bob, "pause_context", context_id=fork)
        text = ok(bob, "read_file", path="only-fork.txt", context_id=fork)
        check("was paused; it was resumed in" in text and "in the fork" in text,
              "read_file resumes it and says so", text)

        # restart_context by id restarts that kernel only.
        ok(bob, "restart_context", context_id=fork)
        text = ok(bob, "run_code", code="print('x' in dir())", context_id=fork)
        check("False" in text, "the fork's variables are gone after its restart", text)
        check_eq(state_of(bob)["x"], 41, "the session's context kept its state")
        check("only-fork.txt" in ok(bob, "list_files", context_id=fork),
              "the fork's files stay across its restart")

        # Another user's context does not exist for her, whatever the tool.
        for tool, args in (("upload_file", {"path": "a.txt", "content": "x"}),
                           ("list_files", {}), ("read_file", {"path": "kept.txt"}),
                           ("restart_context", {})):
            check("does not exist" in refused(ana, tool, context_id=fork, **args),
                  f"ana's {tool} of bob's context")
        check("only-fork.txt" in ok(bob, "list_files", context_id=fork), "bob's fork untouched")
        # A context_id that is not an id never reaches the server's work: invalid params.
        for bad in (7, "not-a-uuid"):
            bob.next_id += 1
            r = bob.post({"jsonrpc": "2.0", "id": bob.next_id, "method": "tools/call",
                          "params": {"name": "list_files", "arguments": {"context_id": bad}}})
            check("error" in r.json() and "context_id" in r.json()["error"]["message"],
                  f"context_id {bad!r} is refused", r.json())
    finally:
        ana.end()
        bob.end()
        for c in made:
            delete_context(c, token=BOB)


if __name__ == "__main__":
    sys.exit(run_tests())
