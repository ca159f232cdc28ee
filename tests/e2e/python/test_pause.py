#!/usr/bin/python3
"""Pause and resume of contexts (issue 37): POST /v1/contexts/{id}/pause saves a Python or R
context's state as a snapshot of its own and shuts its kernel down; the context keeps its id,
is listed "paused", and its next execution (or POST .../resume) brings it back into a fresh
sandboxed kernel with its variables, functions, classes and files, saying how long that took.
The server under test runs with --users=FILE where FILE holds ana (token ana-token-1), bob
(bob-token-1) and root (root-token-1, admin), as e2e_tests writes it.

  CALLISTO_URL=… CALLISTO_PID=… /usr/bin/python3 test_pause.py [-k NAME]

Two phases run around a SIGKILL of the gateway and a start with the same --state-dir (the
TEST_CASE in tests/e2e/e2e_tests.cpp drives them; state in $CALLISTO_E2E_STATE):
  -k phase_before_restart   a Python and an R context are given state and paused
  -k phase_after_restart    they are listed paused, and their next executions resume them whole
and one against a server started with --pause-idle=2 (CALLISTO_E2E_PHASE=idle):
  -k phase_idle             idle contexts (Python, R) are paused on their own, and resume with
                            their state
and two around a restart with --paused-ttl=4s (CALLISTO_E2E_PHASE=ttl_before, ttl_after):
  -k phase_ttl_before       a context paused under the default TTL shows expires_at (30 days)
  -k phase_ttl_after        it expires from its record's pause time; one paused now, 4 s after
"""

import datetime
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    BASE_URL, HTTP_TIMEOUT, SkipTest, alive, api, callisto_only, check, check_documented,
    check_eq, create_context, delete_context, gateway_args, poll, process_tree, run_code_ok,
    run_tests,
)

ANA, BOB, ROOT = "ana-token-1", "bob-token-1", "root-token-1"
PHASE = os.environ.get("CALLISTO_E2E_PHASE", "")

SETUP = r"""
import numpy as np
arr = np.arange(2_000_000, dtype=np.float64)   # 16 MB the kernel holds
def twice(x):
    return 2 * x + len(arr)
class Counter:
    def __init__(self, start):
        self.n = start
    def bump(self):
        self.n += 1
        return self.n
counter = Counter(41)
with open("notes.txt", "w") as f:
    f.write("written before the pause")
print("ready")
"""

CHECK = r"""
import json
print(json.dumps({
    "sum": float(arr.sum()),
    "twice": twice(3),
    "bump": counter.bump(),
    "np": np.__name__,
    "notes": open("notes.txt").read(),
}))
"""

# An R context's state: a data frame, a function that reads it, an attached package and a file.
R_SETUP = r"""
library(tools)
df <- data.frame(x = 1:5, y = c("a", "b", "c", "d", "e"), stringsAsFactors = FALSE)
scale_by <- function(v, k = 3) v * k + nrow(df)
writeLines("written by R before the pause", "r_notes.txt")
cat("ready\n")
"""

R_CHECK = r"""
cat(jsonlite::toJSON(list(
  sum = sum(df$x), y = paste(df$y, collapse = ""), class = class(df),
  f = scale_by(2), tools = "package:tools" %in% search(),
  notes = readLines("r_notes.txt")), auto_unbox = TRUE), "\n")
"""


def r_kernel():
    kernels = api("GET", "/v1/languages", token=ANA).json()["kernels"]
    names = [k["name"] for k in kernels if k["language"].lower() == "r"]
    if not names:
        raise SkipTest("no R kernel (IRkernel) is installed here")
    return names[0]


def expect_r_state(check_result, what):
    check_eq(check_result["sum"], 15, f"{what}: the data frame's column")
    check_eq(check_result["y"], "abcde", f"{what}: its character column")
    check_eq(check_result["class"], "data.frame", f"{what}: a data frame still")
    check_eq(check_result["f"], 11, f"{what}: the function, with its global")
    check_eq(check_result["tools"], True, f"{what}: the package attached again")
    check_eq(check_result["notes"], "written by R before the pause", f"{what}: the file")


def execute(token, context_id, code, timeout=300):
    return api("POST", f"/v1/contexts/{context_id}/executions", {"code": code}, token=token,
               timeout=timeout)


