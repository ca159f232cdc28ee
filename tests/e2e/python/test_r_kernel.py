#!/usr/bin/python3
"""End-to-end tests of an R kernel (Debian's r-cran-irkernel, kernelspec `ir`) through Callisto:
the Jupyter WebSocket (stream, error, PNG plot, data frame, interrupt, restart, output cap), the
/v1 interpreter API (aggregated executions, R tracebacks, plots, tables, the deadline ladder,
output budget, per-execution env, restart, delete, reuse), and the sandbox escape attacks of
test_sandbox_escape.py written in R. Each attack must be blocked; afterwards the gateway and a
second R session must still work.

Run against a server started with the limits the Python escape suite uses, and a short
heartbeat timeout (IRkernel answers its heartbeat only between executions):
  callisto --memory-limit=256MiB --pids-limit=64 --disk-quota=64MiB --heartbeat-timeout=2 ...
  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 test_r_kernel.py [-k NAME]

IRkernel publishes the value of a cell as `display_data` (never `execute_result`, see
IRkernel's Executor$handle_value), and answers an interrupted cell with status "abort"; the
checks below accept what a Jupyter client must accept from it. Never targets a real address:
the egress tests use TEST-NET-1 (192.0.2.1) and names that must not resolve.
"""

import base64
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    Execution, KernelWS, TOKEN, api, callisto_only, check, check_eq, create_kernel,
    delete_context, delete_kernel, gateway_args, gateway_pid, get_kernel, launched_kernel, poll,
    run_code, run_tests, test,
)

R = "ir"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# The kernel limits the server under test was started with (as test_sandbox_escape.py).
MEMORY_LIMIT = os.environ.get("CALLISTO_E2E_MEMORY_LIMIT", "256MiB")
PIDS_LIMIT = int(os.environ.get("CALLISTO_E2E_PIDS_LIMIT", "64"))
DISK_QUOTA = 64 << 20
# The deadline ladder (timeout + interrupt grace + restart of an R kernel) needs room.
V1_TIMEOUT = 150
# websocket-client answers server pings inside one recv() and keeps waiting with a fresh
# socket timeout, so a single long recv can outlive its deadline while pings arrive: wait in
# short slices instead.
SLICE = 5.0


# --------------------------------------------------------------------------
# Helpers: Jupyter WebSocket
# --------------------------------------------------------------------------

def r_kernel():
    """A fresh R kernel (deleted on exit). R kernels have no zygote: they start by exec."""
    return launched_kernel("exec", name=R)


