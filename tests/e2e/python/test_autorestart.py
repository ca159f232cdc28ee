#!/usr/bin/python3
"""Automatic restart after an unexpected death, bounded per window; of a kernel killed in the
middle of a large output, leaving nothing of the old process behind; and of a frozen kernel
(one that answers no heartbeat). The server under test runs with --autorestart-limit=2
--autorestart-window=600 --heartbeat-timeout=2.

  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 test_autorestart.py
"""

import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    KernelWS, alive, api, check, check_eq, kernel, kill_kernel_process, launch_info, poll,
    process_tree, run_tests, test,
)

GATEWAY = int(os.environ.get("CALLISTO_PID", "0"))


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


def kernel_process_pid(top):
    """The Python process itself: below bwrap and its init, or below a zygote fork's pid 1
    (forked, not exec'd: its command line is the zygote's). The one process with none below."""
    leaves = [pid for pid in process_tree(top) if process_tree(pid) == [pid]]
    return leaves[0] if len(leaves) == 1 and leaves[0] != top else None


def gateway_fds():
    return len(os.listdir(f"/proc/{GATEWAY}/fd"))


@test
def test_a_kernel_killed_in_the_middle_of_a_large_output_leaves_nothing_behind():
    check(GATEWAY > 0, "CALLISTO_PID names the gateway")
    with kernel() as k, KernelWS(k["id"]) as ws:
        ws.kernel_info()
        ws.run("1")
        fds_before = gateway_fds()
        old_tree = process_tree(launch_info(k["id"])["pid"])
        victim = kernel_process_pid(old_tree[0])
        check(victim is not None, "the kernel's host pid found", old_tree)
        big = ws.execute("for i in range(10**7): print('z' * 100, i, flush=True)")
        ws.wait_for(lambda m: m["msg_type"] == "stream"
                    and m["parent_header"].get("msg_id") == big, 30, "the output flowing")
        os.kill(victim, signal.SIGKILL)
        reply = ws.reply_to(big, timeout=60)
        check_eq(reply["content"].get("ename"), "KernelDied", "the execution is answered")
        check("killed" in reply["content"].get("evalue", ""), "with the reason", reply["content"])
        status_msg(ws, "restarting")
        poll(lambda: state(k["id"])["execution_state"] == "idle", 60, 0.2, "idle after restart")
        poll(lambda: not any(alive(p) for p in old_tree), 30, 0.2,
             "every process of the killed kernel gone")
        ws.kernel_info()
        check_eq(ws.run_not_aborted("1+1").result_text(), "2", "the restarted kernel works")
        # The old process's pipes and sockets are closed, the new one's opened: as many as before.
        poll(lambda: gateway_fds() <= fds_before, 30, 0.5,
             f"the gateway's descriptors back to {fds_before}")
        new_tree = process_tree(launch_info(k["id"])["pid"])
    # Deleted: the restarted kernel goes the same way.
    poll(lambda: not any(alive(p) for p in new_tree), 30, 0.2, "the kernel's processes gone")


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