def last_json(e):
    return json.loads(e["stdout"].strip().splitlines()[-1])


def kernel_pid(token, kernel_id):
    r = api("GET", f"/api/kernels/{kernel_id}", token=token)
    check_eq(r.status, 200, "the kernel is there")
    return r.json()["callisto"]["pid"]


def rss_kib(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def pause(token, context_id, expect=200):
    r = api("POST", f"/v1/contexts/{context_id}/pause", token=token, timeout=300)
    check_eq(r.status, expect, f"pause answered ({r.body[:500]!r})")
    check_documented("POST", "/v1/contexts/{context_id}/pause", r)
    return r


def state_dir():
    return os.path.join(gateway_args()["workdir-root"], ".callisto-state")


def paused_snapshots():
    d = os.path.join(state_dir(), "paused-snapshots")
    return sorted(n for n in os.listdir(d) if not n.startswith(".")) if os.path.isdir(d) else []


def expect_state(check_result, counter_value, what):
    check_eq(check_result["sum"], float(sum(range(2_000_000))), f"{what}: the array")
    check_eq(check_result["twice"], 2_000_006, f"{what}: the function, with its global")
    check_eq(check_result["bump"], counter_value, f"{what}: the class instance and its method")
    check_eq(check_result["np"], "numpy", f"{what}: the module, imported again")
    check_eq(check_result["notes"], "written before the pause", f"{what}: the file")


def phase_only(name):
    if PHASE != name:
        raise SkipTest(f"a phase of the restart TEST_CASE (CALLISTO_E2E_PHASE={name})")


@callisto_only
@pytest.mark.context({"policy": "fresh"}, token=ANA)
def test_pause_frees_the_kernel_and_the_next_execution_resumes_the_state(context):
    run_code_ok(context, SETUP, token=ANA)
    pid = kernel_pid(ROOT, context["kernel_id"])  # the "callisto" object is an admin's to see
    tree = process_tree(pid)
    rss = rss_kib(tree)
    check(rss > 16 * 1024, "the kernel holds its array", rss)
    r = pause(ANA, context["id"])
    model = r.json()
    check_eq(model["id"], context["id"], "the same id")
    check_eq(model["state"], "paused", "its state")
    check_eq(model["kernel_id"], None, "no kernel")
    check(model["paused"]["size"] > 16_000_000 and model["paused"]["duration_ms"] >= 0,
          "the pause says its size and time", model["paused"])
    check("arr" in model["paused"]["carried"], "what it carried", model["paused"])
    # The kernel is gone, all its processes, and with them its memory.
    poll(lambda: not any(alive(p) for p in tree), 30, what="the kernel's processes gone")
    print(f"  pause freed the kernel's {rss // 1024} MiB (pids {tree} gone)")
    r = api("GET", f"/api/kernels/{context['kernel_id']}", token=ANA)
    check_eq(r.status, 404, "its kernel is no longer listed")

    r = check_documented("GET", "/v1/contexts", api("GET", "/v1/contexts", token=ANA))
    listed = {c["id"]: c for c in r.json()}
    check(context["id"] in listed and listed[context["id"]]["state"] == "paused", "listed paused",
          listed.get(context["id"]))
    r = check_documented("GET", "/v1/contexts/{context_id}",
                         api("GET", f"/v1/contexts/{context['id']}", token=ANA))
    check_eq(r.json()["state"], "paused", "GET says paused")
    # Pausing it again changes nothing.
    check_eq(pause(ANA, context["id"]).json()["state"], "paused", "a second pause: 200")
    # Its snapshot is the context's, not among ana's own.
    r = api("GET", "/v1/snapshots", token=ANA)
    check(all(s.get("context_id") != context["id"] for s in r.json()),
          "the pause's snapshot is not listed as ana's", r.json())

    r = execute(ANA, context["id"], CHECK)
    check_eq(r.status, 200, f"the execution resumed the context ({r.body[:500]!r})")
    check_documented("POST", "/v1/contexts/{context_id}/executions", r)
    e = r.json()
    check_eq(e["status"], "ok", f"it ran ({e.get('error')!r})")
    check(isinstance(e.get("resumed", {}).get("duration_ms"), int), "the resume time", e)
    print(f"  resumed in {e['resumed']['duration_ms']} ms")
    expect_state(last_json(e), 42, "after the resume")
    r = api("GET", f"/v1/contexts/{context['id']}", token=ANA)
    live = r.json()
    check_eq(live["state"], "idle", "live again")
    check(live["kernel_id"] not in (None, context["kernel_id"]), "in a new kernel", live)
    check_eq(paused_snapshots(), [], "the pause's snapshot is gone once resumed")
    # An execution on the live context says nothing of a resume.
    check("resumed" not in run_code_ok(context, "print(1)", token=ANA),
          "no resume the second time")


@callisto_only
@pytest.mark.context({"policy": "fresh"}, token=ANA)
def test_two_executions_at_once_resume_the_context_once(context):
    run_code_ok(context, "x = 7", token=ANA)
    pause(ANA, context["id"])
    answers = [None, None]

    def go(i):
        answers[i] = execute(ANA, context["id"], f"print(x + {i})")

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for i, r in enumerate(answers):
        check_eq(r.status, 200, f"execution {i} answered ({r.body[:300]!r})")
        check_eq(r.json()["stdout"], f"{7 + i}\n", f"execution {i} saw x")
    # One kernel: ana has this context's alone (a second resume would have made another).
    r = api("GET", "/api/kernels", token=ANA)
    kernels = [k["id"] for k in r.json()]
    live = api("GET", f"/v1/contexts/{context['id']}", token=ANA).json()
    check_eq(kernels, [live["kernel_id"]], "one kernel for the resumed context")


@callisto_only
@pytest.mark.context({"policy": "fresh"}, token=ANA)
def test_resume_route_and_a_streamed_execution_resume_it(context):
    run_code_ok(context, "y = 'kept'", token=ANA)
    pause(ANA, context["id"])
    r = api("POST", f"/v1/contexts/{context['id']}/resume", token=ANA, timeout=300)
    check_eq(r.status, 200, f"resume answered ({r.body[:300]!r})")
    check_documented("POST", "/v1/contexts/{context_id}/resume", r)
    check(isinstance(r.json()["resumed"]["duration_ms"], int), "the resume time", r.json())
    check_eq(r.json()["state"] in ("idle", "starting", "busy"), True, "live")
    # Resuming a live context: 200, nothing to report.
    r = api("POST", f"/v1/contexts/{context['id']}/resume", token=ANA)
    check_eq(r.status, 200, "resume of a live context")
    check("resumed" not in r.json(), "nothing resumed", r.json())
    check_eq(run_code_ok(context, "print(y)", token=ANA)["stdout"], "kept\n", "the state is back")

    # NDJSON: the first event says the execution resumed the context.
    pause(ANA, context["id"])
    url = urllib.parse.urlsplit(BASE_URL)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=HTTP_TIMEOUT)
    conn.request("POST", f"/v1/contexts/{context['id']}/executions",
                 body=json.dumps({"code": "print(y)"}),
                 headers={"Authorization": f"token {ANA}",
                          "Content-Type": "application/json",
                          "Accept": "application/x-ndjson"})
    resp = conn.getresponse()
    check_eq(resp.status, 200, "the stream began")
    events = [json.loads(line) for line in resp.read().decode().splitlines()]
    conn.close()
    check_eq(events[0]["type"], "queued", "the first event")
    check(isinstance(events[0].get("resumed", {}).get("duration_ms"), int),
          "it says the context resumed", events[0])
    check_eq(events[-1]["execution"]["stdout"], "kept\n", "the state is back")

    # A route of files resumes it too.
    pause(ANA, context["id"])
    r = api("GET", f"/v1/contexts/{context['id']}/files", token=ANA, timeout=300)
    check_eq(r.status, 200, f"files of a paused context ({r.body[:300]!r})")
    check_eq(api("GET", f"/v1/contexts/{context['id']}", token=ANA).json()["state"] != "paused",
             True, "live again")


