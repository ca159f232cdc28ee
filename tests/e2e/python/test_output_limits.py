#!/usr/bin/python3
"""Output caps on the Jupyter WebSocket path: a runaway cell cannot flood the clients. Needs a
server started with --ws-output-limit=1MiB --ws-rich-output-limit=2MiB (the e2e runner does).

  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 test_output_limits.py [-k NAME]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    Execution, KernelWS, callisto_only, check, check_eq, check_header, kernel, run_code, run_tests,
)

STREAM_LIMIT = 1 << 20
RICH_LIMIT = 2 << 20
RUNAWAY = ("for i in range(500_000):\n"
           "    print('%06d' % i + 'x' * 93)\n")  # 100 bytes a line, 50 MB in all
BIG_TIMEOUT = 240


def is_notice(m):
    return (m["msg_type"] == "stream" and m["content"].get("name") == "stderr"
            and "callisto_output_limit" in m["metadata"])


def notices(ex):
    return [m for m in ex.iopub if is_notice(m) and "kind" in m["metadata"]["callisto_output_limit"]]


def summaries(ex):
    return [m for m in ex.iopub if is_notice(m) and "dropped" in m["metadata"]["callisto_output_limit"]]


def stdout_bytes(ex):
    return len(ex.stdout().encode())


def check_capped_runaway(ex, who):
    check_eq(ex.status, "ok", f"{who}: the cell itself succeeded")
    shown = stdout_bytes(ex)
    check(STREAM_LIMIT // 2 < shown <= STREAM_LIMIT, f"{who}: stdout shown is about the limit", shown)
    out = ex.stdout()
    check(out.startswith("000000xxx"), f"{who}: the head of the output is shown", out[:20])
    check("\n" in out, f"{who}: whole lines", out[:200])
    n = notices(ex)
    check_eq(len(n), 1, f"{who}: exactly one limit notice")
    check("output limit reached" in n[0]["content"]["text"], f"{who}: notice text", n[0]["content"])
    check_eq(n[0]["metadata"]["callisto_output_limit"]["kind"], "stream", f"{who}: notice kind")
    check_eq(n[0]["metadata"]["callisto_output_limit"]["limit"], STREAM_LIMIT, f"{who}: notice limit")
    check_header(n[0], f"{who}: notice")
    s = summaries(ex)
    check_eq(len(s), 1, f"{who}: exactly one summary")
    dropped = s[0]["metadata"]["callisto_output_limit"]["dropped"]["stream"]
    check(dropped["bytes"] > 40_000_000, f"{who}: most of the 50 MB was dropped", dropped)
    check(str(dropped["bytes"]) in s[0]["content"]["text"], f"{who}: summary says how much",
          s[0]["content"]["text"])
    # Order: stdout, then the notice, (no stdout after it), the summary, then idle.
    kinds = [("notice" if is_notice(m) and m is n[0] else "summary" if m is s[0]
              else "stdout" if m["msg_type"] == "stream" and m["content"].get("name") == "stdout"
              else m["msg_type"] if m["msg_type"] != "status" else m["content"]["execution_state"])
             for m in ex.iopub]
    i_notice, i_summary, i_idle = kinds.index("notice"), kinds.index("summary"), kinds.index("idle")
    check("stdout" not in kinds[i_notice:], f"{who}: nothing of stdout after the notice", kinds[-8:])
    check(i_notice < i_summary < i_idle and i_idle == len(kinds) - 1,
          f"{who}: notice, summary, then idle last", kinds[-8:])
    for m in (n[0], s[0]):
        check_eq(m["parent_header"].get("msg_id"), ex.msg_id, f"{who}: notices address the cell")


@callisto_only
def test_a_runaway_print_loop_is_capped_for_every_client_and_the_kernel_keeps_working():
    with kernel() as k, KernelWS(k["id"]) as legacy, KernelWS(k["id"], protocol="v1") as v1:
        legacy.kernel_info()
        v1.kernel_info()
        msg_id = legacy.execute(RUNAWAY)
        ex = legacy.collect(msg_id, BIG_TIMEOUT)
        check_capped_runaway(ex, "legacy client")
        # The other client (other format) saw the same cut: decided once per kernel.
        # (iopub only: the execute_reply goes to the client that asked.)
        ex_v1 = Execution(msg_id)
        while not ex_v1.idle:
            ex_v1.add(v1.wait_for(lambda m: m["parent_header"].get("msg_id") == msg_id,
                                  BIG_TIMEOUT, "v1 client's idle"))
        ex_v1.reply = ex.reply
        check_capped_runaway(ex_v1, "v1 client")
        check_eq(ex_v1.stdout(), ex.stdout(), "both clients saw the same output")

        # The connection and the kernel keep working; the next cell prints normally.
        after = legacy.run("print('still here'); 6 * 7")
        check_eq(after.stdout(), "still here\n", "next cell's output")
        check_eq(after.result_text(), "42", "next cell's result")
        check(not notices(after) and not summaries(after), "no notice for a small cell", after.iopub)

        # A client attaching later replays the capped stream, not the 50 MB.
        with KernelWS(k["id"], extra_query={"since": "0"}) as late:
            replayed = late.drain(3)
            mine = [m for m in replayed if m["parent_header"].get("msg_id") == msg_id]
            text = "".join(m["content"]["text"] for m in mine
                           if m["msg_type"] == "stream" and m["content"].get("name") == "stdout")
            check(0 < len(text.encode()) <= STREAM_LIMIT, "replay holds the capped stream",
                  len(text))
            check(any(is_notice(m) for m in mine), "replay holds the notice")


@callisto_only
def test_rich_output_is_capped_but_clear_output_error_and_reply_always_arrive(kernel_ws):
    code = ("from IPython.display import display, HTML, clear_output\n"
            "for i in range(60):\n"
            "    display(HTML('<p>%d</p>' % i + 'y' * 100_000))\n"
            "print('after the displays')\n"
            "clear_output()\n"
            "raise ValueError('boom')\n")
    ws = kernel_ws
    ws.kernel_info()
    ex = ws.run(code, timeout=BIG_TIMEOUT)
    shown = ex.of_type("display_data")
    size = sum(len(m["content"]["data"]["text/html"]) for m in shown)
    check(0 < size <= RICH_LIMIT, "rich output shown is within the limit", size, len(shown))
    check(len(shown) < 60, "some displays were dropped", len(shown))
    n = notices(ex)
    check_eq(len(n), 1, "one rich notice")
    check_eq(n[0]["metadata"]["callisto_output_limit"]["kind"], "rich", "notice kind")
    check_eq(ex.stdout(), "after the displays\n", "stream output has its own budget")
    check_eq(len(ex.of_type("clear_output")), 1, "clear_output is never dropped")
    errors = ex.of_type("error")
    check_eq(len(errors), 1, "the error is never dropped")
    check_eq(errors[0]["content"]["ename"], "ValueError", "error name")
    check_eq(ex.status, "error", "execute_reply arrives")
    dropped = summaries(ex)[0]["metadata"]["callisto_output_limit"]["dropped"]
    check_eq(dropped["rich"]["messages"], 60 - len(shown), "summary counts the dropped displays")
    check("stream" not in dropped, "no stream output was dropped", dropped)


@callisto_only
def test_each_cell_gets_its_own_budget(kernel_ws):
    ws = kernel_ws
    ws.kernel_info()
    # 700 KB twice: each cell is under the 1 MiB limit although together they are over.
    for _ in range(2):
        ex = ws.run("print('z' * 700_000)")
        check_eq(stdout_bytes(ex), 700_001, "whole output")
        check(not notices(ex), "no notice", [m["msg_type"] for m in ex.iopub])


@callisto_only
def test_the_interpreter_api_still_sees_all_output_of_a_capped_kernel(context):
    code = "import sys\nsys.stdout.write('HEAD' + 'x' * (3 * 1024 * 1024) + 'TAIL')"
    out = run_code(context, code)["stdout"]
    check(out.startswith("HEAD") and out.endswith("TAIL"),
          "head and tail from the interpreter's own budget", out[:10], out[-10:])
    check("[callisto] output limit" not in out, "no WebSocket notice in /v1 output")


if __name__ == "__main__":
    sys.exit(run_tests())
