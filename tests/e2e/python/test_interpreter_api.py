"""End-to-end tests of Callisto's own agent-facing API (/v1/contexts, executions):
the aggregated answer, the NDJSON event stream, executions as resources that outlive
their request, idempotency keys, the per-context queue, the deadline ladder, output
caps, and every bad form of every input.

Standard library only. Run against a server (CALLISTO_URL, CALLISTO_TOKEN)."""

import http.client
import json
import socket
import sys
import threading
import time
import urllib.parse

import websocket  # websocket-client

import mcp_client
from e2e_client import (BASE_URL, HTTP_TIMEOUT, TOKEN, KernelWS, SkipTest, api, callisto_only,
                        check, check_documented, check_eq, check_schema, kernel, poll, run_tests)

# The first kernel start on a loaded machine, and the ladder (deadline + 5 s grace +
# shutdown escalation + a new kernel), both need room.
LADDER_TIMEOUT = 90


def new_context(body=None):
    r = api("POST", "/v1/contexts", body if body is not None else {})
    check_eq(r.status, 201, "create context status")
    ctx = r.json()
    check_eq(r.headers.get("location"), "/v1/contexts/" + ctx["id"], "Location")
    for key in ("id", "kernel_id", "kernel", "state", "created_at"):
        check(key in ctx, "context model has " + key, ctx)
    return ctx


def delete_context(ctx):
    r = api("DELETE", "/v1/contexts/" + ctx["id"])
    check_eq(r.status, 204, "delete context status")


def run(ctx, code, **fields):
    body = {"code": code}
    body.update(fields)
    r = api("POST", f"/v1/contexts/{ctx['id']}/executions", body, timeout=LADDER_TIMEOUT + 30)
    check_eq(r.status, 200, f"execution status for {code[:40]!r}: {r.body[:300]!r}")
    return r.json()


def get_execution(ctx, eid):
    r = api("GET", f"/v1/contexts/{ctx['id']}/executions/{eid}")
    check_eq(r.status, 200, "GET execution")
    return r.json()


class Stream:
    """POST an execution with stream: true and read its NDJSON events one by one."""

    def __init__(self, ctx, code, **fields):
        url = urllib.parse.urlsplit(BASE_URL)
        self.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=HTTP_TIMEOUT)
        body = {"code": code}
        body.update(fields)
        self.conn.request("POST", f"/v1/contexts/{ctx['id']}/executions",
                          body=json.dumps(body).encode(),
                          headers={"Authorization": f"token {TOKEN}",
                                   "Content-Type": "application/json",
                                   "Accept": "application/x-ndjson"})
        self.resp = self.conn.getresponse()

    def event(self):
        line = self.resp.readline()
        if not line:
            return None
        check(line.endswith(b"\n"), "an event is one line", line)
        return json.loads(line)

    def events(self):
        out = []
        while True:
            e = self.event()
            if e is None:
                return out
            out.append(e)

    def close(self):
        self.conn.close()


# --------------------------------------------------------------------------