@callisto_only
@pytest.mark.context({"policy": "fresh"}, token=ANA)
def test_the_events_websocket_of_a_paused_context_resumes_it(context):
    import websocket  # python3-websocket
    run_code_ok(context, "v = 'over the socket'", token=ANA)
    pause(ANA, context["id"])
    url = urllib.parse.urlsplit(BASE_URL)
    ws = websocket.create_connection(f"ws://{url.netloc}/v1/contexts/{context['id']}/events",
                                     header=[f"Authorization: token {ANA}"], timeout=300)
    try:
        ws.send(json.dumps({"type": "execute", "code": "print(v)"}))
        text = ""
        while True:
            m = json.loads(ws.recv())
            if m["type"] == "stdout":
                text += m["text"]
            if m["type"] == "end":
                break
        check_eq(text, "over the socket\n", "the socket runs in the resumed context")
    finally:
        ws.close()
    check_eq(api("GET", f"/v1/contexts/{context['id']}", token=ANA).json()["state"], "idle",
             "live again")
    # Another user's socket to a paused context: 404 before any upgrade.
    pause(ANA, context["id"])
    r = api("GET", f"/v1/contexts/{context['id']}/events", token=BOB)
    check_eq(r.status, 404, "bob's socket")
    check_eq(api("GET", f"/v1/contexts/{context['id']}", token=ANA).json()["state"], "paused",
             "still paused")


