#!/usr/bin/python3
"""One request, one client or one kernel must never take the gateway down or grow its memory
without bound: deep JSON, bodies sent without a token, floods of connections, a kernel
re-sending huge messages, a client sending faster than its kernel reads.

  CALLISTO_URL=... CALLISTO_TOKEN=... CALLISTO_PID=<gateway pid> \\
      /usr/bin/python3 test_hardening.py [-k NAME]

The cases expect the server flags of the TEST_CASE that runs them (tests/e2e/e2e_tests.cpp).
"""

import hashlib
import json
import os
import signal
import socket
import struct
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    BASE_URL, TOKEN, UNDER_TSAN, KernelWS, api, callisto_only, check, check_eq,
    check_memory_bound, encode_v1, encode_v1_parts, get_kernel, kernel, make_msg, poll,
    process_tree, run_tests,
)
from mcp_client import Session  # noqa: E402

HOST = urllib.parse.urlsplit(BASE_URL).hostname
PORT = urllib.parse.urlsplit(BASE_URL).port
PID = int(os.environ.get("CALLISTO_PID", "0"))
DEEP = "[" * 100_000 + "]" * 100_000
MiB = 1 << 20


def status_kib(field):
    """VmRSS or VmHWM of the gateway, in KiB."""
    with open(f"/proc/{PID}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{PID}/status")


def still_serving():
    r = api("GET", "/api/kernelspecs")
    check_eq(r.status, 200, "the server still serves")


def connect(source=None, timeout=15):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if source:
        s.bind((source, 0))
    s.connect((HOST, PORT))
    return s


def read_answer(s, limit=1 << 16):
    """Everything the server answers before it closes (or the timeout)."""
    chunks = []
    while sum(map(len, chunks)) < limit:
        try:
            b = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks)


def status_of(answer):
    return int(answer[9:12]) if answer.startswith(b"HTTP/1.1 ") else None


def body_of(answer):
    return json.loads(answer.split(b"\r\n\r\n", 1)[1])


def new_context():
    r = api("POST", "/v1/contexts", {})
    check_eq(r.status, 201, "create context")
    return r.json()


def delete_context(ctx):
    api("DELETE", "/v1/contexts/" + ctx["id"])


def run(ctx, code, timeout=300):
    r = api("POST", f"/v1/contexts/{ctx['id']}/executions", {"code": code}, timeout=timeout)
    check_eq(r.status, 200, f"execution status: {r.body[:300]!r}")
    return r.json()


# --------------------------------------------------------------------------
# 1. Deeply nested JSON
# --------------------------------------------------------------------------

@callisto_only
def test_mcp_tool_arguments_nested_100k_deep_are_a_parse_error():
    mcp = Session(TOKEN)
    body = ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_code",'
            '"arguments":{"code":' + DEEP + '}}}')
    r = api("POST", "/mcp", body, auth=None,
            headers={"Authorization": f"Bearer {TOKEN}", "Mcp-Session-Id": mcp.id,
                     "MCP-Protocol-Version": "2025-06-18",
                     "Accept": "application/json, text/event-stream"})
    check(r.status in (200, 400), "an answer, not a dropped connection", r)
    answer = r.json()
    check_eq(answer["error"]["code"], -32700, "JSON-RPC parse error")
    check("nested deeper than 1000 levels" in answer["error"]["message"], "says why", answer)
    still_serving()
    mcp.end()


@callisto_only
def test_websocket_frames_nested_100k_deep_get_protocol_errors():
    with kernel() as k:
        # Legacy text frame with deep content.
        with KernelWS(k["id"], "legacy") as ws:
            ws.kernel_info()
            m = make_msg("execute_request", {}, session=ws.session)
            text = json.dumps(m).replace('"content": {}', '"content": {"x": ' + DEEP + '}')
            check(DEEP in text, "the deep content is in the frame")
            ws.send_text(text)
            err = ws.wait_for(lambda x: x["msg_type"] == "error" and x["channel"] == "iopub"
                              and x["content"].get("ename") == "CallistoProtocolError", 15,
                              "protocol error")
            check("nested deeper" in err["content"]["evalue"], "says why", err["content"])
            check_eq(ws.run("1+1").result_text(), "2", "the connection still works")
        # v1 frame with a deep header.
        with KernelWS(k["id"], "v1") as ws:
            ws.kernel_info()
            header = '{"msg_id":"m","msg_type":"execute_request","x":' + DEEP + '}'
            ws.send_binary(encode_v1_parts("shell", [header.encode(), b"{}", b"{}", b"{}"]))
            err = ws.wait_for(lambda x: x["msg_type"] == "error" and x["channel"] == "iopub"
                              and x["content"].get("ename") == "CallistoProtocolError", 15,
                              "protocol error")
            check("nested deeper" in err["content"]["evalue"], "says why", err["content"])
            check_eq(ws.run("2+2").result_text(), "4", "the connection still works")
    still_serving()


