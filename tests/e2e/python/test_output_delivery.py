#!/usr/bin/python3
"""Output a kernel sends while the gateway cannot read it arrives whole, in order, and the
execution still ends. ZeroMQ's PUB socket drops what passes its high-water mark, so a burst
printed faster than the gateway reads (a loaded host) once lost its tail and its idle status.

  CALLISTO_URL=… CALLISTO_TOKEN=… CALLISTO_PID=<gateway pid> /usr/bin/python3 test_output_delivery.py
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import check, check_eq, run_tests, test  # noqa: E402

PID = int(os.environ.get("CALLISTO_PID", "0"))
LINES = 5000


@test
def test_a_burst_sent_while_the_gateway_is_stopped_arrives_whole(kernel_ws):
    check(PID > 0, "CALLISTO_PID names the gateway")
    ws = kernel_ws
    ws.kernel_info()
    # The kernel prints its burst (5x ZeroMQ's default mark) while the gateway is stopped.
    msg_id = ws.execute("import time\ntime.sleep(0.5)\n"
                        f"for i in range({LINES}): print(f'line {{i:05d}}', flush=True)\n")
    # Stopped once the kernel has the request (its busy status came through), during the
    # half-second sleep before the burst.
    ws.wait_for(lambda m: m["msg_type"] == "status" and m["content"].get("execution_state")
                == "busy" and m["parent_header"].get("msg_id") == msg_id, 30, "busy")
    os.kill(PID, signal.SIGSTOP)
    try:
        time.sleep(4)
    finally:
        os.kill(PID, signal.SIGCONT)
    ex = ws.collect(msg_id, 120)
    check_eq(ex.status, "ok", "the execution ended")
    lines = ex.stdout().splitlines()
    check_eq(len(lines), LINES, "every line arrived")
    check(lines == [f"line {i:05d}" for i in range(LINES)], "in order", lines[:3])


if __name__ == "__main__":
    sys.exit(run_tests())