@callisto_only
def test_delete_of_a_paused_context_deletes_its_snapshot():
    ctx = create_context({"policy": "fresh"}, token=ANA)
    run_code_ok(ctx, "z = 1\nopen('f.txt', 'w').write('x')", token=ANA)
    before = paused_snapshots()
    pause(ANA, ctx["id"])
    check_eq(len(paused_snapshots()), len(before) + 1, "the pause wrote a snapshot")
    r = api("DELETE", f"/v1/contexts/{ctx['id']}", token=ANA)
    check_eq(r.status, 204, "deleted")
    check_documented("DELETE", "/v1/contexts/{context_id}", r)
    check_eq(api("GET", f"/v1/contexts/{ctx['id']}", token=ANA).status, 404, "gone")
    check_eq(execute(ANA, ctx["id"], "print(z)").status, 404, "nothing resumes")
    check_eq(paused_snapshots(), before, "its snapshot went with it")
    check_eq(sorted(os.listdir(os.path.join(state_dir(), "paused"))), [], "and its record")


@callisto_only
@pytest.mark.context({"policy": "fresh"}, token=ANA)
def test_another_users_pause_and_resume_get_404(context):
    run_code_ok(context, "w = 3", token=ANA)
    check_eq(api("POST", f"/v1/contexts/{context['id']}/pause", token=BOB).status, 404,
             "bob pausing ana's live context")
    pause(ANA, context["id"])
    for method, path, body in (("POST", "/pause", None), ("POST", "/resume", None),
                               ("GET", "", None), ("DELETE", "", None),
                               ("POST", "/executions", {"code": "print(w)"}),
                               ("GET", "/files", None)):
        r = api(method, f"/v1/contexts/{context['id']}{path}", body, token=BOB)
        check_eq(r.status, 404, f"bob: {method} {path or '/'} of ana's paused context")
    check(context["id"] not in [c["id"] for c in api("GET", "/v1/contexts", token=BOB).json()],
          "bob does not list it")
    check_eq(api("GET", f"/v1/contexts/{context['id']}", token=ANA).json()["state"], "paused",
             "still paused: bob resumed nothing")
    # An admin sees it and may resume it.
    check(context["id"] in [c["id"] for c in api("GET", "/v1/contexts", token=ROOT).json()],
          "an admin lists it")
    check_eq(run_code_ok(context, "print(w)", token=ANA)["stdout"], "3\n", "ana resumes it")
    for bad in ("not-an-id", context["id"].upper()):
        r = api("POST", f"/v1/contexts/{bad}/pause", token=ANA)
        check(r.status in (400, 404), f"pause of {bad} refused", r)


@callisto_only
@pytest.mark.context({"policy": "fresh"}, token=ANA)
def test_a_busy_context_is_not_paused(context):
    t = threading.Thread(target=lambda: execute(ANA, context["id"], "import time; time.sleep(4)"))
    t.start()
    time.sleep(1.0)
    r = pause(ANA, context["id"], expect=409)
    check("busy" in r.json()["message"], "says why", r.json())
    t.join(60)
    check_eq(api("GET", f"/v1/contexts/{context['id']}", token=ANA).json()["state"], "idle",
             "still live")


def contexts_of(token):
    return {c["id"]: c for c in api("GET", "/v1/contexts", token=token).json()}


def refused_as_owned_by(token, context_id, owner_words):
    r = pause(token, context_id, expect=409)
    check(owner_words in r.json()["message"], "says whose it is", r.json())
    check_eq(contexts_of(token)[context_id]["state"] != "paused", True, "still live")


