#!/usr/bin/python3
"""Output replay: every relayed message carries metadata.callisto_seq; a client that
reconnects with ?since=SEQ gets what it missed, in order, or a notice of the dropped part.
test_gap_notice needs a server started with a small --replay-buffer (e.g. 64KiB).

  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 test_replay.py [-k NAME]
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    KernelWS, api, check, check_eq, kernel, poll, run_tests, test,
)

LINES = 300
CODE = ("import time, sys\n"
        f"for i in range({LINES}):\n"
        "    print(f'line {i:04d}', flush=True)\n"
        "    time.sleep(0.01)\n")


def seq(m):
    return m["metadata"].get("callisto_seq")


def stdout_of(messages, parent):
    return "".join(m["content"]["text"] for m in messages
                   if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == parent
                   and m["content"].get("name") == "stdout")


def wait_idle(kernel_id):
    poll(lambda: api("GET", f"/api/kernels/{kernel_id}").json()["execution_state"] == "idle",
         60, 0.2, "kernel idle")


@test
def test_every_relayed_message_has_a_growing_sequence_number(kernel_ws):
    ws = kernel_ws
    ws.kernel_info()
    ws.run("print('x')")
    seqs = [seq(m) for m in ws.history]
    check(all(isinstance(s, int) for s in seqs), "every message stamped", seqs)
    check(seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "strictly increasing", seqs)


@test
def test_reconnect_mid_output_receives_the_rest_in_order():
    with kernel() as k:
        ws = KernelWS(k["id"])
        ws.kernel_info()
        msg_id = ws.execute(CODE)
        ws.wait_for(lambda m: m["msg_type"] == "stream" and "line 0050" in m["content"].get("text", ""),
                    30, "some output")
        before = [m for m in ws.history if m["channel"] == "iopub"]
        last = max(seq(m) for m in ws.history)
        ws.ws.close()  # the client goes away in the middle of the output
        wait_idle(k["id"])
        with KernelWS(k["id"], extra_query={"since": str(last)}) as ws2:
            ws2.wait_for(lambda m: m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
                         and m["parent_header"].get("msg_id") == msg_id, 30, "replayed idle")
            replayed = [m for m in ws2.history if m["channel"] == "iopub"]
            check(all(not m["metadata"].get("callisto_gap") for m in replayed), "no gap")
            seqs = [seq(m) for m in replayed]
            check(seqs == sorted(seqs) and seqs[0] > last, "replay in order after since", seqs[:5])
            text = stdout_of(before + replayed, msg_id)
            expected = "".join(f"line {i:04d}\n" for i in range(LINES))
            check_eq(text, expected, "whole output across the reconnect")
            check_eq(ws2.run("1+1").result_text(), "2", "the new connection works")


@test
def test_a_reply_whose_client_left_reaches_the_session_when_it_reconnects():
    # As JupyterLab reconnects: the same session_id, ?since= the last sequence number it saw.
    with kernel() as k:
        ws = KernelWS(k["id"])
        ws.kernel_info()
        msg_id = ws.execute("import time\ntime.sleep(2)\n6 * 7")
        ws.wait_for(lambda m: m["msg_type"] == "status" and m["content"]["execution_state"] == "busy"
                    and m["parent_header"].get("msg_id") == msg_id, 30, "busy")
        last = max(seq(m) for m in ws.history)
        session = ws.session
        ws.ws.close()  # gone before the reply
        wait_idle(k["id"])  # the reply arrived while no client of the session was there
        with KernelWS(k["id"], session_id=session, extra_query={"since": str(last)}) as back:
            reply = back.reply_to(msg_id, timeout=30)
            check_eq(reply["content"]["status"], "ok", "the kept execute_reply")
            result = [m for m in back.history if m["msg_type"] == "execute_result"
                      and m["parent_header"].get("msg_id") == msg_id]
            check_eq(result[0]["content"]["data"]["text/plain"], "42", "its result, replayed")
        # Another session does not get it.
        with kernel() as k2:
            other = KernelWS(k2["id"])
            other.kernel_info()
            lost = other.execute("import time\ntime.sleep(1)\n1")
            other.wait_for(lambda m: m["msg_type"] == "status"
                           and m["content"]["execution_state"] == "busy", 30, "busy")
            other.ws.close()
            wait_idle(k2["id"])
            with KernelWS(k2["id"]) as stranger:
                stranger.kernel_info()
                check(not any(m["parent_header"].get("msg_id") == lost
                              and m["msg_type"] == "execute_reply" for m in stranger.history),
                      "a client of another session is not sent the reply")


@test
def test_since_must_be_a_number():
    with kernel() as k:
        try:
            KernelWS(k["id"], extra_query={"since": "abc"})
        except Exception as e:  # noqa: BLE001
            check("400" in str(e), "handshake refused with 400", e)
        else:
            check(False, "since=abc accepted")


@test
def test_gap_notice_when_the_buffer_dropped_output():
    with kernel() as k:
        with KernelWS(k["id"]) as ws:
            ws.kernel_info()
            ex = ws.run("for i in range(2000): print('y' * 200, flush=True)", timeout=60)
            check_eq(ex.status, "ok", "big output ran")
        with KernelWS(k["id"], extra_query={"since": "0"}) as ws2:
            first = ws2.wait_for(lambda m: m["channel"] == "iopub", 30, "first replayed message")
            gap = first["metadata"].get("callisto_gap")
            check(gap and gap["from"] == 1 and gap["to"] >= 1, "gap notice first", first)
            check_eq(first["msg_type"], "stream", "notice is a stream")
            check("dropped" in first["content"]["text"], "notice says so", first["content"])


if __name__ == "__main__":
    sys.exit(run_tests())
