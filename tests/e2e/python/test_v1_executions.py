"""End-to-end tests of /v1's executions (Callisto's agent-facing API): the aggregated answer,
the NDJSON event stream, executions as resources that outlive their request, idempotency
keys, the per-context queue, the deadline ladder, output caps, per-execution env, keep_ansi,
contexts' restart and list, and every bad form of every input.

Run against a server (CALLISTO_URL, CALLISTO_TOKEN)."""

import json
import sys

import mcp_client
from e2e_client import (TOKEN, KernelWS, api, callisto_only, check, check_documented, check_eq,
                        kernel, poll, run_code, run_tests)
from v1_client import Stream, delete_context, get_execution, new_context


@callisto_only
def test_aggregated_answer_has_stdout_a_plot_and_an_error():
    ctx = new_context({"kernel": "python3"})
    try:
        r = run_code(ctx, "import sys\nprint('hello')\nprint('warn', file=sys.stderr)\n6*7")
        check_eq(r["status"], "ok", "status")
        check_eq(r["stdout"], "hello\n", "stdout")
        check_eq(r["stderr"], "warn\n", "stderr")
        check_eq(r["results"][0]["data"]["text/plain"], "42", "execute_result")
        check_eq(r["execution_count"], 1, "execution_count")
        check(r["error"] is None, "no error", r)
        for key in ("duration_ms", "queue_ms", "truncated", "id", "created_at"):
            check(key in r, "execution has " + key, r)

        plot = run_code(ctx, "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n"
                             "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
        check_eq(plot["status"], "ok", "plot status " + json.dumps(plot)[:500])
        pngs = [res["data"]["image/png"] for res in plot["results"] if "image/png" in res["data"]]
        check(len(pngs) == 1 and isinstance(pngs[0], str) and pngs[0].startswith("iVBOR"),
              "one inline PNG", plot["results"])

        err = run_code(ctx, "def f():\n    return 1 / 0\nf()")
        check_eq(err["status"], "error", "error status")
        check_eq(err["error"]["name"], "ZeroDivisionError", "error name")
        check_eq(err["error"]["value"], "division by zero", "error value")
        tb = "\n".join(err["error"]["traceback"])
        check("\x1b" not in tb, "traceback has no ANSI codes", tb)
        check("return 1 / 0" in tb, "traceback shows the line", tb)

        # State survives between executions of one context.
        check_eq(run_code(ctx, "sys.stdout.write('still ' + str(6*7))")["stdout"], "still 42",
                 "state kept")
    finally:
        delete_context(ctx)


@callisto_only
def test_stream_gives_events_in_order_for_a_long_cell(context):
    s = Stream(context, "import time\nfor i in range(5):\n    print(i, flush=True)\n"
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


@callisto_only
def test_execution_is_fetched_by_id_after_the_client_went_away(context):
    s = Stream(context, "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n"
                        "    time.sleep(0.5)\n'done'")
    first = s.event()
    check_eq(first["type"], "queued", "first event")
    eid = first["id"]
    s.close()  # gone mid-run
    running = get_execution(context, eid)
    check(running["status"] in ("queued", "running", "ok"), "status while running", running)
    done = poll(lambda: (lambda e: e if e["status"] == "ok" else None)(get_execution(context, eid)),
                30, 0.2, "the execution to finish")
    check_eq(done["stdout"], "tick 0\ntick 1\ntick 2\n", "all output kept")
    check_eq(done["results"][0]["data"]["text/plain"], "'done'", "result kept")
    listing = api("GET", f"/v1/contexts/{context['id']}/executions").json()
    check(any(e["id"] == eid for e in listing), "listed", listing)


@callisto_only
def test_a_repeated_idempotency_key_runs_once(context):
    run_code(context, "runs = []")
    a = run_code(context, "runs.append(1)\nlen(runs)", idempotency_key="step-1")
    b = run_code(context, "runs.append(1)\nlen(runs)", idempotency_key="step-1")
    check_eq(b["id"], a["id"], "same execution")
    check_eq(b["results"][0]["data"]["text/plain"], "1", "same answer")
    check_eq(run_code(context, "len(runs)")["results"][0]["data"]["text/plain"], "1", "ran once")
    # The same key while the first is still running: still one run.
    s = Stream(context, "import time\ntime.sleep(1)\nruns.append(2)", idempotency_key="step-2")
    first = s.event()
    again = run_code(context, "runs.append(2)", idempotency_key="step-2")
    check_eq(again["id"], first["id"], "same execution while running")
    s.events()
    s.close()
    check_eq(run_code(context, "runs")["results"][0]["data"]["text/plain"], "[1, 2]",
             "each ran once")


@callisto_only
def test_executions_on_a_context_run_one_at_a_time_in_order(context):
    run_code(context, "order = []")
    slow = Stream(context, "import time\ntime.sleep(1.5)\norder.append('first')")
    check_eq(slow.event()["type"], "queued", "first queued")
    second = run_code(context, "order.append('second')\norder")
    check_eq(second["results"][0]["data"]["text/plain"], "['first', 'second']", "in order")
    check(second["queue_ms"] >= 500, "the second waited for the first", second["queue_ms"])
    slow.events()
    slow.close()

    # A bounded queue: one running, 16 waiting, the next is refused with 429.
    blocker = Stream(context, "import time\ntime.sleep(3)")
    check_eq(blocker.event()["type"], "queued", "blocker queued")
    waiting = []
    for i in range(16):
        w = Stream(context, f"{i}")
        check_eq(w.resp.status, 200, f"queued #{i}")
        check_eq(w.event()["type"], "queued", f"queued event #{i}")
        waiting.append(w)
    over = api("POST", f"/v1/contexts/{context['id']}/executions", {"code": "1"})
    check_eq(over.status, 429, "queue full")
    check_documented("POST", "/v1/contexts/{context_id}/executions", over)
    check(over.headers.get("retry-after"), "Retry-After", over.headers)
    check_eq(set(over.json()), {"reason", "message"}, "JSON error")
    for w in [blocker] + waiting:
        check_eq(w.events()[-1]["execution"]["status"], "ok", "each finished")
        w.close()


@callisto_only
def test_deadline_interrupt_preserves_state(context):
    run_code(context, "kept = 'yes'")
    r = run_code(context, "while True:\n    pass", timeout=1)
    check_eq(r["status"], "timeout", "status")
    check_eq(r["state_preserved"], True, "an interrupt sufficed")
    check(r["duration_ms"] < 6000, "ended at the interrupt", r["duration_ms"])
    check_eq(run_code(context, "kept")["results"][0]["data"]["text/plain"], "'yes'", "state kept")


@callisto_only
def test_deadline_restart_when_sigint_is_ignored(context):
    run_code(context, "kept = 'yes'")
    r = run_code(context, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                          "while True:\n    pass", timeout=1)
    check_eq(r["status"], "timeout", "status")
    check_eq(r["state_preserved"], False, "a restart was needed")
    after = run_code(context, "'kept' in dir()")
    check_eq(after["status"], "ok", "the context works after the restart")
    check_eq(after["results"][0]["data"]["text/plain"], "False", "state is gone")
    cwd = run_code(context, "import os\nprint(os.listdir('.') is not None)")
    check_eq(cwd["stdout"], "True\n", "the workdir is still usable")


@callisto_only
def test_delete_interrupts_a_running_execution(context):
    s = Stream(context, "import time\nprint('begun', flush=True)\nwhile True:\n    time.sleep(0.05)")
    eid = s.event()["id"]
    while s.event()["type"] != "stdout":
        pass
    r = api("DELETE", f"/v1/contexts/{context['id']}/executions/{eid}")
    check_eq(r.status, 202, "interrupt accepted")
    end = s.events()[-1]["execution"]
    s.close()
    check_eq(end["status"], "interrupted", "status")
    check_eq(end["state_preserved"], True, "state kept")
    check_eq(end["error"]["name"], "KeyboardInterrupt", "the kernel says why")
    check_eq(api("DELETE", f"/v1/contexts/{context['id']}/executions/{eid}").status, 200,
             "deleting a finished execution answers it")


@callisto_only
def test_a_big_print_is_capped_with_head_tail_and_marker(context):
    r = run_code(context,
                 "import sys\nsys.stdout.write('HEAD' + 'x' * (50 * 1024 * 1024) + 'TAIL')")
    check_eq(r["status"], "ok", "status")
    out = r["stdout"]
    check(out.startswith("HEADxxx"), "head kept", out[:20])
    check(out.endswith("xxxTAIL"), "tail kept", out[-20:])
    cut = r["truncated"]["stdout_bytes"]
    check(cut > 40 * 1024 * 1024, "most was cut", cut)
    check(f"[... {cut} bytes truncated ...]" in out, "explicit marker", out[512 * 1024 - 10:512 * 1024 + 60])
    check(len(out) < 2 * 1024 * 1024, "answer stays small", len(out))


@callisto_only
def test_an_oversized_image_becomes_a_file_reference(context):
    r = run_code(context, "import os\nfrom IPython.display import Image, display\n"
                          "display(Image(data=b'\\x89PNG\\r\\n\\x1a\\n' + os.urandom(20 * 1024 * 1024), format='png'))")
    check_eq(r["status"], "ok", "status " + json.dumps(r)[:400])
    ref = r["results"][0]["data"]["image/png"]
    check(isinstance(ref, dict) and "file" in ref, "a file reference", str(ref)[:200])
    check_eq(ref["bytes"], 20 * 1024 * 1024 + 8, "decoded size")
    check_eq(r["truncated"]["results"][0]["moved_to"], ref["file"], "said in truncated")
    size = run_code(context, f"import os\nos.path.getsize({ref['file']!r})")
    check_eq(size["results"][0]["data"]["text/plain"], str(20 * 1024 * 1024 + 8),
             "the kernel sees the file in its workdir")
    # Each under the per-result cap, together over the execution's 20 MiB: the first stay
    # inline, the later ones become files.
    many = run_code(context, "import os\nfrom IPython.display import Image, display\n"
                             "for i in range(6):\n"
                             "    display(Image(data=b'\\x89PNG\\r\\n\\x1a\\n' + os.urandom(3 * 1024 * 1024), format='png'))")
    kinds = ["file" if isinstance(res["data"]["image/png"], dict) else "inline"
             for res in many["results"]]
    check_eq(kinds[:4], ["inline"] * 4, "the first four inline")
    check_eq(kinds[-1], "file", "the last one moved to a file")


@callisto_only
def test_restart_and_get_and_list_contexts():
    ctx = new_context({"policy": "fresh"})  # its kernel goes with it (reuse: test_policies.py)
    try:
        run_code(ctx, "x = 1")
        r = api("POST", f"/v1/contexts/{ctx['id']}/restart")
        check_eq(r.status, 200, "restart")
        check_eq(run_code(ctx, "'x' in dir()")["results"][0]["data"]["text/plain"], "False",
                 "fresh")
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
def test_bad_inputs_get_clear_json_errors(context):
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

    ex = f"/v1/contexts/{context['id']}/executions"
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
    refused("PATCH", f"/v1/contexts/{context['id']}", None, 405, "wrong method on a context")
    refused("GET", f"/v1/contexts/{context['id']}/restart", None, 405, "GET restart")
    refused("GET", f"/v1/contexts/{context['id']}/nothing", None, 404, "unknown sub-resource")
    # After all that, the context still works.
    check_eq(run_code(context, "1+1")["results"][0]["data"]["text/plain"], "2", "still works")


@callisto_only
def test_env_is_set_for_one_execution_and_restored_after(context):
    run_code(context, "import os, subprocess\nos.environ['KEPT'] = 'before'")
    env = {"API_KEY": "s3cret ü \"q\"", "KEPT": "during", "EMPTY": ""}
    r = run_code(context, "print(os.environ['API_KEY'])\nprint(os.environ['KEPT'])\n"
                          "print(repr(os.environ['EMPTY']))\n"
                          "print(subprocess.run(['sh', '-c', 'echo $API_KEY'], capture_output=True,"
                          " text=True).stdout, end='')", env=env)
    check_eq(r["status"], "ok", "status " + json.dumps(r)[:400])
    check_eq(r["stdout"], "s3cret ü \"q\"\nduring\n''\ns3cret ü \"q\"\n",
             "os.environ and a subprocess see the values")
    check_eq(r["execution_count"], 2, "the silent requests do not count")
    after = run_code(context, "print(os.environ.get('API_KEY'), os.environ['KEPT'], 'EMPTY' in os.environ)")
    check_eq(after["stdout"], "None before False\n", "previous values restored, new ones gone")

    # Restored after an error too, and the traceback is the user's own: line 2, cell code.
    err = run_code(context, "x = 1\nraise ValueError(os.environ['API_KEY'])", env={"API_KEY": "k"})
    check_eq(err["status"], "error", "error status")
    check_eq(err["error"]["value"], "k", "the code saw the variable")
    tb = "\n".join(err["error"]["traceback"])
    check("----> 2 raise ValueError" in tb, "the line number is the user's", tb)
    check("_callisto" not in tb and "lambda" not in tb, "no wrapper in the traceback", tb)
    check_eq(run_code(context, "print(os.environ.get('API_KEY'))")["stdout"], "None\n",
             "restored after an error")

    # ...and after an interrupt.
    s = Stream(context, "import time\nprint(os.environ['API_KEY'], flush=True)\ntime.sleep(60)",
               env={"API_KEY": "int"})
    eid = s.event()["id"]
    while True:
        e = s.event()
        if e["type"] == "stdout":
            check_eq(e["text"], "int\n", "set while running")
            break
    check_eq(api("DELETE", f"/v1/contexts/{context['id']}/executions/{eid}").status, 202,
             "interrupt")
    check_eq(s.events()[-1]["execution"]["status"], "interrupted", "interrupted")
    s.close()
    check_eq(run_code(context, "print(os.environ.get('API_KEY'))")["stdout"], "None\n",
             "restored after an interrupt")
    # The user's own variables survive executions with env.
    check_eq(run_code(context, "print('x' in dir(), '_callisto_saved_env' in dir())")["stdout"],
             "True False\n", "no names left in the user's namespace")
    # One-shot executions take env too.
    r = api("POST", "/v1/executions", {"code": "import os\nprint(os.environ['ONE'])",
                                       "env": {"ONE": "shot"}, "policy": "fresh"}, timeout=120)
    check_eq(r.status, 200, "one-shot with env " + repr(r.body[:300]))
    check_eq(r.json()["stdout"], "shot\n", "the one-shot saw its env")
    check_eq(api("POST", "/v1/executions", {"code": "1", "env": {"LD_PRELOAD": "x"}}).status, 400,
             "a one-shot's env is checked the same way")


@callisto_only
def test_the_execution_queued_behind_an_error_runs(context):
    # The context sends the next execution the moment the failed one ends: ipykernel's
    # stop_on_error would answer it "aborted" (and the env restore with it).
    for i in range(5):
        failing = Stream(context, "raise ValueError('boom')", env={"ROUND": str(i)})
        check_eq(failing.event()["type"], "queued", "failing queued")
        nxt = run_code(context, "import os\nprint(os.environ.get('ROUND'))")
        check_eq(nxt["status"], "ok", f"round {i}: the next one ran " + json.dumps(nxt)[:300])
        check_eq(nxt["stdout"], "None\n", f"round {i}: env restored")
        check_eq(failing.events()[-1]["execution"]["status"], "error", "the first failed")
        failing.close()


@callisto_only
def test_bad_env_is_refused_and_nothing_runs(context):
    ex = f"/v1/contexts/{context['id']}/executions"
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
    check_eq(run_code(context, "'ran' in dir()")["results"][0]["data"]["text/plain"], "False",
             "no refused request ran")


@callisto_only
def test_code_with_a_nul_is_refused_and_the_context_keeps_working(context):
    """ipykernel drops an execute_request whose code holds a NUL without a reply: the context
    waited for it until a restart. Refused at every door instead, naming the field."""
    for code in ("print(1)\u0000", "\u0000", "x = 1\u0000\nprint(x)"):
        r = api("POST", f"/v1/contexts/{context['id']}/executions", {"code": code}, timeout=20)
        check_eq(r.status, 400, f"a context's execution of {code!r}: {r.body[:200]!r}")
        check("'code' contains a NUL character" in r.json()["message"], "names 'code'",
              r.json())
        r = api("POST", f"/v1/contexts/{context['id']}/executions",
                {"code": code, "language": "bash"}, timeout=20)
        check_eq(r.status, 400, f"as bash too: {r.body[:200]!r}")
    check_eq(run_code(context, "print(6 * 7)")["stdout"], "42\n", "the context keeps working")
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
def test_keep_ansi_keeps_the_traceback_colours(context):
    plain = run_code(context, "1/0")
    check("\x1b[" not in "".join(plain["error"]["traceback"]), "stripped by default",
          plain["error"])
    raw = run_code(context, "1/0", keep_ansi=True)
    tb = "".join(raw["error"]["traceback"])
    check("\x1b[" in tb, "colours kept with keep_ansi", tb[:300])
    check_eq(raw["error"]["name"], "ZeroDivisionError", "the name has no codes")
    s = Stream(context, "1/0", keep_ansi=True)
    err = [e for e in s.events() if e["type"] == "error"]
    s.close()
    check("\x1b[" in "".join(err[0]["traceback"]), "the stream keeps them too", err)


if __name__ == "__main__":
    sys.exit(run_tests())