def wait_msg(ws, pred, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return ws.wait_for(pred, min(SLICE, max(0.01, deadline - time.monotonic())), what)
        except AssertionError:
            if time.monotonic() >= deadline:
                raise


def collect(ws, msg_id, timeout=60):
    """execute_reply and iopub idle of one request, every wait bounded."""
    ex = Execution(msg_id)
    deadline = time.monotonic() + timeout
    while ex.reply is None or not ex.idle:
        left = deadline - time.monotonic()
        check(left > 0, f"execution {msg_id} finished within {timeout} s",
              f"reply={ex.reply is not None}", f"idle={ex.idle}",
              [(m["msg_type"], str(m["content"])[:100]) for m in ex.iopub[-8:]])
        ex.add(wait_msg(ws, lambda m: m["parent_header"].get("msg_id") == msg_id, left,
                        f"output of {msg_id}"))
    return ex


def run(ws, code, timeout=60):
    return collect(ws, ws.execute(code), timeout)


def ready(ws, timeout=60):
    """kernel_info_reply (resent while a fresh kernel is not yet listening)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return ws.kernel_info(min(SLICE, max(0.01, deadline - time.monotonic())))
        except AssertionError:
            if time.monotonic() >= deadline:
                raise


def outputs(ex):
    """The MIME bundles a cell produced: display_data and execute_result, in order."""
    return [m["content"]["data"] for m in ex.iopub
            if m["msg_type"] in ("display_data", "execute_result")]


def value_text(ex):
    bundles = outputs(ex)
    return bundles[-1].get("text/plain") if bundles else None


def errors_of(ex):
    return [m["content"] for m in ex.of_type("error")]


def r_json(ws, code, timeout=60):
    """Runs R code that leaves its answer in `r`; returns `r` as JSON decoded."""
    ex = run(ws, code + '\ncat(jsonlite::toJSON(r, auto_unbox = TRUE, null = "null"), "\\n")',
             timeout)
    out = ex.stdout().strip().splitlines()
    check(ex.status == "ok" and out, "R code ran", ex.status, errors_of(ex), ex.stdout()[-500:])
    return json.loads(out[-1])


def r_string(s):
    return json.dumps(s)  # a JSON string is a valid R string literal for what we pass


def is_png(b64):
    try:
        return base64.b64decode(b64)[:8] == PNG_SIGNATURE
    except (ValueError, TypeError):
        return False


# --------------------------------------------------------------------------
# Helpers: /v1
# --------------------------------------------------------------------------

def new_context(policy="fresh"):
    r = api("POST", "/v1/contexts", {"kernel": R, "policy": policy}, timeout=90)
    check_eq(r.status, 201, f"create an R context ({r.body[:300]!r})")
    ctx = r.json()
    check_eq(ctx["kernel"], R, "the context's kernelspec")
    check_eq(r.headers.get("location"), "/v1/contexts/" + ctx["id"], "Location")
    return ctx


class context:
    """An R context, deleted on exit."""

    def __init__(self, policy="fresh"):
        self.policy = policy
        self.ctx = None

    def __enter__(self):
        self.ctx = new_context(self.policy)
        return self.ctx

    def __exit__(self, *exc):
        if self.ctx:
            delete_context(self.ctx["id"])
        return False


def texts(ex):
    return [res["data"].get("text/plain", "") for res in ex["results"]]


def summary(ex):
    return json.dumps({k: ex.get(k) for k in ("status", "stdout", "stderr", "error",
                                              "state_preserved", "truncated")})[:800]


# --------------------------------------------------------------------------
# Host-side view of a kernel's processes
# --------------------------------------------------------------------------

def descendants(root):
    """Host pids of every process below `root` (the kernel's bwrap)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


# ==========================================================================
# Jupyter WebSocket
# ==========================================================================

@test
def test_ir_kernelspec_is_listed_as_r():
    r = api("GET", f"/api/kernelspecs/{R}")
    check_eq(r.status, 200, "GET /api/kernelspecs/ir")
    spec = r.json()
    check_eq(spec["name"], R, "name")
    check_eq(spec["spec"]["language"], "R", "spec.language")


@test
def test_kernel_info_says_r():
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        info = ready(ws)
        check_eq(info["content"]["status"], "ok", "kernel_info status")
        check_eq(info["content"]["language_info"]["name"], "R", "language_info.name")
        check_eq(get_kernel(k["id"])["name"], R, "the model names the kernelspec")


@test
def test_cat_is_a_stdout_stream():
    with r_kernel() as k, KernelWS(k["id"], "v1") as ws:
        ready(ws)
        ex = run(ws, 'cat("hi\\n")')
        check_eq(ex.status, "ok", "execute_reply status")
        streams = [m["content"] for m in ex.of_type("stream")]
        check_eq(streams, [{"name": "stdout", "text": "hi\n"}], "one stdout stream")
        ex = run(ws, 'message("to stderr")')
        check(any(m["content"]["name"] == "stderr" and "to stderr" in m["content"]["text"]
                  for m in ex.of_type("stream")), "message() is a stderr stream",
              [m["content"] for m in ex.iopub])


@test
def test_stop_is_an_error_with_a_traceback():
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        ex = run(ws, 'stop("boom")')
        check_eq(ex.status, "error", "execute_reply status")
        errs = errors_of(ex)
        check_eq(len(errs), 1, "one iopub error")
        check("boom" in "\n".join(errs[0]["traceback"]), "the traceback mentions boom", errs[0])
        check("boom" in ex.reply["content"].get("evalue", ""), "the reply's evalue", ex.reply)
        # The kernel goes on after an error.
        check_eq(run(ws, 'cat("after\\n")').stdout(), "after\n", "the kernel still runs code")


@test
def test_plot_is_a_png_display():
    with r_kernel() as k, KernelWS(k["id"], "v1") as ws:
        ready(ws)
        ex = run(ws, "plot(1:10)")
        check_eq(ex.status, "ok", "execute_reply status")
        pngs = [m["content"]["data"]["image/png"] for m in ex.of_type("display_data")
                if "image/png" in m["content"]["data"]]
        check_eq(len(pngs), 1, "one display_data with image/png")
        check(is_png(pngs[0]), "it decodes to a PNG", pngs[0][:40])
        check(len(base64.b64decode(pngs[0])) > 1000, "a real image, not a stub",
              len(base64.b64decode(pngs[0])))


@test
def test_data_frame_is_an_html_table():
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        ex = run(ws, "head(mtcars, 3)")
        check_eq(ex.status, "ok", "execute_reply status")
        # IRkernel publishes values as display_data; execute_result is accepted too.
        bundles = outputs(ex)
        check_eq(len(bundles), 1, "one rich output for the value")
        html, plain = bundles[0].get("text/html", ""), bundles[0].get("text/plain", "")
        check("<table" in html, "text/html has a <table", html[:200])
        check("Mazda RX4" in html and "Mazda RX4" in plain, "the rows are there",
              html[:300], plain[:300])
        check("mpg" in plain, "text/plain has the columns", plain[:300])


@test
def test_a_busy_kernel_is_not_taken_for_frozen():
    # IRkernel answers heartbeats from its main loop, so it is silent while it computes; the
    # server's --heartbeat-timeout=2 must not kill it for that.
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        check_eq(run(ws, "kept_busy <- 3").status, "ok", "set a variable")
        ex = run(ws, "t0 <- Sys.time(); while (Sys.time() - t0 < 8) {}; cat('still here\\n')")
        check_eq(ex.status, "ok", "the busy cell ran to its end")
        check_eq(ex.stdout(), "still here\n", "its output")
        check_eq(value_text(run(ws, "kept_busy")), "[1] 3", "the same R process, not a restart")


@test
def test_interrupt_stops_a_sleep_and_keeps_state():
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        check_eq(run(ws, "kept_r <- 7").status, "ok", "set a variable")
        msg_id = ws.execute('cat("sleeping\\n"); Sys.sleep(30); cat("woke\\n")')
        wait_msg(ws, lambda m: m["msg_type"] == "stream"
                 and m["parent_header"].get("msg_id") == msg_id, 30, "the sleep to begin")
        time.sleep(0.3)
        t0 = time.monotonic()
        r = api("POST", f"/api/kernels/{k['id']}/interrupt")
        check_eq(r.status, 204, "POST interrupt")
        ex = collect(ws, msg_id, 10)
        took = time.monotonic() - t0
        check(took < 5, "the reply came within 5 s of the interrupt", took)
        check(ex.status in ("abort", "aborted", "error"), "the interrupted cell did not succeed", ex.reply)
        check("woke" not in ex.stdout(), "the sleep did not run to its end", ex.stdout())
        ex = run(ws, "kept_r")
        check_eq(ex.status, "ok", "the kernel runs code after the interrupt")
        check_eq(value_text(ex), "[1] 7", "the variable set before the sleep is kept")


@test
def test_restart_clears_state_and_the_kernel_answers():
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        check_eq(value_text(run(ws, 'gone_r <- "here"; gone_r')), '[1] "here"', "variable set")
        r = api("POST", f"/api/kernels/{k['id']}/restart", timeout=90)
        check_eq(r.status, 200, f"POST restart ({r.body[:200]!r})")
        check_eq(r.json()["id"], k["id"], "same kernel id")
        check_eq(ready(ws)["content"]["language_info"]["name"], "R", "an R kernel answers again")
        ex = run(ws, 'exists("gone_r")')
        check_eq(ex.status, "ok", "the restarted kernel runs code")
        check_eq(value_text(ex), "[1] FALSE", "the variable is gone")
        check_eq(run(ws, 'cat(6 * 7, "\\n")').stdout(), "42 \n", "and computes")


@callisto_only
def test_a_runaway_cat_is_capped_on_the_websocket():
    # --ws-output-limit (default 8MiB): a 20 MB cat is cut, with a notice and a summary.
    with r_kernel() as k, KernelWS(k["id"], "v1") as ws:
        ready(ws)
        ex = run(ws, 'cat("HEAD"); cat(strrep("x", 20e6)); cat("TAIL\\n")', 120)
        check_eq(ex.status, "ok", "the cell itself succeeded")
        notices = [m for m in ex.iopub if m["msg_type"] == "stream"
                   and "callisto_output_limit" in m["metadata"]]
        kinds = [m["metadata"]["callisto_output_limit"] for m in notices]
        check(any("kind" in n for n in kinds), "a limit notice", kinds)
        limit = next(n["limit"] for n in kinds if "kind" in n)
        shown = len(ex.stdout().encode())
        check(0 < shown <= limit, "stdout shown is at most the limit", shown, limit)
        check(ex.stdout().startswith("HEADxxx"), "the head is shown", ex.stdout()[:20])
        check("TAIL" not in ex.stdout(), "what came after the cut is not relayed")
        dropped = [n["dropped"]["stream"]["bytes"] for n in kinds if "dropped" in n]
        check(dropped and dropped[0] > 20_000_000 - limit - 1000, "the summary says what was dropped",
              kinds)
        check_eq(run(ws, 'cat("small\\n")').stdout(), "small\n", "the next cell is not cut")


# ==========================================================================
# The interpreter API (/v1)
# ==========================================================================

@callisto_only
def test_v1_stdout_stderr_and_value():
    with context() as ctx:
        ex = run_code(ctx, 'cat("hello\\n"); message("warn"); 6 * 7')
        check_eq(ex["status"], "ok", "status " + summary(ex))
        check_eq(ex["stdout"], "hello\n", "stdout")
        check("warn" in ex["stderr"], "stderr has the message", ex["stderr"])
        check_eq(texts(ex), ["[1] 42"], "the value as text/plain")
        check(ex["error"] is None, "no error", ex["error"])
        check_eq(run_code(ctx, 'y <- 5; cat(y * 2, "\\n")')["stdout"], "10 \n", "state")
        check_eq(run_code(ctx, 'cat(y, "\\n")')["stdout"], "5 \n", "state kept between executions")


@callisto_only
def test_v1_error_has_the_r_traceback():
    with context() as ctx:
        ex = run_code(ctx, 'f <- function() g(); g <- function() stop("deep"); f()')
        check_eq(ex["status"], "error", "status " + summary(ex))
        err = ex["error"]
        check(isinstance(err, dict) and {"name", "value", "traceback"} <= set(err), "error fields",
              err)
        check("deep" in err["value"], "the value says deep", err["value"])
        tb = "\n".join(err["traceback"])
        frames = [line.strip() for line in tb.splitlines() if line.strip()[:1].isdigit()]
        check(len(frames) >= 2 and frames[0].startswith("1. f()") and frames[1].startswith("2. g()"),
              "the traceback lists the calls f() then g()", tb)
        check("\x1b" not in tb, "no ANSI codes", tb)
        check_eq(run_code(ctx, 'cat("ok\\n")')["status"], "ok", "the context goes on")


@callisto_only
def test_v1_plot_is_a_png_result():
    with context() as ctx:
        ex = run_code(ctx, "plot(1:10)")
        check_eq(ex["status"], "ok", "status " + summary(ex))
        pngs = [res["data"]["image/png"] for res in ex["results"] if "image/png" in res["data"]]
        check_eq(len(pngs), 1, "one image/png result")
        check(isinstance(pngs[0], str) and is_png(pngs[0]), "inline base64 PNG", str(pngs[0])[:60])


@callisto_only
def test_v1_data_frame_is_an_html_table():
    with context() as ctx:
        ex = run_code(ctx, "head(mtcars, 3)")
        check_eq(ex["status"], "ok", "status " + summary(ex))
        html = [res["data"]["text/html"] for res in ex["results"] if "text/html" in res["data"]]
        check_eq(len(html), 1, "one text/html result")
        check("<table" in html[0] and "Mazda RX4" in html[0], "an HTML table", html[0][:200])
        check("mpg" in texts(ex)[0], "text/plain too", texts(ex))


@callisto_only
def test_v1_deadline_interrupts_a_sleep_and_keeps_state():
    with context() as ctx:
        ex = run_code(ctx, "x <- 42; Sys.sleep(30)", timeout=2)
        check_eq(ex["status"], "timeout", "status " + summary(ex))
        check_eq(ex.get("state_preserved"), True, "an interrupt sufficed")
        check(ex["duration_ms"] < 10000, "ended near the deadline", ex["duration_ms"])
        after = run_code(ctx, "x")
        check_eq(after["status"], "ok", "the context runs code after the deadline")
        check_eq(texts(after), ["[1] 42"], "x is still 42")


@callisto_only
def test_v1_deadline_stops_a_busy_loop():
    with context() as ctx:
        run_code(ctx, 'kept <- "yes"')
        t0 = time.monotonic()
        ex = run_code(ctx, "while (TRUE) {}", timeout=2)
        check_eq(ex["status"], "timeout", "status " + summary(ex))
        check("state_preserved" in ex, "says whether state was kept", summary(ex))
        check(time.monotonic() - t0 < 60, "the ladder ended in bounded time", time.monotonic() - t0)
        after = run_code(ctx, 'cat(exists("kept"), "\\n")')
        check_eq(after["status"], "ok", "the context works afterwards")
        expect = "TRUE \n" if ex["state_preserved"] else "FALSE \n"
        check_eq(after["stdout"], expect, "state_preserved tells the truth")


@callisto_only
def test_v1_deadline_restarts_an_r_kernel_that_defers_the_interrupt():
    # The ladder's last rung: suspendInterrupts() holds the deadline's SIGINT pending while R
    # computes (a busy loop: Sys.sleep would return early on the signal), so the interrupt
    # does not stop the code and the gateway must restart the kernel after its grace.
    grace = int(gateway_args(gateway_pid()).get("interrupt-grace", "5"))
    with context() as ctx:
        run_code(ctx, 'kept <- "yes"')
        pid = get_kernel(ctx["kernel_id"])["callisto"]["pid"]
        t0 = time.monotonic()
        ex = run_code(ctx, "suspendInterrupts({t0 <- Sys.time(); "
                           "while (Sys.time() - t0 < 120) {}}); cat('ran to its end\\n')",
                      timeout=2)
        took = time.monotonic() - t0
        check_eq(ex["status"], "timeout", "status " + summary(ex))
        check_eq(ex.get("state_preserved"), False, "the interrupt did not suffice: a restart")
        check("ran to its end" not in ex["stdout"], "the loop did not finish", summary(ex))
        check((2 + grace) * 1000 <= ex["duration_ms"] < 60000,
              f"ended after the deadline (2 s) and the interrupt's grace ({grace} s), long before "
              "the loop's 120 s", ex["duration_ms"])
        check(took < 90, "the answer came in bounded time", took)
        check_eq(api("GET", "/v1/contexts/" + ctx["id"]).json()["kernel_id"], ctx["kernel_id"],
                 "the context keeps its kernel id")
        check(get_kernel(ctx["kernel_id"])["callisto"]["pid"] != pid, "a new R process", pid)
        after = run_code(ctx, 'cat(exists("kept"), "\\n")')
        check_eq(after["status"], "ok", "the context runs code after the restart " + summary(after))
        check_eq(after["stdout"], "FALSE \n", "the variable set before is gone")


@callisto_only
def test_v1_a_big_cat_is_capped_with_head_tail_and_marker():
    with context() as ctx:
        ex = run_code(ctx, 'cat("HEAD"); cat(strrep("x", 20e6)); cat("TAIL")')
        check_eq(ex["status"], "ok", "status " + summary(ex)[:300])
        out = ex["stdout"]
        cut = ex["truncated"]["stdout_bytes"]
        check(cut > 15_000_000, "most of the 20 MB was cut", cut)
        check(len(out.encode()) < 2 * 1024 * 1024, "the answer stays small", len(out))
        check(out.startswith("HEADxxx"), "head kept", out[:20])
        check(out.endswith("xxxTAIL"), "tail kept", out[-20:])
        check(f"[... {cut} bytes truncated ...]" in out, "an explicit marker")
        check_eq(len(out.encode()) - len(f"\n[... {cut} bytes truncated ...]\n") + cut,
                 20_000_008, "kept + cut = what R printed")
        check_eq(run_code(ctx, 'cat("ok\\n")')["truncated"]["stdout_bytes"], 0,
                 "the next execution is not cut")


@callisto_only
def test_v1_env_is_set_for_one_execution():
    with context() as ctx:
        ex = run_code(ctx, 'Sys.getenv("FOO")', env={"FOO": "bar"})
        check_eq(ex["status"], "ok", "status " + summary(ex))
        check(any("bar" in t for t in texts(ex)), "R sees FOO=bar during the execution",
              texts(ex), ex["stderr"])
        after = run_code(ctx, 'Sys.getenv("FOO")')
        check_eq(after["status"], "ok", "status " + summary(after))
        check_eq(texts(after), ['[1] ""'], "FOO is unset again afterwards")
        err = run_code(ctx, 'stop(Sys.getenv("KEY"))', env={"KEY": "k-value"})
        check_eq(err["status"], "error", "an execution with env can fail " + summary(err))
        check("k-value" in err["error"]["value"], "and saw its env", err["error"])
        check_eq(texts(run_code(ctx, 'Sys.getenv("KEY")')), ['[1] ""'],
                 "restored after a failing execution too")


@callisto_only
def test_v1_restart_clears_the_context():
    with context() as ctx:
        run_code(ctx, 'gone <- 1; writeLines("kept", "file.txt")')
        r = api("POST", f"/v1/contexts/{ctx['id']}/restart", timeout=90)
        check_eq(r.status, 200, f"restart ({r.body[:200]!r})")
        check_eq(r.json()["kernel_id"], ctx["kernel_id"], "same kernel id")
        after = run_code(ctx, 'cat(exists("gone"), readLines("file.txt"), "\\n")')
        check_eq(after["status"], "ok", "the restarted context runs code " + summary(after))
        check_eq(after["stdout"], "FALSE kept \n", "variables gone, the workdir kept")


@callisto_only
def test_v1_delete_removes_the_context_and_its_kernel():
    ctx = new_context("fresh")
    try:
        check_eq(run_code(ctx, 'cat("x\\n")')["stdout"], "x\n", "the context works")
    finally:
        r = api("DELETE", "/v1/contexts/" + ctx["id"])
    check_eq(r.status, 204, "DELETE the context")
    check_eq(api("GET", "/v1/contexts/" + ctx["id"]).status, 404, "the context is gone")
    check_eq(api("POST", f"/v1/contexts/{ctx['id']}/executions", {"code": "1"}).status, 404,
             "no execution on a deleted context")
    poll(lambda: api("GET", "/api/kernels/" + ctx["kernel_id"]).status == 404, 30, 0.2,
         "its kernel to go (policy fresh)")


@callisto_only
def test_v1_one_shot_execution_in_r():
    r = api("POST", "/v1/executions", {"code": 'cat(R.version$language, "\\n")', "kernel": R,
                                       "policy": "fresh"}, timeout=V1_TIMEOUT)
    check_eq(r.status, 200, f"one-shot ({r.body[:300]!r})")
    ex = r.json()
    check_eq(ex["status"], "ok", "status " + summary(ex))
    check_eq(ex["stdout"], "R \n", "ran in R")


@callisto_only
def test_v1_a_reused_r_kernel_starts_clean():
    # Under the reuse policy a finished context's kernel is reset and kept for its owner's
    # next context: that context must see none of the previous one's variables or files.
    first = new_context("reuse")
    try:
        # Its own rm, setwd and unlink too: the reset must not call the user's.
        ex = run_code(first, 'secret_r <- "leak"; writeLines("s", "secret.txt"); '
                             'rm <- function(...) invisible(NULL); '
                             'unlink <- function(...) invisible(0L); '
                             'setwd <- function(...) stop("not this one"); cat("set\\n")')
        check_eq(ex["stdout"], "set\n", "first context ran " + summary(ex))
    finally:
        check_eq(api("DELETE", "/v1/contexts/" + first["id"]).status, 204, "delete the first")
    with context("reuse") as second:
        reused = second["kernel_id"] == first["kernel_id"]
        print(f"  second context {'reuses' if reused else 'does not reuse'} the first one's kernel")
        ex = run_code(second, 'cat(exists("secret_r"), file.exists("secret.txt"), '
                              'length(ls(all.names = FALSE)), "\\n")')
        check_eq(ex["status"], "ok", "status " + summary(ex))
        check_eq(ex["stdout"], "FALSE FALSE 0 \n",
                 "no variable (exists, ls()) and no file of the previous context")


# ==========================================================================
# Sandbox escape attempts, in R
# ==========================================================================

@callisto_only
def test_tcp_egress_fails():
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        r = r_json(ws, """
t0 <- Sys.time()
sock <- tryCatch({con <- socketConnection(host = "192.0.2.1", port = 80, timeout = 2)
                  close(con); "connected"},
                 error = function(e) paste("error:", conditionMessage(e)),
                 warning = function(w) paste("warning:", conditionMessage(w)))
secs <- as.numeric(Sys.time() - t0, units = "secs")
probe <- shQuote("exec 3<>/dev/tcp/192.0.2.1/80 && echo connected")
sh <- paste(suppressWarnings(system2("bash", c("-c", probe), stdout = TRUE, stderr = TRUE)),
            collapse = " ")
r <- list(sock = sock, secs = secs, sh = sh)
""")
        check(r["sock"] != "connected", "socketConnection to 192.0.2.1 fails", r)
        check(r["secs"] < 1.9, "it fails at once (no route), not at its 2 s timeout", r)
        check("connected" not in r["sh"] and "unreachable" in r["sh"].lower(),
              "bash /dev/tcp says the network is unreachable", r["sh"])


@callisto_only
def test_http_and_dns_fail():
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        r = r_json(ws, """
fails <- function(expr) tryCatch({force(expr); "succeeded"},
                                 error = function(e) paste("error:", conditionMessage(e)),
                                 warning = function(w) paste("warning:", conditionMessage(w)))
r <- list(
  url = fails(readLines(url("http://example.com"), warn = FALSE)),
  download = fails(download.file("http://example.com", "dl.html", quiet = TRUE)),
  socket = fails({con <- socketConnection("example.com", 80, timeout = 2); close(con)}),
  nsl = if (is.null(suppressWarnings(utils::nsl("example.com")))) "no address" else "resolved",
  curl = paste(suppressWarnings(system2("curl", c("-sS", "-m", "3", "http://example.com"),
                                        stdout = TRUE, stderr = TRUE)), collapse = " "),
  dl_exists = file.exists("dl.html") && file.size("dl.html") > 0)
""")
        for key in ("url", "download", "socket"):
            check(r[key].startswith(("error", "warning")), f"{key} fails", r[key])
        check_eq(r["nsl"], "no address", "nsl() resolves nothing")
        check("resolve" in r["curl"].lower(), "curl cannot resolve the host", r["curl"])
        check_eq(r["dl_exists"], False, "nothing was downloaded")


@callisto_only
def test_host_secrets_unreadable():
    gw = gateway_pid()
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        paths = ["/etc/shadow", "/root", f"/proc/{gw}/environ", f"/proc/{gw}/cmdline",
                 "/var/lib/callisto", "/sys/kernel"]
        r = r_json(ws, f"""
paths <- c({", ".join(r_string(p) for p in paths)})
probe <- function(p) {{
  if (dir.exists(p)) return(paste("listed:", paste(list.files(p, all.files = TRUE), collapse = ",")))
  tryCatch({{b <- readBin(p, "raw", 64); paste("read:", rawToChar(b[b != 0]))}},
           error = function(e) paste("error:", conditionMessage(e)),
           warning = function(w) paste("warning:", conditionMessage(w)))
}}
res <- lapply(paths, probe); names(res) <- paths
token <- {r_string(TOKEN)}
found <- character(0)
for (pid in grep("^[0-9]+$", list.files("/proc"), value = TRUE)) {{
  for (f in c("environ", "cmdline")) {{
    b <- tryCatch(suppressWarnings(readBin(file.path("/proc", pid, f), "raw", 1e6)),
                  error = function(e) raw(0))
    if (length(b) && length(grepRaw(token, b, fixed = TRUE))) found <- c(found, paste0(pid, "/", f))
  }}
}}
r <- list(paths = res, token_in_proc = I(found),
          token_in_env = any(grepl(token, Sys.getenv(), fixed = TRUE)),
          pids = I(sort(as.integer(grep("^[0-9]+$", list.files("/proc"), value = TRUE)))))
""")
        for p in paths:
            v = r["paths"][p]
            check(v.startswith(("error", "warning")), f"{p} is unreadable", v[:200])
        check_eq(r["token_in_proc"], [], "the token is in no /proc file the kernel sees")
        check_eq(r["token_in_env"], False, "the token is not in the kernel's environment")
        check(r["pids"] and max(r["pids"]) < 100, "only the sandbox's own pids are visible",
              r["pids"])


@callisto_only
def test_other_session_workdir_unreachable():
    with r_kernel() as a, r_kernel() as b, KernelWS(a["id"]) as wa, KernelWS(b["id"]) as wb:
        ready(wa)
        ready(wb)
        where = r_json(wa, 'writeLines("a-secret", "secret_r.txt"); r <- getwd()')
        r = r_json(wb, f"""
writeLines("b-own", "secret_r_own.txt")  # the search must find this one: it works
# Everything but /proc, /sys and /usr (the host's, read-only; /bin, /lib... link into it),
# /home (/home/user is the working directory bound a second time, E2B's home: searched as
# /work), and /dev only where files can be written (list.files follows /dev/fd into /proc).
tops <- setdiff(paste0("/", list.files("/")), c("/proc", "/usr", "/sys", "/dev", "/home"))
tops <- c(tops[Sys.readlink(tops) == ""], "/dev/shm", "/dev/mqueue")
hits <- grep("secret_r", list.files("/dev", all.files = TRUE), value = TRUE)
for (d in tops) hits <- c(hits, grep("secret_r.*[.]txt$", list.files(d, recursive = TRUE,
                                     all.files = TRUE, full.names = TRUE), value = TRUE))
for (g in c("/var/lib/callisto/work/{a['id']}/secret_r.txt", "/tmp/callisto-work/{a['id']}/secret_r.txt"))
  if (file.exists(g)) hits <- c(hits, g)
# Each file once, by its real path.
r <- list(hits = I(unique(normalizePath(hits))), own = normalizePath("secret_r_own.txt"))
""")
        check_eq(r["hits"], [r["own"]],
                 f"session B finds its own file and no trace of session A's (A works in {where})")


@callisto_only
def test_writes_outside_workdir_fail():
    targets = ["/usr/evil_r", "/etc/evil_r", "/evil_r", "/proc/evil_r", "/dev/evil_r",
               "/tmp/../usr/evil_r2",
               # R's own directories: its library tree, its site configuration (a write there
               # would reach every later R session), through /usr/lib/R/etc and at /etc/R.
               "/usr/lib/R/evil_r", "/usr/lib/R/etc/evil_r", "/etc/R/evil_r"]
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        r = r_json(ws, f"""
targets <- c({", ".join(r_string(p) for p in targets)})
res <- lapply(targets, function(p) tryCatch({{writeLines("x", p); "written"}},
              error = function(e) paste("error:", conditionMessage(e)),
              warning = function(w) paste("warning:", conditionMessage(w))))
names(res) <- targets
sh <- system("echo x > /usr/evil_sh", ignore.stderr = TRUE)
writeLines("fine", "ok.txt")
r <- list(res = res, sh = sh, dir = dir.create("/usr/evil_dir", showWarnings = FALSE),
          ok = readLines("ok.txt"))
""")
        for p, result in r["res"].items():
            check(result != "written", f"writing {p} fails", result)
        check(r["sh"] != 0, "a shell redirect into /usr fails", r["sh"])
        check_eq(r["dir"], False, "mkdir in /usr fails")
        check_eq(r["ok"], "fine", "writing the workdir works")
    for p in ("/usr/evil_r", "/usr/evil_r2", "/usr/evil_sh", "/usr/evil_dir", "/etc/evil_r",
              "/usr/lib/R/evil_r", "/usr/lib/R/etc/evil_r", "/etc/R/evil_r"):
        check(not os.path.exists(p), f"{p} does not exist on the host")


@callisto_only
def test_fork_bomb_with_mcparallel_is_bounded():
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        r = r_json(ws, """
library(parallel)
jobs <- list(); err <- ""
for (i in 1:5000) {
  j <- tryCatch(mcparallel(Sys.sleep(60)), error = function(e) e)
  if (inherits(j, "error")) { err <- conditionMessage(j); break }
  jobs[[length(jobs) + 1]] <- j
}
tools::pskill(vapply(jobs, function(j) j$pid, 0), tools::SIGKILL)
invisible(suppressWarnings(mccollect(jobs, wait = TRUE, timeout = 20)))
r <- list(n = length(jobs), err = err)
""", timeout=120)
        check("unable to fork" in r["err"], f"fork fails after {r['n']} children", r)
        check(0 < r["n"] < PIDS_LIMIT, "the pids limit stopped the bomb", r)
        check_eq(value_text(run(ws, "1 + 1")), "[1] 2", "the kernel survives its fork bomb")


@callisto_only
def test_shell_fork_bomb_is_bounded_and_goes_with_its_kernel():
    model = create_kernel(R)
    root = None
    try:
        root = get_kernel(model["id"])["callisto"]["pid"]
        with KernelWS(model["id"]) as ws:
            ready(ws)
            ex = run(ws, "system(\"bash -c ':(){ :|:& };:'\"); cat(\"launched\\n\")", 30)
            check_eq(ex.stdout(), "launched\n", "the bomb was launched " + str(errors_of(ex)))
            counts = []
            for _ in range(6):
                time.sleep(1)
                counts.append(len(descendants(root)))
            print(f"  processes under the kernel's bwrap, once a second: {counts}")
            check(max(counts) > 20, "the bomb did run (else this test proves nothing)", counts)
            # bwrap's two processes sit outside the pids cgroup's count at most.
            check(max(counts) <= PIDS_LIMIT + 2, "the pids limit holds the bomb", counts)
            t0 = time.monotonic()
            check_eq(api("GET", "/api").status, 200, "the gateway answers during the bomb")
            check_eq(value_text(run(ws, "1 + 1", 30)), "[1] 2", "the R kernel answers too")
            check(time.monotonic() - t0 < 20, "promptly", time.monotonic() - t0)
    finally:
        status = delete_kernel(model["id"])
    check_eq(status, 204, "DELETE the bombed kernel")
    poll(lambda: not descendants(root), 30, 0.2, "every process of the bomb to be gone")


@callisto_only
def test_huge_allocation_is_an_r_error_and_state_is_kept():
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        run(ws, "keep <- 1")
        ex = run(ws, "x <- numeric(1e10)", 60)
        check_eq(ex.status, "error", "the allocation fails")
        check("cannot allocate" in "\n".join(e["evalue"] for e in errors_of(ex)),
              "R says it cannot allocate", errors_of(ex))
        check_eq(value_text(run(ws, "keep")), "[1] 1", "the kernel lives on with its state")


@callisto_only
def test_memory_bomb_dies_with_a_reason():
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        ws.execute("l <- list(); repeat { l[[length(l) + 1]] <- numeric(8e6) }")
        died = wait_msg(ws, lambda m: m["channel"] == "iopub" and m["msg_type"] == "stream"
                        and "Kernel died" in m["content"].get("text", ""), 120,
                        "iopub 'Kernel died' message")
        check("out of memory" in died["content"]["text"], "iopub names the OOM kill",
              died["content"]["text"])
        model = poll(lambda: (lambda m: m if m.get("reason") else None)(get_kernel(k["id"])),
                     20, what="the kernel model with a reason")
        check(f"out of memory (limit {MEMORY_LIMIT})" in model["reason"],
              "the model's reason names the OOM kill", model["reason"])
        # It was restarted automatically: a new R answers.
        check_eq(ready(ws)["content"]["language_info"]["name"], "R", "restarted")
        check_eq(value_text(run(ws, 'exists("l")')), "[1] FALSE", "a fresh R after the kill")


@callisto_only
def test_memory_bomb_through_the_interpreter_api_says_why():
    with context() as ctx:
        run_code(ctx, "keep <- 1")
        ex = run_code(ctx, "l <- list(); repeat { l[[length(l) + 1]] <- numeric(8e6) }")
        check_eq(ex["status"], "error", "status " + summary(ex))
        check(ex["error"]["name"] in ("KernelRestarted", "KernelDead"), "a stable kind", ex["error"])
        check(f"out of memory (limit {MEMORY_LIMIT})" in ex["error"]["value"],
              "the error names the OOM kill", ex["error"])
        check_eq(ex.get("state_preserved"), False, "it says the state is lost")
        after = run_code(ctx, 'cat(exists("keep"), "\\n")')
        check_eq(after["stdout"], "FALSE \n", "the context runs in a fresh R " + summary(after))


@callisto_only
def test_filling_the_disk_stops_at_the_quota():
    with r_kernel() as k, KernelWS(k["id"]) as ws:
        ready(ws)
        r = r_json(ws, """
con <- file("fill.bin", "wb"); written <- 0
res <- tryCatch({
  while (written < 8e9) { writeBin(raw(1e6), con); flush(con); written <- written + 1e6 }
  "no error"
}, error = function(e) paste("error:", conditionMessage(e)),
   warning = function(w) paste("warning:", conditionMessage(w)))
close(con)
size <- file.size("fill.bin"); unlink("fill.bin")
r <- list(written = written, size = size, res = res, gone = !file.exists("fill.bin"))
""", timeout=120)
        check(r["res"] != "no error", "writing fails at the quota", r)
        check(r["written"] < 8e9, "the quota stopped the writer", r)
        check(r["size"] <= DISK_QUOTA, "the file is no larger than the quota", r)
        check(r["gone"], "the file can be removed", r)
        r = r_json(ws, 'writeLines("small", "after.txt"); r <- readLines("after.txt")')
        check_eq(r, "small", "the workdir is writable again once freed")
    check_eq(api("GET", "/api").status, 200, "the gateway still works")


@callisto_only
def test_gateway_and_a_second_r_session_still_work():
    check_eq(api("GET", "/api").status, 200, "GET /api")
    with r_kernel() as k, KernelWS(k["id"], "v1") as ws:
        ready(ws)
        check_eq(value_text(run(ws, "6 * 7")), "[1] 42", "a fresh R session computes")
    with context() as ctx:
        check_eq(texts(run_code(ctx, "sum(1:10)")), ["[1] 55"], "and one through /v1")


if __name__ == "__main__":
    sys.exit(run_tests())
