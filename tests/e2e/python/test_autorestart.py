#!/usr/bin/python3
"""Automatic restart after an unexpected death, bounded per window, and of a frozen kernel
(one that answers no heartbeat). The server under test runs with --autorestart-limit=2
--autorestart-window=600 --heartbeat-timeout=2.

  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 test_autorestart.py
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    KernelWS, api, check, check_eq, kernel, kill_kernel_process, poll, run_tests, test,
)


def state(kernel_id):
    return api("GET", f"/api/kernels/{kernel_id}").json()


def status_msg(ws, wanted):
    return ws.wait_for(lambda m: m["channel"] == "iopub" and m["msg_type"] == "status"
                       and m["content"].get("execution_state") == wanted, 30, f"status {wanted}")


@test
def test_restarts_twice_then_stays_dead():
    with kernel() as k, KernelWS(k["id"]) as ws:
        ws.kernel_info()
        for attempt in (1, 2):
            ws.run("survivor = 1")
            kill_kernel_process(ws)
            restarting = status_msg(ws, "restarting")
            check_eq(restarting["parent_header"], {}, "server-made status")
            notice = ws.wait_for(lambda m: m["msg_type"] == "stream"
                                 and "restarting it" in m["content"].get("text", ""), 30, "notice")
            check("Kernel died" in notice["content"]["text"], "the notice says why", notice["content"])
            poll(lambda: state(k["id"])["execution_state"] == "idle", 60, 0.2,
                 f"idle after automatic restart {attempt}")
            ws.kernel_info()
            ex = ws.run("survivor")
            check_eq(ex.status, "error", "state was lost in the restart")
            check_eq(ws.run_not_aborted("1+1").result_text(), "2", "the restarted kernel works")
        kill_kernel_process(ws)
        status_msg(ws, "dead")
        m = poll(lambda: (lambda s: s if s["execution_state"] == "dead" else None)(state(k["id"])),
                 30, 0.2, "dead after the limit")
        check("killed" in m.get("reason", "") or "exited" in m.get("reason", ""), "reason", m)


def unresponsive_deaths():
    text = api("GET", "/metrics").body.decode()
    m = re.search(r'^callisto_kernel_deaths_total\{cause="unresponsive"\} (\d+)', text, re.M)
    return int(m.group(1)) if m else None


@test
def test_a_frozen_kernel_is_killed_and_restarted_with_the_reason():
    before = unresponsive_deaths()
    check(before is not None, "the metric exists before any death")
    with kernel() as k, KernelWS(k["id"]) as ws:
        ws.kernel_info()
        check_eq(ws.run("import os; os.getpid() != 1").result_text(), "True",
                 "the kernel is not its namespace's init (which could not stop itself)")
        ws.run("survivor = 1")
        started = time.monotonic()
        # SIGSTOP freezes every thread, the heartbeat's too: the process is alive and silent.
        frozen = ws.execute("import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)")
        reply = ws.reply_to(frozen, timeout=60)
        check_eq(reply["content"]["status"], "error", "the frozen execution is reported as ended")
        check_eq(reply["content"].get("ename"), "KernelDied", "named")
        check("unresponsive" in reply["content"].get("evalue", ""), "with the reason", reply["content"])
        check_eq(reply["parent_header"].get("msg_id"), frozen, "the reply answers the request")
        restarting = status_msg(ws, "restarting")
        took = time.monotonic() - started
        notice = ws.wait_for(lambda m: m["msg_type"] == "stream"
                             and "restarting it" in m["content"].get("text", ""), 30, "notice")
        check("unresponsive" in notice["content"]["text"], "the notice says why", notice["content"])
        check(took < 30, f"noticed within the timeout plus the heartbeat's own ({took:.1f} s)")
        poll(lambda: state(k["id"])["execution_state"] == "idle", 60, 0.2, "idle after restart")
        ws.kernel_info()
        check_eq(ws.run("survivor").status, "error", "a fresh process: the state is gone")
        check_eq(ws.run_not_aborted("1+1").result_text(), "2", "the restarted kernel works")
        check_eq(unresponsive_deaths(), before + 1, "counted as unresponsive")
        check_eq(restarting["parent_header"], {}, "server-made status")


if __name__ == "__main__":
    sys.exit(run_tests())
