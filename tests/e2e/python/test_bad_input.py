#!/usr/bin/python3
"""Bad input on the kernel WebSocket. Callisto answers every rejected client
frame with an iopub message of msg_type "error" (content.ename
"CallistoProtocolError", a non-empty evalue; parent_header = the client's
header when it could be read) and keeps the connection open; the same
connection then still executes code. Usage:

  CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T /usr/bin/python3 test_bad_input.py [-k NAME]

jupyter_server drops the connection on most of these (or ignores them), so
with CALLISTO_E2E_TARGET=jupyter_server only the tests marked @test run.
"""

import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    KernelWS, callisto_only, check, check_eq, check_header, encode_v1_parts, is_callisto, kernel, make_msg,
    run_tests, test,
)

ERROR_ENAME = "CallistoProtocolError"
OVERSIZED = 40 * 1024 * 1024  # over the default --max-message-size of 32 MiB


def _is_protocol_error(m):
    return m["channel"] == "iopub" and m["msg_type"] == "error" \
        and m["content"].get("ename") == ERROR_ENAME


def _expect_error(ws, parent_msg_id=None, timeout=15):
    m = ws.wait_for(_is_protocol_error, timeout, f"iopub error {ERROR_ENAME}")
    ev = m["content"].get("evalue")
    check(isinstance(ev, str) and ev, "evalue explains", m["content"])
    # @jupyterlab/services validates iopub error content: ename, evalue, traceback.
    check(isinstance(m["content"].get("traceback"), list), "traceback is a list", m["content"])
    check_header(m, "protocol error")
    if parent_msg_id is not None:
        check_eq(m["parent_header"].get("msg_id"), parent_msg_id, "parent_header is the client's")
    return m


def _still_works(ws):
    ex = ws.run("1+1")
    check_eq(ex.status, "ok", "status after bad input")
    check_eq(ex.result_text(), "2", "1+1 on the same connection")


def _case(protocol, send, parent_from=None):
    """Open a connection, send one bad frame via send(ws) -> optional parent
    msg_id, expect the error, then 1+1 on the same connection."""
    with kernel() as k, KernelWS(k["id"], protocol) as ws:
        ws.kernel_info()
        parent = send(ws)
        m = _expect_error(ws, parent)
        print(f"  evalue: {m['content']['evalue'][:120]}")
        _still_works(ws)


def _legacy_dict(msg):
    d = {k: v for k, v in msg.items() if k != "buffers"}
    d["buffers"] = []
    return d


# ---- legacy JSON format ---------------------------------------------------------

@callisto_only
def test_legacy_malformed_json():
    _case("legacy", lambda ws: ws.send_text('{"channel": "shell", "header": {'))


@callisto_only
def test_legacy_json_not_an_object():
    _case("legacy", lambda ws: ws.send_text('[1, 2, 3]'))


@callisto_only
def test_legacy_json_scalar():
    _case("legacy", lambda ws: ws.send_text('"shell"'))


@callisto_only
def test_legacy_unknown_channel():
    def send(ws):
        m = ws.msg("kernel_info_request", {}, channel="no_such_channel")
        ws.send_text(json.dumps(_legacy_dict(m)))
        return m["header"]["msg_id"]
    _case("legacy", send)


@callisto_only
def test_legacy_missing_header():
    def send(ws):
        m = _legacy_dict(ws.msg("kernel_info_request", {}))
        del m["header"]
        ws.send_text(json.dumps(m))
    _case("legacy", send)


@callisto_only
def test_legacy_header_not_an_object():
    def send(ws):
        m = _legacy_dict(ws.msg("kernel_info_request", {}))
        m["header"] = "kernel_info_request"
        ws.send_text(json.dumps(m))
    _case("legacy", send)


@callisto_only
def test_legacy_missing_msg_id():
    def send(ws):
        m = _legacy_dict(ws.msg("kernel_info_request", {}))
        del m["header"]["msg_id"]
        m.pop("msg_id", None)
        ws.send_text(json.dumps(m))
    _case("legacy", send)


@callisto_only
def test_legacy_missing_msg_type():
    def send(ws):
        m = _legacy_dict(ws.msg("kernel_info_request", {}))
        del m["header"]["msg_type"]
        m.pop("msg_type", None)
        ws.send_text(json.dumps(m))
        return m["header"]["msg_id"]
    _case("legacy", send)


@callisto_only
def test_legacy_binary_garbage():
    # A legacy binary frame claims 2**31 buffers in a 12-byte frame.
    _case("legacy", lambda ws: ws.send_binary(struct.pack("!III", 0x7FFFFFFF, 8, 12)))


@callisto_only
def test_legacy_oversized_frame():
    def send(ws):
        m = _legacy_dict(ws.msg("execute_request", {
            "code": "x = '" + "a" * OVERSIZED + "'", "silent": False, "store_history": False,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}))
        ws.send_text(json.dumps(m))
    _case("legacy", send)


# ---- v1 subprotocol -------------------------------------------------------------

@callisto_only
def test_v1_binary_garbage():
    _case("v1", lambda ws: ws.send_binary(bytes(range(256)) * 3))


@callisto_only
def test_v1_short_frame():
    _case("v1", lambda ws: ws.send_binary(b"\x01\x02\x03"))