@callisto_only
def test_contexts_of_mcp_sessions_e2b_sandboxes_and_one_shots_are_not_paused():
    # Each finds its context live by its own route (the session's tools, the sandbox's
    # envd, the one-shot's answer), none of which resumes: they answer 409 and stay live.
    from mcp_client import Session
    before = set(contexts_of(BOB))
    session = Session(BOB)
    try:
        text, err = session.tool("run_code", code="x = 1")
        check(not err, "the session's context is made", text)
        own = [i for i in contexts_of(BOB) if i not in before]
        check_eq(len(own), 1, "the session's context is listed")
        refused_as_owned_by(BOB, own[0], "an MCP session")
    finally:
        session.end()

    before = set(contexts_of(BOB))
    r = api("POST", "/v2/sandboxes", {"templateID": "code-interpreter-v1"}, token=BOB, timeout=120)
    check_eq(r.status, 201, f"an E2B sandbox ({r.body[:300]!r})")
    sandbox = r.json()["sandboxID"]
    try:
        own = [i for i in contexts_of(BOB) if i not in before]
        check_eq(len(own), 1, "the sandbox's context is listed")
        refused_as_owned_by(BOB, own[0], "an E2B sandbox")
    finally:
        api("DELETE", f"/sandboxes/{sandbox}", token=BOB, timeout=60)

    before = set(contexts_of(BOB))
    t = threading.Thread(target=lambda: api("POST", "/v1/executions",
                                            {"code": "import time; time.sleep(5)"}, token=BOB,
                                            timeout=120))
    t.start()
    try:
        poll(lambda: any(i not in before for i in contexts_of(BOB)), 30, interval=0.1,
             what="the one-shot's context is listed")
        own = [i for i in contexts_of(BOB) if i not in before]
        check(contexts_of(BOB)[own[0]]["one_shot"], "it is the one-shot's")
        # Asked while it runs (it is only there then): refused for whose it is, before busy.
        r = pause(BOB, own[0], expect=409)
        check("a one-shot execution" in r.json()["message"], "says whose it is", r.json())
    finally:
        t.join(120)


@callisto_only
def test_an_r_context_pauses_and_its_next_execution_resumes_it():
    ctx = create_context({"kernel": r_kernel(), "policy": "fresh"}, token=ANA)
    try:
        run_code_ok(ctx, R_SETUP, token=ANA)
        pid = kernel_pid(ROOT, ctx["kernel_id"])
        tree = process_tree(pid)
        # An open connection belongs to the process: listed, not carried.
        run_code_ok(ctx, 'con <- file("r_scratch.txt", "w")', token=ANA)
        model = pause(ANA, ctx["id"]).json()
        check_eq(model["state"], "paused", "its state")
        check_eq(model["kernel_id"], None, "no kernel")
        check_eq(model["languages"], ["r"], "it still runs R")
        check_eq(sorted(model["paused"]["carried"]), ["df", "scale_by"], "what it carried")
        check_eq([(n["name"], n["reason"]) for n in model["paused"]["not_carried"]],
                 [("con", "an open connection belongs to this process")], "what it did not")
        poll(lambda: not any(alive(p) for p in tree), 30, what="the R kernel's processes gone")
        listed = {c["id"]: c for c in api("GET", "/v1/contexts", token=ANA).json()}
        check(listed.get(ctx["id"], {}).get("state") == "paused", "listed paused",
              listed.get(ctx["id"]))
        check_eq(listed[ctx["id"]]["kernel"], ctx["kernel"], "with its R kernel")
        check_eq(listed[ctx["id"]]["languages"], ["r"], "and its language")

        r = execute(ANA, ctx["id"], R_CHECK)
        check_eq(r.status, 200, f"the execution resumed the context ({r.body[:500]!r})")
        e = r.json()
        check_eq(e["status"], "ok", f"it ran ({e.get('error')!r}, {e.get('stderr', '')!r})")
        check(isinstance(e.get("resumed", {}).get("duration_ms"), int), "the resume time", e)
        print(f"  R context resumed in {e['resumed']['duration_ms']} ms")
        expect_r_state(last_json(e), "after the resume")
        live = api("GET", f"/v1/contexts/{ctx['id']}", token=ANA).json()
        check_eq(live["kernel"], ctx["kernel"], "in an R kernel again")
        check(live["kernel_id"] not in (None, ctx["kernel_id"]), "a new one", live)
        check_eq(paused_snapshots(), [], "the pause's snapshot is gone once resumed")
        # Nothing of the gateway's is left in the global environment (.pbd_env is IRkernel's
        # own, its new kernel's) nor in the workdir.
        e = run_code_ok(ctx, 'cat(jsonlite::toJSON(list(names = ls(all.names = TRUE), '
                             'files = list.files(all.files = TRUE, pattern = "callisto"))))',
                        token=ANA)
        check_eq(last_json(e), {"names": [".pbd_env", "df", "scale_by"], "files": []},
                 "only the user's names, no snapshot file")
        # Paused again and resumed by the route this time.
        pause(ANA, ctx["id"])
        r = api("POST", f"/v1/contexts/{ctx['id']}/resume", token=ANA, timeout=300)
        check_eq(r.status, 200, f"resumed ({r.body[:300]!r})")
        check_eq(r.json()["kernel"], ctx["kernel"], "into an R kernel")
        expect_r_state(last_json(run_code_ok(ctx, R_CHECK, token=ANA)), "after the second resume")
    finally:
        delete_context(ctx["id"], token=ANA)


