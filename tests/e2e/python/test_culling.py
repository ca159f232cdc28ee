#!/usr/bin/python3
"""Culling with real kernels. The server under test must run with
--cull-idle-timeout=3 --cull-interval=1 (and, for test_connected_client_gets_notice only,
--cull-connected; for test_culled_id_is_private_to_its_owner only, --users with the users of
test_users.py):

  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 test_culling.py [-k NAME]
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    KernelWS, api, check, check_documented, check_eq, create_kernel, delete_kernel, parse_iso,
    poll, run_tests, test,
)

IDLE_TIMEOUT = 3


def is_gone(kernel_id):
    return api("GET", f"/api/kernels/{kernel_id}").status == 410


@test
def test_idle_kernel_is_culled_and_answers_410():
    k = create_kernel()
    try:
        poll(lambda: is_gone(k["id"]), 30, 0.25, "kernel culled")
        r = api("GET", f"/api/kernels/{k['id']}")
        check_documented("GET", "/api/kernels/{kernel_id}", r)
        body = r.json()
        check_eq(body.get("reason"), "culled", "410 reason")
        parse_iso(body["culled_at"])
        check("idle for" in body.get("message", ""), "message says why", body)
        check_eq(api("DELETE", f"/api/kernels/{k['id']}").status, 410, "DELETE of a culled id")
        check_eq(api("POST", f"/api/kernels/{k['id']}/restart").status, 410, "restart")
        for method, path in (("DELETE", "/api/kernels/{kernel_id}"),
                             ("POST", "/api/kernels/{kernel_id}/interrupt"),
                             ("POST", "/api/kernels/{kernel_id}/restart"),
                             ("GET", "/api/kernels/{kernel_id}/channels")):
            upgrade = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
                       "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
            r = api(method, path.replace("{kernel_id}", k["id"]),
                    headers=upgrade if path.endswith("channels") else None)
            check_eq(r.status, 410, f"{method} {path} of a culled id")
            check_documented(method, path, r)
        ids = [m["id"] for m in api("GET", "/api/kernels").json()]
        check(k["id"] not in ids, "culled kernel not listed")
    finally:
        delete_kernel(k["id"])


@test
def test_context_culled_with_its_kernel_answers_410(context):
    poll(lambda: api("GET", "/v1/contexts/" + context["id"]).status == 410, 30, 0.25,
         "context culled with its idle kernel")
    body = api("GET", "/v1/contexts/" + context["id"]).json()
    check_eq(body.get("reason"), "culled", "410 reason")
    parse_iso(body["culled_at"])
    check_eq(api("POST", f"/v1/contexts/{context['id']}/executions", {"code": "1"}).status, 410,
             "executing in a culled context")
    check(context["id"] not in [c["id"] for c in api("GET", "/v1/contexts").json()], "not listed")


@test
def test_culled_id_is_private_to_its_owner():
    ana, bob, root = "ana-token-1", "bob-token-1", "root-token-1"
    r = api("POST", "/api/kernels", {"name": "python3"}, token=ana)
    check_eq(r.status, 201, "ana creates")
    kid = r.json()["id"]
    try:
        poll(lambda: api("GET", f"/api/kernels/{kid}", token=ana).status == 410, 30, 0.25,
             "ana's kernel culled")
        # bob must not learn that the id existed: the same 404 as for any unknown id.
        for method, path in (("GET", ""), ("DELETE", ""), ("POST", "/restart")):
            check_eq(api(method, f"/api/kernels/{kid}{path}", token=bob).status, 404,
                     f"bob {method} {path or '/'} of ana's culled kernel")
        check_eq(api("GET", f"/api/kernels/{kid}", token=root).status, 410, "admin sees 410")
    finally:
        api("DELETE", f"/api/kernels/{kid}", token=ana)


@test
def test_connected_kernel_is_kept_and_culled_after_disconnect():
    k = create_kernel()
    try:
        with KernelWS(k["id"]) as ws:
            ws.kernel_info()
            time.sleep(IDLE_TIMEOUT * 2 + 1)
            check_eq(api("GET", f"/api/kernels/{k['id']}").status, 200,
                     "a kernel with a client is not culled")
            check_eq(ws.run("1+1").result_text(), "2", "still works")
        poll(lambda: is_gone(k["id"]), 30, 0.25, "culled after the client left")
    finally:
        delete_kernel(k["id"])


@test
def test_busy_kernel_is_not_culled_for_idleness():
    k = create_kernel()
    try:
        with KernelWS(k["id"]) as ws:
            ws.kernel_info()
            ws.execute("import time; time.sleep(8)")
            poll(lambda: api("GET", f"/api/kernels/{k['id']}").json()["execution_state"] == "busy",
                 10, 0.1, "busy")
        time.sleep(IDLE_TIMEOUT + 2)
        r = api("GET", f"/api/kernels/{k['id']}")
        check_eq(r.status, 200, "busy kernel kept")
        check_eq(r.json()["execution_state"], "busy", "still busy")
        poll(lambda: is_gone(k["id"]), 40, 0.25, "culled once idle")
    finally:
        delete_kernel(k["id"])


@test
def test_connected_client_gets_notice():
    """Needs --cull-connected: the attached client sees status dead, then a close that says why."""
    k = create_kernel()
    try:
        ws = KernelWS(k["id"])
        ws.kernel_info()
        dead = ws.wait_for(lambda m: m["channel"] == "iopub" and m["msg_type"] == "status"
                           and m["content"].get("execution_state") == "dead", 30, "status dead")
        check_eq(dead["parent_header"], {}, "server-made status has an empty parent")
        try:
            while ws._recv_one(10) is not None:
                pass
        except ConnectionError:
            pass
        reason = ws.ws.close_frame_reason() if hasattr(ws.ws, "close_frame_reason") else None
        check(is_gone(k["id"]), "410 after the notice", reason)
    finally:
        delete_kernel(k["id"])


if __name__ == "__main__":
    sys.exit(run_tests())
