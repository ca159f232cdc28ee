#!/usr/bin/python3
"""Automatic restart after an unexpected death, bounded per window. The server under test
runs with --autorestart-limit=2 --autorestart-window=600.

  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 test_autorestart.py
"""

import os
import sys

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


if __name__ == "__main__":
    sys.exit(run_tests())
