#!/usr/bin/python3
"""Bad HTTP on the REST side: every malformed request gets a clear JSON error (or a
closed connection where HTTP allows nothing else), and the server keeps serving.

  CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T /usr/bin/python3 test_http_bad_input.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    TOKEN, api, callisto_only, check, check_eq, kernel, raw_exchange, raw_json_body, raw_status,
    run_tests, still_serving,
)


@callisto_only
def test_garbage_request_line_is_400():
    resp = raw_exchange(b"THIS IS NOT HTTP\r\n\r\n")
    check_eq(raw_status(resp), 400, f"garbage request answer {resp[:80]!r}")
    check("reason" in raw_json_body(resp) and "message" in raw_json_body(resp), "JSON error body")
    still_serving()


@callisto_only
def test_binary_noise_does_not_hurt():
    raw_exchange(bytes(range(256)) * 64)
    still_serving()


@callisto_only
def test_oversized_body_is_413():
    # The server refuses on the declared Content-Length, before any body arrives. Only the
    # header is sent: a client still pushing the 2 MB body when the server closes gets EPIPE
    # or a reset that can discard the 413 it was sent (a race, not a server fault).
    head = (f"POST /api/kernels HTTP/1.1\r\nHost: x\r\nAuthorization: token {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {2 * 1024 * 1024 + 2}\r\n\r\n").encode()
    resp = raw_exchange(head)
    check_eq(raw_status(resp), 413, f"oversized body answer {resp[:80]!r}")
    still_serving()


@callisto_only
def test_oversized_headers_are_refused():
    head = ("GET /api/kernels HTTP/1.1\r\nHost: x\r\nX-Big: " + "a" * 200_000 + "\r\n\r\n").encode()
    resp = raw_exchange(head)
    check(raw_status(resp) in (None, 400, 431), f"oversized headers answer {resp[:80]!r}")
    still_serving()


@callisto_only
def test_wrong_method_is_405_with_allow():
    r = api("PUT", "/api/kernels")
    check_eq(r.status, 405, "PUT /api/kernels")
    check_eq(r.headers.get("allow"), "GET, POST", "Allow header")
    check("message" in r.json(), "JSON error body", r.body)


@callisto_only
def test_unknown_path_is_404_json():
    r = api("GET", "/api/nothing-here")
    check_eq(r.status, 404, "unknown path")
    check("reason" in r.json(), "JSON error body", r.body)


@callisto_only
def test_channels_without_upgrade_is_400():
    with kernel() as k:
        r = api("GET", f"/api/kernels/{k['id']}/channels")
        check_eq(r.status, 400, "plain GET of the channels endpoint")


@callisto_only
def test_create_body_bad_forms_are_400():
    for body in (b"[]", b"\"python3\"", b"{\"name\": 3}", b"{\"env\": []}",
                 b"{\"env\": {\"KERNEL_X\": 1}}", b"{\"kernel_id\": \"not-a-uuid\"}",
                 b"{\"kernel_id\": 7}", b"{", b"\xff\xfe"):
        r = api("POST", "/api/kernels", body=body)
        check_eq(r.status, 400, f"POST /api/kernels with {body!r}")
        check("message" in r.json(), "JSON error body", r.body)
    still_serving()


@callisto_only
def test_pipelined_requests_are_answered_in_order():
    req = f"GET /api HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    last = f"GET /api/kernelspecs HTTP/1.1\r\nHost: x\r\nAuthorization: token {TOKEN}\r\nConnection: close\r\n\r\n".encode()
    resp = raw_exchange(req * 3 + last)
    check_eq(resp.count(b"HTTP/1.1 200"), 4, "four answers")


if __name__ == "__main__":
    sys.exit(run_tests())