@callisto_only
@pytest.mark.context({"language": "bash", "policy": "fresh"}, token=ANA)
def test_a_bash_and_sql_context_pauses_as_the_python_context_it_is(context):
    # Bash and SQL run in a Python kernel (through the runners): a context asked for bash is a
    # Python context, so pausing it keeps its files and the Python namespace its SQL runs in.
    check_eq(context["languages"][:1], ["python"], "a Python kernel runs it")
    r = api("POST", f"/v1/contexts/{context['id']}/executions",
            {"code": "echo kept by bash > bash_notes.txt", "language": "bash"}, token=ANA,
            timeout=120)
    check_eq((r.status, r.json()["status"]), (200, "ok"), f"bash ran ({r.body[:300]!r})")
    r = api("POST", f"/v1/contexts/{context['id']}/executions",
            {"code": "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (7);",
             "language": "sql"}, token=ANA, timeout=120)
    check_eq((r.status, r.json()["status"]), (200, "ok"), f"sql ran ({r.body[:300]!r})")
    pause(ANA, context["id"])
    r = api("POST", f"/v1/contexts/{context['id']}/executions",
            {"code": "cat bash_notes.txt", "language": "bash"}, token=ANA, timeout=300)
    check_eq(r.status, 200, f"the bash execution resumed it ({r.body[:300]!r})")
    e = r.json()
    check("resumed" in e, "it says so", e)
    check_eq(e["stdout"], "kept by bash\n", "the file bash wrote")
    r = api("POST", f"/v1/contexts/{context['id']}/executions",
            {"code": "SELECT x FROM t", "language": "sql"}, token=ANA, timeout=120)
    check_eq((r.status, r.json()["status"]), (200, "ok"), f"sql ran ({r.body[:300]!r})")
    check_eq(r.json()["results"][0]["data"]["application/json"]["rows"], [[7]],
             "the SQL table (callisto.db, a file of the workdir) came back")


@callisto_only
def test_a_context_of_another_language_is_not_paused():
    kernels = api("GET", "/v1/languages", token=ANA).json()["kernels"]
    other = [k["name"] for k in kernels if k["language"].lower() not in ("python", "r")]
    if not other:
        raise SkipTest("no kernel here speaks a language besides Python and R")
    ctx = create_context({"kernel": other[0], "policy": "fresh"}, token=ANA)
    try:
        r = pause(ANA, ctx["id"], expect=400)
        check("only Python and R" in r.json()["message"], "says why", r.json())
    finally:
        delete_context(ctx["id"], token=ANA)


@callisto_only
def test_pauses_and_resumes_are_counted():
    r = api("GET", "/metrics", token=ROOT)
    check_eq(r.status, 200, "metrics")
    text = r.body.decode()
    for name in ("callisto_context_pauses_total{trigger=\"request\"}",
                 "callisto_context_resumes_total{result=\"ok\"}",
                 "callisto_context_resume_seconds_count"):
        check(name in text, f"{name} is exported")


