#!/usr/bin/python3
"""Owners and quotas with real kernels. The server under test runs with --users=FILE where
FILE holds ana (token ana-token-1, max_kernels 2), bob (bob-token-1) and root (root-token-1,
admin), and with --max-kernels=3.

  CALLISTO_URL=… /usr/bin/python3 test_users.py
"""

import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    KernelWS, api, check, check_documented, check_eq, delete_kernel, run_code, run_tests, test,
)

ANA, BOB, ROOT = "ana-token-1", "bob-token-1", "root-token-1"


def create(token):
    return api("POST", "/api/kernels", {"name": "python3"}, token=token)


def concurrent_creates(token, n):
    results = []
    lock = threading.Lock()

    def one():
        r = create(token)
        with lock:
            results.append(r)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    return results


@test
def test_another_user_cannot_see_or_touch_a_kernel():
    r = create(ANA)
    check_eq(r.status, 201, "ana creates")
    kid = r.json()["id"]
    try:
        check(kid in [k["id"] for k in api("GET", "/api/kernels", token=ANA).json()], "ana lists it")
        check(kid not in [k["id"] for k in api("GET", "/api/kernels", token=BOB).json()],
              "bob does not list it")
        for method, path in (("GET", ""), ("DELETE", ""), ("POST", "/interrupt"), ("POST", "/restart")):
            check_eq(api(method, f"/api/kernels/{kid}{path}", token=BOB).status, 404,
                     f"bob {method} {path or '/'}")
        try:
            KernelWS(kid, token=BOB)
        except Exception as e:  # noqa: BLE001
            check("404" in str(e), "bob's WebSocket refused as unknown", e)
        else:
            check(False, "bob attached to ana's kernel")
        check_eq(api("POST", "/api/kernels", {"name": "python3", "kernel_id": kid}, token=BOB).status,
                 409, "bob cannot take ana's id")
        with KernelWS(kid, token=ANA) as ws:
            ws.kernel_info()
            check_eq(ws.run("x = 41; x + 1").result_text(), "42", "ana runs code")
    finally:
        delete_kernel(kid, token=ANA)


@test
def test_admin_sees_and_attaches_to_any_kernel():
    r = create(ANA)
    kid = r.json()["id"]
    try:
        check(kid in [k["id"] for k in api("GET", "/api/kernels", token=ROOT).json()], "admin lists it")
        check_eq(api("GET", f"/api/kernels/{kid}", token=ROOT).status, 200, "admin reads it")
        with KernelWS(kid, token=ROOT) as ws:
            ws.kernel_info()
            check_eq(ws.run("6 * 7").result_text(), "42", "admin runs code in it")
    finally:
        delete_kernel(kid, token=ANA)


@test
def test_only_an_admin_sees_the_process_behind_a_kernel():
    r = create(ANA)
    check_eq(r.status, 201, "ana creates a kernel")
    kid = r.json()["id"]
    try:
        check("callisto" not in r.json(), "ana's create answer has no process view", r.json())
        mine = api("GET", f"/api/kernels/{kid}", token=ANA).json()
        check("callisto" not in mine, "ana does not see the kernel's host pid or memory", mine)
        listed = [k for k in api("GET", "/api/kernels", token=ANA).json() if k["id"] == kid]
        check(listed and "callisto" not in listed[0], "nor in her list", listed)
        seen = api("GET", f"/api/kernels/{kid}", token=ROOT).json()
        info = seen.get("callisto") or {}
        check(info.get("launch") in ("zygote", "exec") and info.get("pid", 0) > 0,
              "the admin sees how it started and its host pid", seen)
    finally:
        delete_kernel(kid, token=ANA)


@test
def test_whoami_names_the_caller_and_their_role():
    for token, name, admin in ((ANA, "ana", False), (ROOT, "root", True)):
        r = check_documented("GET", "/v1/whoami", api("GET", "/v1/whoami", token=token))
        check_eq(r.status, 200, f"{name} asks who she is")
        check_eq(r.json(), {"user": name, "admin": admin}, f"{name}'s answer")
    check_eq(api("GET", "/v1/whoami", token="wrong-token").status, 401, "a wrong token")