@callisto_only
def test_rest_bodies_nested_100k_deep_are_400():
    for path in ("/api/kernels", "/v1/contexts", "/v1/executions"):
        r = api("POST", path, '{"name":' + DEEP + '}')
        check_eq(r.status, 400, f"POST {path}")
        check("nested deeper than 1000 levels" in r.json()["message"], "says why", r)
    still_serving()


# --------------------------------------------------------------------------
# 2. Bodies sent without a token
# --------------------------------------------------------------------------

def unauthenticated_put(extra_headers=b"", source=None, timeout=15):
    s = connect(source, timeout)
    s.sendall(b"PUT /v1/contexts/whatever/files/x.bin HTTP/1.1\r\nHost: x\r\n"
              b"Content-Length: 104857600\r\n" + extra_headers + b"\r\n")
    return s


@callisto_only
def test_a_body_without_a_token_is_refused_before_it_is_read():
    # With Expect: 100-continue the client waits: it must get the refusal, never a go-ahead.
    s = unauthenticated_put(b"Expect: 100-continue\r\n")
    answer = read_answer(s)
    s.close()
    check(b"100 Continue" not in answer, "no go-ahead for an unauthenticated body", answer[:200])
    check_eq(status_of(answer), 401, f"refused: {answer[:200]!r}")
    check("token" in body_of(answer)["message"], "says why", answer)
    check(b"Connection: close" in answer, "the connection closes", answer[:300])

    # Without it, the client pushes the body; the refusal still comes, and it reads it.
    s = unauthenticated_put()
    s.sendall(b"x" * MiB)
    answer = read_answer(s)
    s.close()
    check_eq(status_of(answer), 401, f"refused while sending: {answer[:200]!r}")

    # MCP answers 401 with its challenge, before reading the body too.
    s = connect()
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 10000000\r\nExpect: 100-continue\r\n\r\n")
    answer = read_answer(s)
    s.close()
    check_eq(status_of(answer), 401, f"MCP refused: {answer[:200]!r}")

    # A request without a body, refused the same way, keeps the client's Connection choice.
    s = connect()
    s.sendall(b"GET /api/kernels HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    answer = read_answer(s)
    s.close()
    check_eq(status_of(answer), 401, f"GET refused: {answer[:200]!r}")
    check(b"Connection: close" in answer, "closes as the client asked", answer[:300])
    still_serving()


@callisto_only
def test_unauthenticated_uploads_do_not_grow_the_gateway():
    before = status_kib("VmRSS")
    socks = [unauthenticated_put(timeout=2) for _ in range(8)]
    sent = 0
    for _ in range(10):
        for s in socks:
            try:
                s.sendall(b"y" * MiB)
                sent += MiB
            except OSError:
                pass
    after = status_kib("VmRSS")
    for s in socks:
        s.close()
    print(f"  {sent >> 20} MiB sent without a token; RSS {before} -> {after} KiB")
    check_memory_bound(after - before < 32 * 1024, f"RSS grew by {after - before} KiB")
    still_serving()


@callisto_only
def test_bodies_in_flight_are_capped_and_the_refusal_says_retry():
    # The server runs with --max-body-in-flight=8MiB: one 6 MiB upload held open leaves no
    # room for a second; the second is refused 503 with Retry-After at once, and once the first
    # is done the next one goes through.
    ctx = new_context()
    try:
        path = f"/v1/contexts/{ctx['id']}/files/big.bin"
        first = connect()
        first.sendall(f"PUT {path} HTTP/1.1\r\nHost: x\r\nAuthorization: token {TOKEN}\r\n"
                      f"Content-Length: {6 * MiB}\r\n\r\n".encode() + b"a" * MiB)
        time.sleep(0.5)
        r = api("PUT", f"/v1/contexts/{ctx['id']}/files/second.bin", b"b" * (3 * MiB))
        check_eq(r.status, 503, f"second upload refused: {r.body[:200]!r}")
        check_eq(r.headers.get("retry-after"), "1", "Retry-After")
        check("--max-body-in-flight" in r.json()["message"], "says why", r)
        first.sendall(b"a" * (5 * MiB))
        answer = read_answer(first)
        first.close()
        check_eq(status_of(answer), 201, f"first upload done: {answer[:200]!r}")
        r = api("PUT", f"/v1/contexts/{ctx['id']}/files/second.bin", b"b" * (3 * MiB))
        check(r.status in (200, 201), f"second upload after the first: {r.status} {r.body[:200]!r}")
    finally:
        delete_context(ctx)


@callisto_only
def test_a_multipart_upload_costs_the_gateway_about_its_body():
    # The form parser was fed the whole body at once and copied it, then copied each file's
    # bytes out of its copy: 3 times the body (119 MiB for a 40 MiB form), 2 beyond what
    # --max-body-in-flight counts. Its files are now views of the body. (Run by a server with
    # the default --max-body-in-flight and --upload-limit.)
    ctx = new_context()
    try:
        boundary = "callisto-hardening-form"
        size = 40 * MiB
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                f"filename=\"big.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                ).encode() + os.urandom(MiB) * (size // MiB) + f"\r\n--{boundary}--\r\n".encode()
        # The peak from here on (clear_refs 5 resets VmHWM to the current RSS).
        with open(f"/proc/{PID}/clear_refs", "w") as f:
            f.write("5")
        before = status_kib("VmRSS")
        r = api("POST", f"/v1/contexts/{ctx['id']}/files", body, timeout=300,
                headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        check_eq(r.status, 201, f"uploaded: {r.body[:200]!r}")
        check_eq(r.json()["files"], [{"path": "big.bin", "size": size}], "the file")
        growth = status_kib("VmHWM") - before
        print(f"  a {size >> 20} MiB form: peak RSS {before >> 10} -> +{growth >> 10} MiB")
        check_memory_bound(growth < 60 * 1024, f"peak RSS grew by {growth >> 10} MiB, the body "
                           f"being {size >> 20} MiB")
        out = run(ctx, "import hashlib; print(hashlib.sha256(open('big.bin','rb').read())"
                       ".hexdigest())")
        check_eq(out["stdout"].strip(), hashlib.sha256(body[body.index(b"\r\n\r\n") + 4:
                                                              -len(boundary) - 8]).hexdigest(),
                 "the file holds the part's bytes")
    finally:
        delete_context(ctx)


# --------------------------------------------------------------------------
# 4. Connections
# --------------------------------------------------------------------------

@callisto_only
def test_the_open_files_limit_is_raised_to_the_hard_limit():
    with open(f"/proc/{PID}/limits") as f:
        line = next(line for line in f if line.startswith("Max open files"))
    soft, hard = line.split()[3:5]
    check_eq(soft, hard, f"soft limit raised: {line.strip()}")


@callisto_only
def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout():
    # The server runs with --header-timeout=2.
    s = connect(timeout=20)
    start = time.monotonic()
    answer = read_answer(s)
    took = time.monotonic() - start
    s.close()
    check_eq(answer, b"", "closed without an answer")
    check(took < 15, f"closed after {took:.1f} s")


def open_many(sources):
    """Opens one connection from each source address; returns (held, refusal answers): a
    refused connection is answered at once, a held one waits for its request."""
    socks = [connect(src) for src in sources]
    time.sleep(1)
    held, answers = [], []
    for s in socks:
        s.setblocking(False)
        try:
            answer = s.recv(4096)
        except BlockingIOError:
            held.append(s)
            continue
        answers.append(answer)
        s.close()
    return held, answers


@callisto_only
def test_one_address_cannot_take_every_connection():
    # The server runs with --max-connections-per-address=40; 127.0.0.2 plays another client.
    held, answers = open_many(["127.0.0.2"] * 60)
    try:
        check_eq(len(held), 40, "connections held from one address")
        check_eq(len(answers), 20, "connections refused")
        for answer in answers:
            check_eq(status_of(answer), 429, f"refused with 429: {answer[:120]!r}")
            check(b"--max-connections-per-address" in answer, "says why", answer)
        start = time.monotonic()
        still_serving()  # from 127.0.0.1
        check(time.monotonic() - start < 5, "other clients are served at once")
    finally:
        for s in held:
            s.close()


@callisto_only
def test_past_the_connection_cap_clients_are_refused_at_once_and_served_after():
    # The server runs with an open files limit of 256 (prlimit), so --max-connections is 128.
    held, answers = open_many([f"127.0.1.{1 + i % 200}" for i in range(160)])
    try:
        check_eq(len(held), 128, "connections held")
        check_eq(len(answers), 32, "connections refused")
        for answer in answers:
            check_eq(status_of(answer), 503, f"refused with 503: {answer[:120]!r}")
            check(b"--max-connections" in answer, "says why", answer)
    finally:
        for s in held:
            s.close()
    poll(lambda: api("GET", "/api").status == 200, 10, what="served once they are gone")


# --------------------------------------------------------------------------
# 3 and 8. A kernel that floods; a client that sends faster than its kernel reads
# --------------------------------------------------------------------------

# Under ThreadSanitizer the gateway checks every byte it copies: 6 GB would take past the test's
# time limit (14 s in a plain build, over 180 s under TSan), and 600 MB exercise the same paths.
FLOOD_TIMES = 30 if UNDER_TSAN else 300
FLOOD = """
k = get_ipython().kernel
content = {"data": {"text/plain": "x" * (20 << 20)}, "metadata": {}}
msg = k.session.msg("display_data", content, parent=k.get_parent("shell"))
frames = k.session.serialize(msg)
for _ in range(%d):
    k.iopub_socket.send_multipart(frames, copy=False)
print("sent")
""" % FLOOD_TIMES


@callisto_only
def test_a_kernel_resending_a_20_mib_message_300_times_cannot_grow_the_gateway():
    # copy=False: the kernel sends the same bytes 300 times without copying them, so it stays
    # within its own memory limit while pushing 6 GB at the gateway.
    peak_before = status_kib("VmHWM")
    ctx = new_context()
    try:
        r = run(ctx, FLOOD)
        peak = status_kib("VmHWM")
        print(f"  peak RSS {peak_before} -> {peak} KiB; status {r['status']}")
        check_memory_bound(peak - peak_before < 700 * 1024,
                           f"peak grew by {(peak - peak_before) >> 10} MiB")
        check("dropped: the kernel sent output faster" in r["stderr"],
              "the execution says output was dropped", r["stderr"][:500])
        check_eq(run(ctx, "print(6*7)")["stdout"], "42\n", "the context still works")
    finally:
        delete_context(ctx)
    # And over the Jupyter WebSocket, with a client that reads.
    with kernel() as k, KernelWS(k["id"], "v1") as ws:
        ws.kernel_info()
        ex = ws.run(FLOOD, timeout=300)
        check_eq(ex.status, "ok", "status")
        peak = status_kib("VmHWM")
        check_memory_bound(peak - peak_before < 700 * 1024,
                           f"peak grew by {(peak - peak_before) >> 10} MiB")
    # What the flood used is given back (malloc_trim every 10 s).
    if not UNDER_TSAN:
        poll(lambda: status_kib("VmRSS") - peak_before < 200 * 1024, 40, interval=2,
             what="RSS back near where it was")
    still_serving()


def kernel_host_pids(kernel_id):
    """The host pids of a kernel's processes: its model's top process (bwrap, or the jail's
    pid 1 of a zygote's fork) and every descendant, the ipykernel among them."""
    top = (get_kernel(kernel_id).get("callisto") or {}).get("pid")
    return process_tree(top) if top else []


def masked_binary_frame(payload):
    """A client WebSocket frame with an all-zero mask (valid, and no Python XOR pass)."""
    n = len(payload)
    head = bytes([0x82]) + (bytes([0xFF]) + struct.pack(">Q", n) if n > 0xFFFF
                            else bytes([0xFE]) + struct.pack(">H", n) if n > 125
                            else bytes([0x80 | n]))
    return head + b"\0\0\0\0" + payload


# The kernel is stopped (SIGSTOP), so nothing it is sent leaves the gateway: 40 messages of 16 MiB
# are more than the --client-input-queue of 64 MiB and ZeroMQ's 8 queued messages. Under TSan the
# gateway parses JSON at a few MB/s, so there 100 messages of 1 MiB (92 MiB read to refuse 20).
CLIENT_FLOOD_COUNT, CLIENT_FLOOD_BYTES = (100, MiB) if UNDER_TSAN else (40, 16 * MiB)


@callisto_only
def test_a_client_sending_faster_than_its_stopped_kernel_reads_is_refused():
    with kernel() as k, KernelWS(k["id"], "v1") as ws:
        ws.kernel_info()
        pids = kernel_host_pids(k["id"])
        check(pids, "found the kernel's processes")
        rss_before = status_kib("VmRSS")
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            msg = ws.msg("execute_request", {"code": "#" + "z" * CLIENT_FLOOD_BYTES, "silent": False,
                                             "store_history": False, "user_expressions": {},
                                             "allow_stdin": False, "stop_on_error": False})
            frame = masked_binary_frame(encode_v1(msg))
            for _ in range(CLIENT_FLOOD_COUNT):
                ws.ws.sock.sendall(frame)
            refused = 0
            deadline = time.monotonic() + 60
            while refused < 20 and time.monotonic() < deadline:
                m = ws._recv_one(1)
                if m is not None and m["msg_type"] == "error" and \
                        m["content"].get("ename") == "CallistoProtocolError":
                    check("not taking input" in m["content"]["evalue"], "says why", m["content"])
                    refused += 1
            rss_during = status_kib("VmRSS")
            print(f"  {refused} refused; RSS {rss_before} -> {rss_during} KiB")
            check(refused >= 20, f"20 of {CLIENT_FLOOD_COUNT} x {CLIENT_FLOOD_BYTES >> 20} MiB refused "
                                 f"({refused})")
            check_memory_bound(rss_during - rss_before < 400 * 1024,
                               f"RSS grew by {(rss_during - rss_before) >> 10} MiB")
        finally:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass  # stopped this long, it may have been restarted (no heartbeat)
    still_serving()


if __name__ == "__main__":
    sys.exit(run_tests())