@callisto_only
def test_phase_idle_contexts_are_paused():
    phase_only("idle")  # a server started with --pause-idle=2
    ctx = create_context({"policy": "fresh"}, token=ANA)
    r_ctx = create_context({"kernel": r_kernel(), "policy": "fresh"}, token=ANA)
    try:
        run_code_ok(ctx, "kept = 'through an idle pause'", token=ANA)
        run_code_ok(r_ctx, R_SETUP, token=ANA)
        for c in (ctx, r_ctx):
            poll(lambda: api("GET", f"/v1/contexts/{c['id']}", token=ANA).json()["state"] ==
                 "paused", 30, interval=0.5, what=f"the idle {c['kernel']} context paused")
        # At least 2: a context whose kernel was slow to start (R's) may have been paused
        # once before its first execution, and resumed by it.
        idle = metric('callisto_context_pauses_total{trigger="idle"}')
        check(idle >= 2, "counted as idle pauses", idle)
        e = run_code_ok(ctx, "print(kept)", token=ANA)
        check_eq(e["stdout"], "through an idle pause\n", "resumed with its state")
        check("resumed" in e, "the execution resumed it", e)
        e = run_code_ok(r_ctx, R_CHECK, token=ANA)
        check("resumed" in e, "the execution resumed the R context", e)
        expect_r_state(last_json(e), "after an idle pause")
    finally:
        delete_context(ctx["id"], token=ANA)
        delete_context(r_ctx["id"], token=ANA)


@callisto_only
def test_phase_before_restart():
    phase_only("before_restart")
    ctx = create_context({"policy": "fresh"}, token=ANA)
    run_code_ok(ctx, SETUP, token=ANA)
    pause(ANA, ctx["id"])
    r_ctx = create_context({"kernel": r_kernel(), "policy": "fresh"}, token=ANA)
    run_code_ok(r_ctx, R_SETUP, token=ANA)
    pause(ANA, r_ctx["id"])
    check_eq(sorted(os.listdir(os.path.join(state_dir(), "paused"))),
             sorted([ctx["id"] + ".json", r_ctx["id"] + ".json"]),
             "the paused contexts' records")
    # What the next start must drop with a warning, not fail on: a truncated record, one whose
    # snapshot is gone, and a snapshot no record names (a pause a crash cut short).
    paused_dir = os.path.join(state_dir(), "paused")
    with open(os.path.join(paused_dir, "33333333-3333-4333-8333-333333333333.json"), "w") as f:
        f.write('{"id": "33333333-3333-4333-8333-333333')
    with open(os.path.join(paused_dir, ctx["id"] + ".json")) as f:
        lost = json.load(f)
    lost["id"] = "44444444-4444-4444-8444-444444444444"
    lost["snapshot_id"] = "55555555-5555-4555-8555-555555555555"
    with open(os.path.join(paused_dir, lost["id"] + ".json"), "w") as f:
        json.dump(lost, f)
    os.makedirs(os.path.join(state_dir(), "paused-snapshots",
                             "66666666-6666-4666-8666-666666666666"))
    with open(os.environ["CALLISTO_E2E_STATE"], "w") as f:
        json.dump({"ctx": ctx["id"], "r_ctx": r_ctx["id"]}, f)


@callisto_only
def test_phase_after_restart():
    phase_only("after_restart")
    with open(os.environ["CALLISTO_E2E_STATE"]) as f:
        saved = json.load(f)
    ctx, r_ctx = saved["ctx"], saved["r_ctx"]
    listed = {c["id"]: c for c in api("GET", "/v1/contexts", token=ANA).json()}
    check(ctx in listed and listed[ctx]["state"] == "paused", "listed paused after the restart",
          listed)
    check(r_ctx in listed and listed[r_ctx]["state"] == "paused", "the R one too", listed)
    check_eq(listed[r_ctx]["languages"], ["r"], "listed as running R")
    check_eq(api("GET", f"/v1/contexts/{ctx}", token=BOB).status, 404, "still ana's alone")
    check_eq(sorted(os.listdir(os.path.join(state_dir(), "paused"))),
             sorted([ctx + ".json", r_ctx + ".json"]),
             "the truncated record and the one whose snapshot is gone were dropped")
    check_eq(len(paused_snapshots()), 2, "the snapshot no record named was removed")
    check(all(c["id"] != "44444444-4444-4444-8444-444444444444"
              for c in api("GET", "/v1/contexts", token=ANA).json()), "nor listed")
    e = run_code_ok(ctx, CHECK, token=ANA)
    check(isinstance(e.get("resumed", {}).get("duration_ms"), int), "the resume time", e)
    expect_state(last_json(e), 42, "after the gateway restart")
    delete_context(ctx, token=ANA)
    e = run_code_ok(r_ctx, R_CHECK, token=ANA)
    check(isinstance(e.get("resumed", {}).get("duration_ms"), int), "the R resume's time", e)
    expect_r_state(last_json(e), "after the gateway restart")
    delete_context(r_ctx, token=ANA)