@test
@pytest.mark.context({}, token=BOB)  # bob's context
def test_admin_console_sees_owners_holders_and_the_overview(context):
    r = check_documented("GET", "/v1/admin/overview", api("GET", "/v1/admin/overview", token=ANA))
    check_eq(r.status, 403, "a user may not read the overview")
    kernel = create(ANA).json()["id"]
    try:
        check_eq(context.get("owner"), "bob", "a context names its owner")
        check_eq(run_code(context, "print(1)", token=BOB)["status"], "ok", "bob's execution")
        with KernelWS(kernel, token=ANA) as ws:
            ws.kernel_info()
            check_eq(ws.run("6 * 7").result_text(), "42", "ana's execution")
        listed = check_documented("GET", "/api/kernels", api("GET", "/api/kernels", token=ROOT))
        by_id = {k["id"]: k for k in listed.json()}
        check(kernel in by_id and context["kernel_id"] in by_id, "the admin lists both kernels")
        ana_k = by_id[kernel]["callisto"]
        check_eq((ana_k["owner"], ana_k["held_by"], ana_k["executions"]), ("ana", "client", 1),
                 f"ana's kernel: owner, holder, executions ({ana_k})")
        check(isinstance(ana_k["pss_bytes"], int) and ana_k["pss_bytes"] > 0,
              "the list shows its memory before the kernel is fetched alone", ana_k)
        bob_k = check_documented("GET", "/api/kernels/{kernel_id}",
                                 api("GET", f"/api/kernels/{context['kernel_id']}", token=ROOT))
        info = bob_k.json()["callisto"]
        check_eq((info["owner"], info["held_by"], info.get("context_id"), info["executions"]),
                 ("bob", "context", context["id"], 1), f"bob's kernel is his context's ({info})")
        check(isinstance(info["pss_bytes"], int) and info["pss_bytes"] > 0,
              "its memory is read for one kernel", info)
        contexts = check_documented("GET", "/v1/contexts", api("GET", "/v1/contexts", token=ROOT))
        check(any(c["id"] == context["id"] and c["owner"] == "bob" for c in contexts.json()),
              "the admin lists bob's context with its owner")
        overview = check_documented("GET", "/v1/admin/overview",
                                    api("GET", "/v1/admin/overview", token=ROOT))
        check_eq(overview.status, 200, "the admin reads the overview")
        o = overview.json()
        check(o["server"]["version"] and o["server"]["started_at"].endswith("Z"), "server facts", o)
        check_eq(o["audit"], {"enabled": False, "latest": []}, "no audit log here")
        samples = o["history"]["samples"]
        check(samples and o["history"]["interval_seconds"] == 10, "activity sampled at start", o)
    finally:
        delete_kernel(kernel, token=ANA)


@test
def test_per_user_limit_under_concurrent_creates():
    results = concurrent_creates(ANA, 4)
    try:
        statuses = sorted(r.status for r in results)
        check_eq(statuses, [201, 201, 429, 429], "two created, two refused")
        for r in results:
            check_documented("POST", "/api/kernels", r)
            if r.status == 429:
                # Waiting does not free ana's own quota: no Retry-After, and how to free one.
                check("retry-after" not in r.headers, "no Retry-After on a user's quota", r.headers)
                check("limit" in r.json()["message"], "429 explains", r.body)
                check("DELETE /api/kernels/" in r.json()["message"], "and says how to free one",
                      r.body)
    finally:
        for r in results:
            if r.status == 201:
                delete_kernel(r.json()["id"], token=ANA)


@test
def test_server_limit_under_concurrent_creates():
    results = concurrent_creates(BOB, 5)
    try:
        statuses = sorted(r.status for r in results)
        check_eq(statuses, [201, 201, 201, 429, 429], "three created (server limit), two refused")
        for r in results:
            if r.status == 429:
                check_documented("POST", "/api/kernels", r)
                check_eq(r.headers.get("retry-after"), "10", "others' kernels may finish: retry")
    finally:
        for r in results:
            if r.status == 201:
                delete_kernel(r.json()["id"], token=BOB)


@test
def test_unknown_token_is_refused():
    check_eq(api("GET", "/api/kernels", token="nobody-token").status, 401, "unknown token")


if __name__ == "__main__":
    sys.exit(run_tests())