@callisto_only
def test_aggregated_answer_has_stdout_a_plot_and_an_error():
    ctx = new_context({"kernel": "python3"})
    try:
        r = run(ctx, "import sys\nprint('hello')\nprint('warn', file=sys.stderr)\n6*7")
        check_eq(r["status"], "ok", "status")
        check_eq(r["stdout"], "hello\n", "stdout")
        check_eq(r["stderr"], "warn\n", "stderr")
        check_eq(r["results"][0]["data"]["text/plain"], "42", "execute_result")
        check_eq(r["execution_count"], 1, "execution_count")
        check(r["error"] is None, "no error", r)
        for key in ("duration_ms", "queue_ms", "truncated", "id", "created_at"):
            check(key in r, "execution has " + key, r)

        plot = run(ctx, "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n"
                        "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
        check_eq(plot["status"], "ok", "plot status " + json.dumps(plot)[:500])
        pngs = [res["data"]["image/png"] for res in plot["results"] if "image/png" in res["data"]]
        check(len(pngs) == 1 and isinstance(pngs[0], str) and pngs[0].startswith("iVBOR"),
              "one inline PNG", plot["results"])

        err = run(ctx, "def f():\n    return 1 / 0\nf()")
        check_eq(err["status"], "error", "error status")
        check_eq(err["error"]["name"], "ZeroDivisionError", "error name")
        check_eq(err["error"]["value"], "division by zero", "error value")
        tb = "\n".join(err["error"]["traceback"])
        check("\x1b" not in tb, "traceback has no ANSI codes", tb)
        check("return 1 / 0" in tb, "traceback shows the line", tb)

        # State survives between executions of one context.
        check_eq(run(ctx, "sys.stdout.write('still ' + str(6*7))")["stdout"], "still 42",
                 "state kept")
    finally:
        delete_context(ctx)


@callisto_only
def test_stream_gives_events_in_order_for_a_long_cell():
    ctx = new_context()
    try:
        s = Stream(ctx, "import time\nfor i in range(5):\n    print(i, flush=True)\n"
                        "    time.sleep(0.2)\n1/0")
        check_eq(s.resp.status, 200, "stream status")
        check_eq(s.resp.getheader("Content-Type"), "application/x-ndjson", "content type")
        check_eq(s.resp.getheader("Transfer-Encoding"), "chunked", "chunked")
        events = s.events()
        s.close()
        types = [e["type"] for e in events]
        check_eq(types[:2], ["queued", "start"], "first events")
        check_eq(types[-2:], ["error", "end"], "last events")
        text = "".join(e["text"] for e in events if e["type"] == "stdout")
        check_eq(text, "0\n1\n2\n3\n4\n", "stdout in order")
        check(types.count("stdout") >= 2, "output arrived in several events", types)
        end = events[-1]["execution"]
        check_eq(end["status"], "error", "end status")
        check_eq(end["stdout"], "0\n1\n2\n3\n4\n", "end carries the whole stdout")
        check_eq(events[0]["id"], end["id"], "one id throughout")
    finally:
        delete_context(ctx)


@callisto_only
def test_execution_is_fetched_by_id_after_the_client_went_away():
    ctx = new_context()
    try:
        s = Stream(ctx, "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n"
                        "    time.sleep(0.5)\n'done'")
        first = s.event()
        check_eq(first["type"], "queued", "first event")
        eid = first["id"]
        s.close()  # gone mid-run
        running = get_execution(ctx, eid)
        check(running["status"] in ("queued", "running", "ok"), "status while running", running)
        done = poll(lambda: (lambda e: e if e["status"] == "ok" else None)(get_execution(ctx, eid)),
                    30, 0.2, "the execution to finish")
        check_eq(done["stdout"], "tick 0\ntick 1\ntick 2\n", "all output kept")
        check_eq(done["results"][0]["data"]["text/plain"], "'done'", "result kept")
        listing = api("GET", f"/v1/contexts/{ctx['id']}/executions").json()
        check(any(e["id"] == eid for e in listing), "listed", listing)
    finally:
        delete_context(ctx)


@callisto_only
def test_a_repeated_idempotency_key_runs_once():
    ctx = new_context()
    try:
        run(ctx, "runs = []")
        a = run(ctx, "runs.append(1)\nlen(runs)", idempotency_key="step-1")
        b = run(ctx, "runs.append(1)\nlen(runs)", idempotency_key="step-1")
        check_eq(b["id"], a["id"], "same execution")
        check_eq(b["results"][0]["data"]["text/plain"], "1", "same answer")
        check_eq(run(ctx, "len(runs)")["results"][0]["data"]["text/plain"], "1", "ran once")
        # The same key while the first is still running: still one run.
        s = Stream(ctx, "import time\ntime.sleep(1)\nruns.append(2)", idempotency_key="step-2")
        first = s.event()
        again = run(ctx, "runs.append(2)", idempotency_key="step-2")
        check_eq(again["id"], first["id"], "same execution while running")
        s.events()
        s.close()
        check_eq(run(ctx, "runs")["results"][0]["data"]["text/plain"], "[1, 2]", "each ran once")
    finally:
        delete_context(ctx)


@callisto_only
def test_executions_on_a_context_run_one_at_a_time_in_order():
    ctx = new_context()
    try:
        run(ctx, "order = []")
        slow = Stream(ctx, "import time\ntime.sleep(1.5)\norder.append('first')")
        check_eq(slow.event()["type"], "queued", "first queued")
        second = run(ctx, "order.append('second')\norder")
        check_eq(second["results"][0]["data"]["text/plain"], "['first', 'second']", "in order")
        check(second["queue_ms"] >= 500, "the second waited for the first", second["queue_ms"])
        slow.events()
        slow.close()

        # A bounded queue: one running, 16 waiting, the next is refused with 429.
        blocker = Stream(ctx, "import time\ntime.sleep(3)")
        check_eq(blocker.event()["type"], "queued", "blocker queued")
        waiting = []
        for i in range(16):
            w = Stream(ctx, f"{i}")
            check_eq(w.resp.status, 200, f"queued #{i}")
            check_eq(w.event()["type"], "queued", f"queued event #{i}")
            waiting.append(w)
        over = api("POST", f"/v1/contexts/{ctx['id']}/executions", {"code": "1"})
        check_eq(over.status, 429, "queue full")
        check_documented("POST", "/v1/contexts/{context_id}/executions", over)
        check(over.headers.get("retry-after"), "Retry-After", over.headers)
        check_eq(set(over.json()), {"reason", "message"}, "JSON error")
        for w in [blocker] + waiting:
            check_eq(w.events()[-1]["execution"]["status"], "ok", "each finished")
            w.close()
    finally:
        delete_context(ctx)


@callisto_only
def test_deadline_interrupt_preserves_state():
    ctx = new_context()
    try:
        run(ctx, "kept = 'yes'")
        r = run(ctx, "while True:\n    pass", timeout=1)
        check_eq(r["status"], "timeout", "status")
        check_eq(r["state_preserved"], True, "an interrupt sufficed")
        check(r["duration_ms"] < 6000, "ended at the interrupt", r["duration_ms"])
        check_eq(run(ctx, "kept")["results"][0]["data"]["text/plain"], "'yes'", "state kept")
    finally:
        delete_context(ctx)


@callisto_only
def test_deadline_restart_when_sigint_is_ignored():
    ctx = new_context()
    try:
        run(ctx, "kept = 'yes'")
        r = run(ctx, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                     "while True:\n    pass", timeout=1)
        check_eq(r["status"], "timeout", "status")
        check_eq(r["state_preserved"], False, "a restart was needed")
        after = run(ctx, "'kept' in dir()")
        check_eq(after["status"], "ok", "the context works after the restart")
        check_eq(after["results"][0]["data"]["text/plain"], "False", "state is gone")
        cwd = run(ctx, "import os\nprint(os.listdir('.') is not None)")
        check_eq(cwd["stdout"], "True\n", "the workdir is still usable")
    finally:
        delete_context(ctx)


@callisto_only
def test_delete_interrupts_a_running_execution():
    ctx = new_context()
    try:
        s = Stream(ctx, "import time\nprint('begun', flush=True)\nwhile True:\n    time.sleep(0.05)")
        eid = s.event()["id"]
        while s.event()["type"] != "stdout":
            pass
        r = api("DELETE", f"/v1/contexts/{ctx['id']}/executions/{eid}")
        check_eq(r.status, 202, "interrupt accepted")
        end = s.events()[-1]["execution"]
        s.close()
        check_eq(end["status"], "interrupted", "status")
        check_eq(end["state_preserved"], True, "state kept")
        check_eq(end["error"]["name"], "KeyboardInterrupt", "the kernel says why")
        check_eq(api("DELETE", f"/v1/contexts/{ctx['id']}/executions/{eid}").status, 200,
                 "deleting a finished execution answers it")
    finally:
        delete_context(ctx)


@callisto_only
def test_a_big_print_is_capped_with_head_tail_and_marker():
    ctx = new_context()
    try:
        r = run(ctx, "import sys\nsys.stdout.write('HEAD' + 'x' * (50 * 1024 * 1024) + 'TAIL')")
        check_eq(r["status"], "ok", "status")
        out = r["stdout"]
        check(out.startswith("HEADxxx"), "head kept", out[:20])
        check(out.endswith("xxxTAIL"), "tail kept", out[-20:])
        cut = r["truncated"]["stdout_bytes"]
        check(cut > 40 * 1024 * 1024, "most was cut", cut)
        check(f"[... {cut} bytes truncated ...]" in out, "explicit marker", out[512 * 1024 - 10:512 * 1024 + 60])
        check(len(out) < 2 * 1024 * 1024, "answer stays small", len(out))
    finally:
        delete_context(ctx)


@callisto_only
def test_an_oversized_image_becomes_a_file_reference():
    ctx = new_context()
    try:
        r = run(ctx, "import os\nfrom IPython.display import Image, display\n"
                     "display(Image(data=b'\\x89PNG\\r\\n\\x1a\\n' + os.urandom(20 * 1024 * 1024), format='png'))")
        check_eq(r["status"], "ok", "status " + json.dumps(r)[:400])
        ref = r["results"][0]["data"]["image/png"]
        check(isinstance(ref, dict) and "file" in ref, "a file reference", str(ref)[:200])
        check_eq(ref["bytes"], 20 * 1024 * 1024 + 8, "decoded size")
        check_eq(r["truncated"]["results"][0]["moved_to"], ref["file"], "said in truncated")
        size = run(ctx, f"import os\nos.path.getsize({ref['file']!r})")
        check_eq(size["results"][0]["data"]["text/plain"], str(20 * 1024 * 1024 + 8),
                 "the kernel sees the file in its workdir")
        # Each under the per-result cap, together over the execution's 20 MiB: the first stay
        # inline, the later ones become files.
        many = run(ctx, "import os\nfrom IPython.display import Image, display\n"
                        "for i in range(6):\n"
                        "    display(Image(data=b'\\x89PNG\\r\\n\\x1a\\n' + os.urandom(3 * 1024 * 1024), format='png'))")
        kinds = ["file" if isinstance(res["data"]["image/png"], dict) else "inline"
                 for res in many["results"]]
        check_eq(kinds[:4], ["inline"] * 4, "the first four inline")
        check_eq(kinds[-1], "file", "the last one moved to a file")
    finally:
        delete_context(ctx)


@callisto_only
def test_restart_and_get_and_list_contexts():
    ctx = new_context({"policy": "fresh"})  # its kernel goes with it (reuse: test_policies.py)
    try:
        run(ctx, "x = 1")
        r = api("POST", f"/v1/contexts/{ctx['id']}/restart")
        check_eq(r.status, 200, "restart")
        check_eq(run(ctx, "'x' in dir()")["results"][0]["data"]["text/plain"], "False", "fresh")
        got = api("GET", "/v1/contexts/" + ctx["id"]).json()
        check_eq(got["kernel_id"], ctx["kernel_id"], "same kernel id")
        check(any(c["id"] == ctx["id"] for c in api("GET", "/v1/contexts").json()), "listed")
        # The context's kernel is an ordinary kernel of its owner.
        check_eq(api("GET", "/api/kernels/" + ctx["kernel_id"]).status, 200, "kernel visible")
    finally:
        delete_context(ctx)
    check_eq(api("GET", "/v1/contexts/" + ctx["id"]).status, 404, "deleted context is gone")
    poll(lambda: api("GET", "/api/kernels/" + ctx["kernel_id"]).status == 404, 30, 0.2,
         "its kernel to go")


@callisto_only
def test_bad_inputs_get_clear_json_errors():
    def refused(method, path, body, status, what, **kw):
        r = api(method, path, body, **kw)
        check_eq(r.status, status, what + ": " + repr(r.body[:200]))
        if status != 405 or r.body:
            check_eq(set(r.json()), {"reason", "message"}, what + " is a JSON error")
        return r

    for body in ["x", "[1]", {"kernel": 3}, {"kernel": ""}, {"name": "python3"}]:
        refused("POST", "/v1/contexts", body, 400, f"context body {body!r}")
    refused("POST", "/v1/contexts", {"kernel": "no-such-kernel"}, 404, "unknown kernelspec")
    refused("GET", "/v1/contexts", None, 401, "no token", auth=None)
    refused("GET", "/v1/contexts", None, 401, "wrong token", token="wrong")

    ctx = new_context()
    try:
        ex = f"/v1/contexts/{ctx['id']}/executions"
        for body in ["", "x", "[]", {}, {"code": 1}, {"code": "1", "timeout": 0},
                     {"code": "1", "timeout": -5}, {"code": "1", "timeout": "10"},
                     {"code": "1", "timeout": 10 ** 9}, {"code": "1", "stream": "yes"},
                     {"code": "1", "idempotency_key": ""}, {"code": "1", "idempotency_key": "a b"},
                     {"code": "1", "idempotency_key": "k" * 200}, {"code": "1", "extra": True}]:
            refused("POST", ex, body, 400, f"execution body {body!r}")
        unknown = "00000000-0000-4000-8000-000000000000"
        refused("GET", f"{ex}/{unknown}", None, 404, "unknown execution")
        refused("GET", f"{ex}/not-a-uuid", None, 404, "malformed execution id")
        refused("DELETE", f"{ex}/{unknown}", None, 404, "interrupt unknown execution")
        refused("GET", f"/v1/contexts/{unknown}", None, 404, "unknown context")
        refused("POST", f"/v1/contexts/{unknown}/executions", {"code": "1"}, 404,
                "execution on unknown context")
        refused("GET", "/v1/contexts/..%2f", None, 400, "traversal in the id")
        refused("PUT", "/v1/contexts", None, 405, "wrong method on contexts")
        refused("PATCH", f"/v1/contexts/{ctx['id']}", None, 405, "wrong method on a context")
        refused("GET", f"/v1/contexts/{ctx['id']}/restart", None, 405, "GET restart")
        refused("GET", f"/v1/contexts/{ctx['id']}/nothing", None, 404, "unknown sub-resource")
        # After all that, the context still works.
        check_eq(run(ctx, "1+1")["results"][0]["data"]["text/plain"], "2", "still works")
    finally:
        delete_context(ctx)


@callisto_only
def test_env_is_set_for_one_execution_and_restored_after():
    ctx = new_context()
    try:
        run(ctx, "import os, subprocess\nos.environ['KEPT'] = 'before'")
        env = {"API_KEY": "s3cret ü \"q\"", "KEPT": "during", "EMPTY": ""}
        r = run(ctx, "print(os.environ['API_KEY'])\nprint(os.environ['KEPT'])\n"
                     "print(repr(os.environ['EMPTY']))\n"
                     "print(subprocess.run(['sh', '-c', 'echo $API_KEY'], capture_output=True,"
                     " text=True).stdout, end='')", env=env)
        check_eq(r["status"], "ok", "status " + json.dumps(r)[:400])
        check_eq(r["stdout"], "s3cret ü \"q\"\nduring\n''\ns3cret ü \"q\"\n",
                 "os.environ and a subprocess see the values")
        check_eq(r["execution_count"], 2, "the silent requests do not count")
        after = run(ctx, "print(os.environ.get('API_KEY'), os.environ['KEPT'], 'EMPTY' in os.environ)")
        check_eq(after["stdout"], "None before False\n", "previous values restored, new ones gone")

        # Restored after an error too, and the traceback is the user's own: line 2, cell code.
        err = run(ctx, "x = 1\nraise ValueError(os.environ['API_KEY'])", env={"API_KEY": "k"})
        check_eq(err["status"], "error", "error status")
        check_eq(err["error"]["value"], "k", "the code saw the variable")
        tb = "\n".join(err["error"]["traceback"])
        check("----> 2 raise ValueError" in tb, "the line number is the user's", tb)
        check("_callisto" not in tb and "lambda" not in tb, "no wrapper in the traceback", tb)
        check_eq(run(ctx, "print(os.environ.get('API_KEY'))")["stdout"], "None\n",
                 "restored after an error")

        # ...and after an interrupt.
        s = Stream(ctx, "import time\nprint(os.environ['API_KEY'], flush=True)\ntime.sleep(60)",
                   env={"API_KEY": "int"})
        eid = s.event()["id"]
        while True:
            e = s.event()
            if e["type"] == "stdout":
                check_eq(e["text"], "int\n", "set while running")
                break
        check_eq(api("DELETE", f"/v1/contexts/{ctx['id']}/executions/{eid}").status, 202,
                 "interrupt")
        check_eq(s.events()[-1]["execution"]["status"], "interrupted", "interrupted")
        s.close()
        check_eq(run(ctx, "print(os.environ.get('API_KEY'))")["stdout"], "None\n",
                 "restored after an interrupt")
        # The user's own variables survive executions with env.
        check_eq(run(ctx, "print('x' in dir(), '_callisto_saved_env' in dir())")["stdout"],
                 "True False\n", "no names left in the user's namespace")
    finally:
        delete_context(ctx)
    # One-shot executions take env too.
    r = api("POST", "/v1/executions", {"code": "import os\nprint(os.environ['ONE'])",
                                        "env": {"ONE": "shot"}, "policy": "fresh"}, timeout=120)
    check_eq(r.status, 200, "one-shot with env " + repr(r.body[:300]))
    check_eq(r.json()["stdout"], "shot\n", "the one-shot saw its env")
    check_eq(api("POST", "/v1/executions", {"code": "1", "env": {"LD_PRELOAD": "x"}}).status, 400,
             "a one-shot's env is checked the same way")


@callisto_only
def test_the_execution_queued_behind_an_error_runs():
    # The context sends the next execution the moment the failed one ends: ipykernel's
    # stop_on_error would answer it "aborted" (and the env restore with it).
    ctx = new_context()
    try:
        for i in range(5):
            failing = Stream(ctx, "raise ValueError('boom')", env={"ROUND": str(i)})
            check_eq(failing.event()["type"], "queued", "failing queued")
            nxt = run(ctx, "import os\nprint(os.environ.get('ROUND'))")
            check_eq(nxt["status"], "ok", f"round {i}: the next one ran " + json.dumps(nxt)[:300])
            check_eq(nxt["stdout"], "None\n", f"round {i}: env restored")
            check_eq(failing.events()[-1]["execution"]["status"], "error", "the first failed")
            failing.close()
    finally:
        delete_context(ctx)


@callisto_only
def test_bad_env_is_refused_and_nothing_runs():
    ctx = new_context()
    try:
        ex = f"/v1/contexts/{ctx['id']}/executions"
        for env, says in [({"LD_PRELOAD": "/tmp/x.so"}, "LD_"), ({"PYTHONPATH": "/tmp"}, "PYTHON"),
                          ({"PATH": "/tmp"}, "sandbox"), ({"A=B": "x"}, "not a valid"),
                          ({"": "x"}, "empty"), ({"1X": "x"}, "not a valid"),
                          ({"A": 1}, "must be a string"), ({"A": "x\u0000"}, "NUL"),
                          ({"A": "v" * 40000}, "longer than"), ("A=1", "object"),
                          ({f"V{i}": "x" for i in range(65)}, "more than 64")]:
            r = api("POST", ex, {"code": "ran = True", "env": env})
            check_eq(r.status, 400, f"env {str(env)[:40]!r}: {r.body[:200]!r}")
            check(says in r.json()["message"], f"says why for {str(env)[:40]!r}", r.json())
        for bad in ["yes", 1]:
            check_eq(api("POST", ex, {"code": "1", "keep_ansi": bad}).status, 400,
                     f"keep_ansi {bad!r}")
        check_eq(run(ctx, "'ran' in dir()")["results"][0]["data"]["text/plain"], "False",
                 "no refused request ran")
    finally:
        delete_context(ctx)


@callisto_only
def test_code_with_a_nul_is_refused_and_the_context_keeps_working():
    """ipykernel drops an execute_request whose code holds a NUL without a reply: the context
    waited for it until a restart. Refused at every door instead, naming the field."""
    ctx = new_context()
    try:
        for code in ("print(1)\u0000", "\u0000", "x = 1\u0000\nprint(x)"):
            r = api("POST", f"/v1/contexts/{ctx['id']}/executions", {"code": code}, timeout=20)
            check_eq(r.status, 400, f"a context's execution of {code!r}: {r.body[:200]!r}")
            check("'code' contains a NUL character" in r.json()["message"], "names 'code'",
                  r.json())
            r = api("POST", f"/v1/contexts/{ctx['id']}/executions",
                    {"code": code, "language": "bash"}, timeout=20)
            check_eq(r.status, 400, f"as bash too: {r.body[:200]!r}")
        check_eq(run(ctx, "print(6 * 7)")["stdout"], "42\n", "the context keeps working")
    finally:
        delete_context(ctx)
    r = api("POST", "/v1/executions", {"code": "print(1)\u0000"}, timeout=20)
    check_eq(r.status, 400, f"a one-shot: {r.body[:200]!r}")
    check("'code' contains a NUL character" in r.json()["message"], "names 'code'", r.json())
    s = mcp_client.Session(TOKEN)
    try:
        r = s.post({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
                    "params": {"name": "run_code", "arguments": {"code": "print(1)\u0000"}}})
        check_eq(r.status, 200, "a JSON-RPC answer")
        body = r.json()
        check("error" in body and body["error"]["code"] == -32602, "MCP: invalid params", body)
        check('"code" contains a NUL character' in body["error"]["message"], "names it", body)
        text, err = s.tool("run_code", code="print(6 * 7)")
        check(not err and "42" in text, "MCP's context keeps working", text)
    finally:
        s.end()
    # A Jupyter client gets the error reply a kernel gives a failed execution, at once.
    with kernel() as k, KernelWS(k["id"]) as ws:
        ex = ws.run("print(1)\u0000", timeout=20)
        check_eq(ex.status, "error", "the WebSocket's execute_reply")
        check("NUL" in ex.reply["content"].get("evalue", ""), "says why", ex.reply["content"])
        check_eq(ws.run("6 * 7").result_text(), "42", "the kernel keeps working")


@callisto_only
def test_keep_ansi_keeps_the_traceback_colours():
    ctx = new_context()
    try:
        plain = run(ctx, "1/0")
        check("\x1b[" not in "".join(plain["error"]["traceback"]), "stripped by default",
              plain["error"])
        raw = run(ctx, "1/0", keep_ansi=True)
        tb = "".join(raw["error"]["traceback"])
        check("\x1b[" in tb, "colours kept with keep_ansi", tb[:300])
        check_eq(raw["error"]["name"], "ZeroDivisionError", "the name has no codes")
        s = Stream(ctx, "1/0", keep_ansi=True)
        err = [e for e in s.events() if e["type"] == "error"]
        s.close()
        check("\x1b[" in "".join(err[0]["traceback"]), "the stream keeps them too", err)
    finally:
        delete_context(ctx)


def files_url(ctx, path=""):
    return f"/v1/contexts/{ctx['id']}/files" + ("/" + path if path else "")


@callisto_only
def test_files_upload_a_csv_read_it_with_pandas_and_download_a_png():
    ctx = new_context()
    try:
        csv = b"city,temp\nOslo,3\nRome,18\nCairo,27\n"
        r = api("PUT", files_url(ctx, "data/temps.csv"), csv,
                headers={"Content-Type": "text/csv"})
        check_eq(r.status, 201, "upload " + repr(r.body[:200]))
        check_eq(r.json()["size"], len(csv), "size")
        r = run(ctx, "import pandas as pd\ndf = pd.read_csv('data/temps.csv')\n"
                     "print(df['temp'].mean())\n"
                     "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                     "df.plot.bar(x='city', y='temp').get_figure().savefig('chart.png')")
        check_eq(r["status"], "ok", "pandas and matplotlib ran " + json.dumps(r)[:600])
        check_eq(r["stdout"], "16.0\n", "pandas read the upload")
        listing = api("GET", files_url(ctx)).json()
        paths = {f["path"]: f for f in listing["files"]}
        check("data/temps.csv" in paths and "chart.png" in paths, "listed", listing)
        check_eq(paths["data"]["type"], "directory", "directory listed")
        # The kernel's own dot-directories only when asked for (a kernel writes .ipython etc.).
        run(ctx, "import os; os.makedirs('.cache/x', exist_ok=True); open('.cache/x/f', 'w').close()")
        check(not any(p.split("/")[0].startswith(".") for p in
                      (f["path"] for f in api("GET", files_url(ctx)).json()["files"])),
              "no dot entries by default")
        hidden = api("GET", files_url(ctx) + "?hidden=true").json()["files"]
        check(".cache/x/f" in {f["path"] for f in hidden}, "dot entries with ?hidden=true", hidden)
        check_eq(api("GET", files_url(ctx) + "?hidden=maybe").status, 400, "bad ?hidden")
        png = api("GET", files_url(ctx, "chart.png"))
        check_eq(png.status, 200, "download")
        check_eq(png.headers.get("content-type"), "image/png", "content type")
        check(png.body.startswith(b"\x89PNG\r\n\x1a\n"), "a PNG", png.body[:8])
        check("content-disposition" not in png.headers, "a PNG shows inline", png.headers)
        check_eq(len(png.body), paths["chart.png"]["size"], "whole file")
        check_eq(api("GET", files_url(ctx, "data/temps.csv")).body, csv, "CSV round trip")
        check_eq(api("DELETE", files_url(ctx, "chart.png")).status, 204, "delete")
        check_eq(api("GET", files_url(ctx, "chart.png")).status, 404, "deleted")
        # Files outlive a kernel restart.
        check_eq(api("POST", f"/v1/contexts/{ctx['id']}/restart").status, 200, "restart")
        check_eq(api("GET", files_url(ctx, "data/temps.csv")).body, csv, "kept over a restart")
    finally:
        delete_context(ctx)


ACTIVE_FILES = {
    # An SVG's script runs when the SVG is opened as a page: it could read a ?token= from its
    # own URL, or the web UI's sessionStorage, and drive the API as the user.
    "x.svg": '<svg xmlns="http://www.w3.org/2000/svg"><script>'
             'fetch("/api/kernels?" + location.search.slice(1))</script></svg>',
    "page.html": "<!doctype html><script>document.title = location.search</script>",
    "data.xml": '<?xml version="1.0"?><x:script xmlns:x="http://www.w3.org/1999/xhtml">1</x:script>',
    "app.js": "alert(1)",
    "no-extension": "<html><script>alert(1)</script></html>",
}


def check_untrusted_file_headers(r, what):
    csp = r.headers.get("content-security-policy", "")
    check("sandbox" in csp and "default-src 'none'" in csp, what + ": a CSP sandbox", r.headers)
    check_eq(r.headers.get("x-content-type-options"), "nosniff", what + ": nosniff")
    check_eq(r.headers.get("referrer-policy"), "no-referrer", what + ": no Referer")


@callisto_only
def test_kernel_written_svg_and_html_download_as_attachments_in_a_sandbox():
    ctx = new_context()
    try:
        r = run(ctx, "import json\nfor name, text in json.loads(%r).items():\n"
                     "    open(name, 'w').write(text)\n"
                     "open('notes.txt', 'w').write('<script>alert(1)</script>')" %
                     json.dumps(ACTIVE_FILES))
        check_eq(r["status"], "ok", "the kernel wrote the files " + json.dumps(r)[:400])
        for name in ACTIVE_FILES:
            # ?token= is how such a link would carry the token; it gets the same headers.
            for auth in ("header", "query"):
                what = f"GET {name} (token in the {auth})"
                f = api("GET", files_url(ctx, name), auth=auth)
                check_eq(f.status, 200, what)
                check_eq(f.body, ACTIVE_FILES[name].encode(), what + ": the bytes")
                check_documented("GET", "/v1/contexts/{context_id}/files/{path}", f)
                check(not f.headers.get("content-type", "").startswith("text/html"),
                      what + ": never text/html", f.headers)
                check_eq(f.headers.get("content-disposition"),
                         f"attachment; filename=\"{name}\"; filename*=UTF-8''{name}",
                         what + ": an attachment")
                check_untrusted_file_headers(f, what)
        # Plain text stays viewable inline (as text), still sandboxed and never sniffed.
        f = api("GET", files_url(ctx, "notes.txt"))
        check(f.headers.get("content-type", "").startswith("text/plain"), "text", f.headers)
        check("content-disposition" not in f.headers, "text is inline", f.headers)
        check_untrusted_file_headers(f, "notes.txt")
    finally:
        delete_context(ctx)


def raw_request(head):
    url = urllib.parse.urlsplit(BASE_URL)
    with socket.create_connection((url.hostname, url.port), timeout=HTTP_TIMEOUT) as s:
        s.sendall(head)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        status = int(data.split(b" ", 2)[1])
        head_end = data.find(b"\r\n\r\n") + 4
        length = 0
        for line in data[:head_end].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(data) < head_end + length:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        return status, data


def raw_message(data):
    """The "message" of a raw answer's JSON body."""
    return json.loads(data[data.find(b"\r\n\r\n") + 4:])["message"]


@callisto_only
def test_refused_file_operations():
    ctx = new_context()
    try:
        def refused(method, path, status, what, body=None):
            r = api(method, path, body)
            check_eq(r.status, status, what + ": " + repr(r.body[:200]))
            check_eq(set(r.json()), {"reason", "message"}, what + " is a JSON error")
            return r.json()["message"]

        base = files_url(ctx)
        for path in ["../x", "a/../../etc/passwd", "%2e%2e/x", "a%2fb", "a%00b", "/etc/passwd"]:
            refused("GET", base + "/" + path, 400, f"traversal {path!r}")
            refused("PUT", base + "/" + path, 400, f"upload to {path!r}", b"x")
        for path in ["a%0ab", "a%7f", "a%5cb", "n" * 256]:
            refused("PUT", base + "/" + path, 400, f"odd name {path[:20]!r}", b"x")
        # Links the kernel plants are not followed, for reading, writing or deleting.
        run(ctx, "import os\nos.symlink('/etc', 'etc_link')\nos.symlink('/etc/passwd', 'passwd')\n"
                 "os.mkdir('dir')\nopen('dir/f', 'w').write('x')")
        msg = refused("GET", base + "/etc_link/passwd", 400, "through a directory link")
        check("symbolic link" in msg, "says why", msg)
        refused("GET", base + "/passwd", 400, "a link to a file")
        refused("PUT", base + "/etc_link/planted", 400, "upload through a link", b"x")
        refused("DELETE", base + "/etc_link/hostname", 400, "delete through a link")
        refused("GET", base + "/missing.txt", 404, "missing file")
        refused("GET", base + "/dir", 409, "download a directory")
        refused("PUT", base + "/dir", 409, "overwrite a directory", b"x")
        refused("DELETE", base + "/dir", 409, "delete a non-empty directory")
        r = api("POST", base + "/x", b"x")
        check_eq(r.status, 405, "wrong method")
        # Oversized upload: refused from its Content-Length, before the body is read.
        status, data = raw_request(
            f"PUT {base}/huge.bin HTTP/1.1\r\nHost: x\r\nAuthorization: token {TOKEN}\r\n"
            f"Content-Length: {200 * 1024 * 1024}\r\n\r\n".encode())
        check_eq(status, 413, "oversized upload " + repr(data[:200]))
        # The answer names the limit and the option that sets it (it once said "0 bytes").
        msg = raw_message(data)
        check(f"of {200 * 1024 * 1024} bytes" in msg and "104857600 bytes (100MiB)" in msg and
              "--upload-limit" in msg, "the 413 names the size, the limit and its option", msg)
        # "Expect: 100-continue" (curl's large uploads) gets the go-ahead, then the body.
        url = urllib.parse.urlsplit(BASE_URL)
        with socket.create_connection((url.hostname, url.port), timeout=HTTP_TIMEOUT) as sock:
            sock.sendall(f"PUT {base}/expect.txt HTTP/1.1\r\nHost: x\r\n"
                         f"Authorization: token {TOKEN}\r\nContent-Length: 5\r\n"
                         "Expect: 100-continue\r\n\r\n".encode())
            interim = sock.recv(4096)
            check(interim.startswith(b"HTTP/1.1 100 Continue"), "100 Continue first", interim)
            sock.sendall(b"hello")
            final = b""
            while b"\r\n\r\n" not in final:
                final += sock.recv(4096)
            check(final.startswith(b"HTTP/1.1 201"), "then 201", final[:100])
        check_eq(api("GET", base + "/expect.txt").body, b"hello", "expect upload stored")
        # A body over the ordinary 1 MiB limit is fine for an upload.
        big = bytes(range(256)) * (8 * 1024)  # 2 MiB
        check_eq(api("PUT", base + "/big.bin", big).status, 201, "2 MiB upload")
        check_eq(api("GET", base + "/big.bin").body, big, "2 MiB round trip")
        # ...but not for other routes.
        status, data = raw_request(
            f"POST /v1/contexts/{ctx['id']}/executions HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: token {TOKEN}\r\nContent-Length: {2 * 1024 * 1024}\r\n\r\n".encode())
        check_eq(status, 413, "a large execution body")
        msg = raw_message(data)
        check("1048576 bytes (1MiB)" in msg and "fixed" in msg and "--upload-limit" in msg,
              "the 413 names the fixed limit and the way around it", msg)
        check_eq(run(ctx, "1")["status"], "ok", "the context still works")
    finally:
        delete_context(ctx)


def form_part(headers, body):
    return b"--B0UND\r\n" + headers + b"\r\n\r\n" + body + b"\r\n"


def form_file(filename, body, name=b"file"):
    return form_part(b'Content-Disposition: form-data; name="' + name + b'"; filename="' +
                     filename + b'"\r\nContent-Type: text/csv', body)


FORM_END = b"--B0UND--\r\n"
FORM_TYPE = "multipart/form-data; boundary=B0UND"


@callisto_only
def test_multipart_upload_hand_built_forms_and_every_refusal():
    ctx = new_context()
    try:
        base = files_url(ctx)

        def post(body, content_type=FORM_TYPE):
            return api("POST", base, body, headers={"Content-Type": content_type})

        csv = b"x,y\r\n1,2\r\n3,4\r\n"
        r = post(b"preamble\r\n" + form_file(b"in.csv", csv) +
                 form_file(b"sub/two.csv", b"a\n5\n", b"other") + FORM_END + b"epilogue")
        check_eq(r.status, 201, "upload " + repr(r.body[:300]))
        check_eq(r.json()["files"], [{"path": "in.csv", "size": len(csv)},
                                     {"path": "sub/two.csv", "size": 4}], "answer")
        out = run(ctx, "import pandas as pd\nprint(pd.read_csv('in.csv')['y'].sum(), "
                       "pd.read_csv('sub/two.csv')['a'][0])")
        check_eq(out["stdout"], "6 5\n", "pandas reads both")

        good = form_file(b"ok.csv", b"1")
        refusals = [
            (FORM_TYPE, good.replace(b"B0UND", b"OTHER") + b"--OTHER--\r\n", 400, "boundary"),
            ("multipart/form-data", good + FORM_END, 400, "no boundary"),
            ("multipart/form-data; boundary=" + "b" * 71, good + FORM_END, 400, "boundary"),
            (FORM_TYPE, good, 400, "closing boundary"),
            (FORM_TYPE, form_part(b"Content-Type: text/csv", b"x") + FORM_END, 400,
             "no Content-Disposition"),
            (FORM_TYPE, form_part(b"", b"x") + FORM_END, 400, "no Content-Disposition"),
            (FORM_TYPE, form_part(b'Content-Disposition: form-data; name="f"', b"x") + FORM_END,
             400, "unknown form field"),
            (FORM_TYPE, form_file(b"", b"x") + FORM_END, 400, "empty filename"),
            (FORM_TYPE, good + form_file(b"../x.csv", b"x") + FORM_END, 400, "'.' or '..'"),
            (FORM_TYPE, form_file(b"/etc/cron.d/x", b"x") + FORM_END, 400, "relative"),
            (FORM_TYPE, form_file(b"a\\\\b.csv", b"x") + FORM_END, 400, "backslash"),
            (FORM_TYPE, form_file(b"a\x00b.csv", b"x") + FORM_END, 400, "NUL"),
            (FORM_TYPE, good + form_file(b"ok.csv", b"2") + FORM_END, 400, "two files"),
            (FORM_TYPE, form_part(b"Content-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n"
                                  b"X-Big: " + b"h" * 10000, b"x") + FORM_END, 400, "headers"),
            (FORM_TYPE, FORM_END, 400, "no file"),
            (FORM_TYPE, b"", 400, "boundary"),
            ("application/json", b"{}", 415, "multipart/form-data"),
        ]
        for content_type, body, status, says in refusals:
            r = post(body, content_type)
            check_eq(r.status, status, f"{body[:60]!r}: {r.body[:200]!r}")
            check(says in r.json()["message"], f"says why for {body[:60]!r}", r.json())
        names = {f["path"] for f in api("GET", base).json()["files"]}
        check({"in.csv", "sub/two.csv"} <= names, "the good form's files are there", names)
        check(not names & {"ok.csv", "x.csv", "a", "a\\b.csv", "escape.csv"},
              "no refused form wrote anything", names)

        # Same body limit as PUT: refused from the Content-Length, before the body.
        status, data = raw_request(
            f"POST {base} HTTP/1.1\r\nHost: x\r\nAuthorization: token {TOKEN}\r\n"
            f"Content-Type: {FORM_TYPE}\r\nContent-Length: {200 * 1024 * 1024}\r\n\r\n".encode())
        check_eq(status, 413, "oversized form " + repr(data[:200]))
        msg = raw_message(data)
        check("104857600 bytes (100MiB)" in msg and "--upload-limit" in msg,
              "the form's 413 names the limit and its option", msg)
        # Larger than the ordinary 1 MiB request limit is fine.
        big = bytes(range(256)) * (8 * 1024)
        r = post(form_file(b"big.bin", big) + FORM_END)
        check_eq(r.status, 201, "2 MiB form " + repr(r.body[:200]))
        check_eq(api("GET", base + "/big.bin").body, big, "2 MiB round trip")
        check_eq(api("POST", base, b"x", token="wrong").status, 401, "token needed")
    finally:
        delete_context(ctx)


def events_ws(ctx, token=TOKEN):
    url = urllib.parse.urlsplit(BASE_URL)
    return websocket.create_connection(
        f"ws://{url.netloc}/v1/contexts/{ctx['id']}/events",
        header=[f"Authorization: token {token}"], timeout=HTTP_TIMEOUT)


def receive(ws):
    opcode, data = ws.recv_data()
    check_eq(opcode, websocket.ABNF.OPCODE_TEXT, "a JSON text message")
    return json.loads(data)


def receive_until_end(ws, eid):
    """Events of one execution until its end (other messages are kept aside)."""
    events, others = [], []
    while True:
        m = receive(ws)
        if m.get("execution_id") == eid and m["type"] not in ("queued", "following", "interrupting"):
            events.append(m)
            if m["type"] == "end":
                return events, others
        else:
            others.append(m)


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


# Tokens of the users file that e2e_tests.cpp's users case writes.
ANA, BOB, ROOT = "ana-token-1", "bob-token-1", "root-token-1"


@callisto_only
def test_owner_contexts_are_private_and_quotas_apply():
    if api("GET", "/v1/contexts", token=ANA).status != 200:
        raise SkipTest("needs the server with the e2e users file")
    r = api("POST", "/v1/contexts", {}, token=ANA)
    check_eq(r.status, 201, "ana creates a context")
    ctx = r.json()
    try:
        base = "/v1/contexts/" + ctx["id"]
        for method, path, body in [("GET", base, None), ("DELETE", base, None),
                                   ("POST", base + "/executions", {"code": "1"}),
                                   ("POST", base + "/restart", None),
                                   ("GET", base + "/files", None),
                                   ("PUT", base + "/files/x", b"x")]:
            r = api(method, path, body, token=BOB)
            check_eq(r.status, 404, f"bob {method} {path[-20:]}")
        check_eq(api("POST", base + "/files", b"x", token=BOB,
                     headers={"Content-Type": "multipart/form-data; boundary=b"}).status, 404,
                 "bob uploads a form")
        try:
            events_ws(ctx, token=BOB)
            raise AssertionError("bob opened ana's events socket")
        except websocket.WebSocketBadStatusException as e:
            check_eq(e.status_code, 404, "bob's events socket")
        check(all(c["id"] != ctx["id"] for c in api("GET", "/v1/contexts", token=BOB).json()),
              "bob does not list it")
        check_eq(api("GET", "/api/kernels/" + ctx["kernel_id"], token=BOB).status, 404,
                 "nor its kernel")
        check(any(c["id"] == ctx["id"] for c in api("GET", "/v1/contexts", token=ROOT).json()),
              "an admin lists it")
        r = api("POST", base + "/executions", {"code": "21 * 2"}, token=ANA)
        check_eq(r.json()["results"][0]["data"]["text/plain"], "42", "ana runs code")
        # ana may have 2 kernels: a second context fits, a third is refused like a kernel.
        second = api("POST", "/v1/contexts", {}, token=ANA)
        check_eq(second.status, 201, "second context")
        third = api("POST", "/v1/contexts", {}, token=ANA)
        check_eq(third.status, 429, "over ana's quota")
        check_documented("POST", "/v1/contexts", third)
        check("retry-after" not in third.headers, "no Retry-After: waiting frees nothing",
              third.headers)
        check_eq(api("DELETE", "/v1/contexts/" + second.json()["id"], token=ANA).status, 204,
                 "delete the second")
    finally:
        check_eq(api("DELETE", "/v1/contexts/" + ctx["id"], token=ANA).status, 204, "cleanup")


@callisto_only
def test_openapi_describes_interpreter_answers():
    """Every /v1 route once, with its common answers, checked against GET /openapi.json:
    status listed, body matching the schema, Location and Retry-After present."""
    C, CI = "/v1/contexts", "/v1/contexts/{context_id}"
    E, EI = CI + "/executions", CI + "/executions/{execution_id}"
    F, FP = CI + "/files", CI + "/files/{path}"
    check_documented("GET", C, api("GET", C, auth=None))
    check_documented("POST", C, api("POST", C, {"kernels": "python3"}))
    check_documented("POST", C, api("POST", C, {"kernel": "no-such-kernelspec-e2e"}))
    r = check_documented("POST", C, api("POST", C, {"kernel": None}))
    check_eq(r.status, 201, "create")
    ctx = r.json()
    cid = ctx["id"]
    base = f"{C}/{cid}"
    try:
        check_documented("GET", C, api("GET", C))
        check_documented("GET", CI, api("GET", base))
        check_documented("GET", CI, api("GET", f"{C}/{ctx['kernel_id']}"))  # a kernel id: 404
        ok = check_documented("POST", E, api("POST", base + "/executions",
                                             {"code": "print('hi')\n6 * 7", "idempotency_key": "k-1"}))
        check_eq(ok.json()["status"], "ok", "ok execution")
        check_documented("POST", E, api("POST", base + "/executions", {"code": "1/0", "timeout": 30}))
        check_documented("POST", E, api("POST", base + "/executions", {"code": "1", "timeout": 0}))
        check_documented("POST", E, api("POST", base + "/executions", {"cod": "1"}))
        check_documented("POST", E, api("POST", f"{C}/{ctx['kernel_id']}/executions", {"code": "1"}))
        # The stream: every line an event of the document, the last an end with the execution.
        streamed = check_documented("POST", E, api(
            "POST", base + "/executions",
            {"code": "import sys\nprint('out')\nprint('err', file=sys.stderr)\n"
                     "from IPython.display import display, HTML\ndisplay(HTML('<b>x</b>'))\n"
                     "raise ValueError('v')"},
            headers={"Accept": "application/x-ndjson"}))
        types = [json.loads(line)["type"] for line in streamed.body.decode().splitlines()]
        for t in ("queued", "start", "stdout", "stderr", "result", "error", "end"):
            check(t in types, f"the stream has a {t} event", types)
        check_documented("GET", E, api("GET", base + "/executions"))
        eid = ok.json()["id"]
        check_documented("GET", EI, api("GET", f"{base}/executions/{eid}"))
        r = check_documented("DELETE", EI, api("DELETE", f"{base}/executions/{eid}"))
        check_eq(r.status, 200, "DELETE of a finished execution")
        check_documented("GET", EI, api("GET", f"{base}/executions/{cid}"))  # unknown: 404
        sleeper = Stream(ctx, "import time\ntime.sleep(20)")
        queued = sleeper.event()
        check_schema(queued, "ExecutionEvent", "queued event")
        r = check_documented("DELETE", EI, api("DELETE", f"{base}/executions/{queued['id']}"))
        check_eq(r.status, 202, "DELETE of a running execution")
        sleeper.events()
        sleeper.close()

        r = check_documented("PUT", FP, api("PUT", base + "/files/data/2026/report.csv", b"a,b\n1,2\n"))
        check_eq(r.status, 201, "upload")
        r = check_documented("GET", FP, api("GET", base + "/files/data/2026/report.csv"))
        check_eq(r.body, b"a,b\n1,2\n", "download")
        check_documented("GET", FP, api("GET", base + "/files/data/missing.csv"))
        check_documented("GET", FP, api("GET", base + "/files/data"))  # a directory: 409
        check_documented("GET", FP, api("GET", base + "/files/a%5Cb"))  # a backslash: 400
        check_documented("PUT", FP, api("PUT", base + "/files/data", b"x"))  # a directory: 409
        check_documented("DELETE", FP, api("DELETE", base + "/files/data"))  # not empty: 409
        r = check_documented("GET", F, api("GET", base + "/files"))
        check(any(f["path"] == "data/2026/report.csv" for f in r.json()["files"]), "listed", r.json())
        r = check_documented("DELETE", FP, api("DELETE", base + "/files/data/2026/report.csv"))
        check_eq(r.status, 204, "delete file")
        check_documented("DELETE", FP, api("DELETE", base + "/files/data/2026/report.csv"))  # 404

        form = form_file(b"form/a.csv", b"a\n1\n") + FORM_END
        r = check_documented("POST", F, api("POST", base + "/files", form,
                                            headers={"Content-Type": FORM_TYPE}))
        check_eq(r.status, 201, "form upload")
        check_documented("POST", F, api("POST", base + "/files", form_file(b"../x", b"1") + FORM_END,
                                        headers={"Content-Type": FORM_TYPE}))  # 400
        check_documented("POST", F, api("POST", base + "/files", b"x",
                                        headers={"Content-Type": "text/plain"}))  # 415
        r = check_documented("POST", E, api("POST", base + "/executions",
                                            {"code": "import os\nos.environ['E']", "env": {"E": "1"},
                                             "keep_ansi": True}))
        check_eq(r.json()["results"][0]["data"]["text/plain"], "'1'", "env")
        check_documented("POST", E, api("POST", base + "/executions",
                                        {"code": "1", "env": {"LD_PRELOAD": "x"}}))  # 400
        check_documented("GET", CI + "/events", api("GET", base + "/events"))  # not an upgrade: 400
        ws = events_ws(ctx)
        try:
            ws.send(json.dumps({"type": "execute", "code": "print(1)\n1/0"}))
            ws.send("not json")
            seen = []
            while not seen or seen[-1]["type"] != "end":
                seen.append(receive(ws))
                check_schema(seen[-1], "EventsServerMessage", "events message")
            check(any(m["type"] == "error" and "message" in m for m in seen), "a refusal", seen)
        finally:
            ws.close()

        r = check_documented("POST", CI + "/restart", api("POST", base + "/restart"))
        check_eq(r.status, 200, "restart")
        r = check_documented("DELETE", CI, api("DELETE", base))
        check_eq(r.status, 204, "delete")
        for method, path in (("GET", CI), ("DELETE", CI), ("POST", CI + "/restart"), ("GET", E),
                             ("GET", F), ("GET", FP), ("PUT", FP), ("DELETE", FP), ("POST", F),
                             ("GET", CI + "/events")):
            target = path.replace("{context_id}", cid).replace("{path}", "a/b")
            r = check_documented(method, path, api(method, target, b"x" if method == "PUT" else None))
            check_eq(r.status, 404, f"{method} {path} after delete")
    finally:
        api("DELETE", base)


@callisto_only
def test_openapi_describes_one_shot_answers():
    """POST /v1/executions and its execution by id, checked against GET /openapi.json."""
    X, XI = "/v1/executions", "/v1/executions/{execution_id}"
    check_documented("POST", X, api("POST", X, {"code": "1"}, auth=None))
    check_documented("POST", X, api("POST", X, {"cod": "1"}))
    check_documented("POST", X, api("POST", X, {"code": "1", "kernel": "no-such-kernelspec-e2e"}))
    r = check_documented("POST", X, api("POST", X, {"code": "print('one')\n6 * 7"}, timeout=LADDER_TIMEOUT))
    check_eq(r.status, 200, "one-shot run")
    eid = r.json()["id"]
    check_eq(check_documented("GET", XI, api("GET", f"{X}/{eid}")).status, 200, "GET it later")
    check_eq(check_documented("DELETE", XI, api("DELETE", f"{X}/{eid}")).status, 200, "finished")
    check_eq(check_documented("GET", XI, api("GET", f"{X}/{r.json()['context_id']}")).status, 404,
             "unknown id")
    streamed = check_documented("POST", X, api("POST", X, {"code": "print('s')", "stream": True},
                                               timeout=LADDER_TIMEOUT))
    check(streamed.body.decode().splitlines()[-1].find('"end"') > 0, "the stream ends with end")


@callisto_only
def test_openapi_describes_mcp_answers():
    """/mcp's transport answers, checked against GET /openapi.json."""
    json_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def mcp(method, body=None, session=None, headers=None, **kw):
        h = dict(json_headers)
        if session:
            h["Mcp-Session-Id"] = session
        h.update(headers or {})
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        r = api(method, "/mcp", data if data is not None else (b"" if method == "POST" else None),
                headers=h, **kw)
        return check_documented(method, "/mcp", r)

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "e2e", "version": "1"}}}
    check_eq(mcp("POST", init, auth=None).status, 401, "no token")
    check_eq(mcp("POST", b"{not json").status, 400, "not JSON")
    check_eq(mcp("POST", init, headers={"Content-Type": "text/plain"}).status, 415, "not JSON type")
    check_eq(mcp("POST", init, headers={"Accept": "text/html"}).status, 406, "Accept")
    check_eq(mcp("POST", init, headers={"Origin": "http://evil.example"}).status, 403, "Origin")
    r = mcp("POST", init)
    check_eq(r.status, 200, "initialize")
    session = r.headers.get("mcp-session-id")
    check(session, "initialize answers Mcp-Session-Id", r.headers)
    try:
        tools = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        check_eq(mcp("POST", tools).status, 400, "no session id")
        check_eq(mcp("POST", tools, session="no-such-session").status, 404, "unknown session")
        check_eq(mcp("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                     session=session).status, 202, "notification")
        check_eq(mcp("POST", tools, session=session).status, 200, "tools/list")
        check_eq(mcp("DELETE", headers={"Content-Type": ""}).status, 400, "DELETE without session")
    finally:
        check_eq(mcp("DELETE", session=session).status, 204, "end the session")
    check_eq(mcp("DELETE", session=session).status, 404, "ended")


if __name__ == "__main__":
    sys.exit(run_tests())