def iso(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def metric(name):
    text = api("GET", "/metrics", token=ROOT).body.decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} is not exported")


@callisto_only
def test_phase_ttl_before():
    phase_only("ttl_before")  # the default --paused-ttl: 30 days
    ctx = create_context({"policy": "fresh"}, token=ANA)
    run_code_ok(ctx, "kept = 1", token=ANA)
    model = pause(ANA, ctx["id"]).json()
    check_eq(iso(model["expires_at"]) - iso(model["paused_at"]), datetime.timedelta(days=30),
             "expires 30 days after the pause")
    got = api("GET", f"/v1/contexts/{ctx['id']}", token=ANA)
    check_documented("GET", "/v1/contexts/{context_id}", got)
    check_eq(got.json()["expires_at"], model["expires_at"], "GET shows expires_at")
    with open(os.environ["CALLISTO_E2E_STATE"], "w") as f:
        json.dump({"ctx": ctx["id"], "snapshots": paused_snapshots()}, f)


@callisto_only
def test_phase_ttl_after():
    phase_only("ttl_after")  # the same --state-dir, started again: --paused-ttl=4s, --audit-log
    with open(os.environ["CALLISTO_E2E_STATE"]) as f:
        before = json.load(f)
    old = before["ctx"]
    # Paused under a gateway that kept it 30 days; this one counts 4 s from its record's
    # pause time, so it goes at the start or within a check or two.
    poll(lambda: api("GET", f"/v1/contexts/{old}", token=ANA).status == 404, 20, interval=0.5,
         what="the context paused before the restart expired")
    check(not os.path.exists(os.path.join(state_dir(), "paused", old + ".json")),
          "its record is gone")
    check(not set(before["snapshots"]) & set(paused_snapshots()), "its snapshot is gone",
          before["snapshots"], paused_snapshots())
    check_eq(execute(ANA, old, "print(kept)").status, 404, "an execution finds nothing")
    check(metric("callisto_paused_contexts_expired_total") >= 1, "counted")

    # One paused now: expires_at 4 s after its pause; deleted with its snapshot after that.
    ctx = create_context({"policy": "fresh"}, token=ANA)
    run_code_ok(ctx, "kept = 2", token=ANA)
    model = pause(ANA, ctx["id"]).json()
    check_eq(iso(model["expires_at"]) - iso(model["paused_at"]), datetime.timedelta(seconds=4),
             "expires 4 s after the pause")
    snapshot_count = len(paused_snapshots())
    check(snapshot_count >= 1, "its snapshot is kept while it is paused")
    poll(lambda: api("GET", f"/v1/contexts/{ctx['id']}", token=ANA).status == 404, 20,
         interval=0.5, what="the context expired")
    check(all(c["id"] != ctx["id"] for c in api("GET", "/v1/contexts", token=ANA).json()),
          "no longer listed")
    poll(lambda: len(paused_snapshots()) == snapshot_count - 1, 10, interval=0.2,
         what="its snapshot deleted")
    check(metric("callisto_paused_contexts_expired_total") >= 2, "counted again")
    # Audited as the server's doing, with whose it was (the server runs with --audit-log).
    with open(gateway_args()["audit-log"]) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    expired = {r["context"]: r for r in lines
               if r.get("event") == "context" and r.get("operation") == "expire"}
    for context_id in (old, ctx["id"]):
        check(context_id in expired, f"the expiry of {context_id} is audited", lines[-5:])
        check_eq(expired[context_id]["user"], "", "by the server")
        check_eq(expired[context_id]["owner"], "ana", "whose it was")
    check_eq(expired[ctx["id"]]["ttl_seconds"], 4, "under which TTL")


if __name__ == "__main__":
    sys.exit(run_tests())