@callisto_only
def test_v1_huge_offset_count():
    _case("v1", lambda ws: ws.send_binary(struct.pack("<QQ", 2**64 - 1, 16) + b"shell"))


@callisto_only
def test_v1_offsets_out_of_range():
    def send(ws):
        good = bytearray(encode_v1_parts("shell", [b"{}", b"{}", b"{}", b"{}"]))
        struct.pack_into("<Q", good, 8 * 3, 10**9)  # end of channel far past the frame
        ws.send_binary(bytes(good))
    _case("v1", send)


@callisto_only
def test_v1_too_few_parts():
    def send(ws):
        m = ws.msg("kernel_info_request", {})
        ws.send_binary(encode_v1_parts("shell", [json.dumps(m["header"]).encode(), b"{}"]))
    _case("v1", send)


@callisto_only
def test_v1_header_not_json():
    _case("v1", lambda ws: ws.send_binary(
        encode_v1_parts("shell", [b"{not json", b"{}", b"{}", b"{}"])))


@callisto_only
def test_v1_unknown_channel():
    def send(ws):
        m = ws.msg("kernel_info_request", {})
        ws.send_binary(encode_v1_parts("nope", [json.dumps(m[k]).encode() for k in
                                                ("header", "parent_header", "metadata", "content")]))
        return m["header"]["msg_id"]
    _case("v1", send)


@callisto_only
def test_v1_missing_msg_type():
    def send(ws):
        m = ws.msg("kernel_info_request", {})
        del m["header"]["msg_type"]
        ws.send_binary(encode_v1_parts("shell", [json.dumps(m[k]).encode() for k in
                                                 ("header", "parent_header", "metadata", "content")]))
        return m["header"]["msg_id"]
    _case("v1", send)


@callisto_only
def test_v1_oversized_frame():
    def send(ws):
        m = ws.msg("execute_request", {"code": "pass", "silent": False, "store_history": False,
                                       "user_expressions": {}, "allow_stdin": False,
                                       "stop_on_error": True})
        parts = [json.dumps(m[k]).encode() for k in ("header", "parent_header", "metadata", "content")]
        ws.send_binary(encode_v1_parts("shell", parts + [b"\0" * OVERSIZED]))
    _case("v1", send)


@callisto_only
def test_error_goes_only_to_the_offending_connection():
    with kernel() as k, KernelWS(k["id"]) as bad, KernelWS(k["id"], "v1") as bystander:
        bad.kernel_info()
        bystander.kernel_info()
        bad.send_text("{oops")
        _expect_error(bad)
        got = bystander.drain(1.0)
        check(not [m for m in got if _is_protocol_error(m)], "bystander sees no protocol error")
        _still_works(bystander)
        _still_works(bad)


@callisto_only
def test_many_bad_frames_then_work(kernel_ws):
    ws = kernel_ws
    ws.kernel_info()
    for i in range(50):
        ws.send_text("{bad %d" % i)
    n = 0
    deadline = time.monotonic() + 20
    while n < 50 and time.monotonic() < deadline:
        _expect_error(ws, timeout=max(0.1, deadline - time.monotonic()))
        n += 1
    check_eq(n, 50, "one error per bad frame")
    _still_works(ws)


# ---- on every target ---------------------------------------------------------------

@test
def test_unknown_channel_keeps_connection(kernel_ws):
    # jupyter_server ignores the frame; Callisto answers with an error; both keep going.
    ws = kernel_ws
    ws.kernel_info()
    m = ws.msg("kernel_info_request", {}, channel="no_such_channel")
    ws.send_text(json.dumps(_legacy_dict(m)))
    if is_callisto():
        _expect_error(ws, m["header"]["msg_id"])
    _still_works(ws)


@test
def test_large_message_under_limit():
    # 4 MiB of code in both formats: well under the 32 MiB default limit.
    size = 4 * 1024 * 1024
    with kernel() as k:
        for protocol in ("legacy", "v1"):
            with KernelWS(k["id"], protocol) as ws:
                ws.kernel_info()
                ex = ws.run("s = '" + "b" * size + "'\nlen(s)", timeout=60)
                check_eq(ex.status, "ok", f"{protocol} status")
                check_eq(ex.result_text(), str(size), f"{protocol} result")


@test
def test_large_output_arrives_whole():
    size = 8 * 1024 * 1024
    with kernel() as k:
        for protocol in ("legacy", "v1"):
            with KernelWS(k["id"], protocol) as ws:
                ws.kernel_info()
                ex = ws.run(f"'c' * {size}", timeout=60)
                check_eq(len(ex.result_text() or ""), size + 2, f"{protocol} result size (quoted)")


@test
def test_binary_buffers_round_trip_v1():
    # comm_msg with a buffer in v1: the kernel sees the buffer (no comm target: the
    # kernel just logs), and the connection keeps working.
    with kernel() as k, KernelWS(k["id"], "v1") as ws:
        ws.kernel_info()
        m = make_msg("comm_open", {"comm_id": "e2e", "target_name": "no-such-target", "data": {}},
                     session=ws.session, buffers=[b"\x00\x01\x02"])
        ws.send(m)
        _still_works(ws)


if __name__ == "__main__":
    sys.exit(run_tests())
