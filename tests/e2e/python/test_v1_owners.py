"""End-to-end test of /v1's contexts under users: each user's are private, and the kernel
quota applies to them. Needs the server e2e_tests.cpp starts with its users file (skipped
otherwise).

Run against a server (CALLISTO_URL, CALLISTO_TOKEN)."""

import sys

import websocket  # websocket-client

from e2e_client import SkipTest, api, callisto_only, check, check_documented, check_eq, run_tests
from v1_client import events_ws


# Tokens of the users file that e2e_tests.cpp's users case writes.
ANA, BOB, ROOT = "ana-token-1", "bob-token-1", "root-token-1"


@callisto_only
def test_owner_contexts_are_private_and_quotas_apply():
    if api("GET", "/v1/contexts", token=ANA).status != 200:
        raise SkipTest("needs the server with the e2e users file")
    r = api("POST", "/v1/contexts", {}, token=ANA)
    check_eq(r.status, 201, "ana creates a context")
    ctx = r.json()
    try:
        base = "/v1/contexts/" + ctx["id"]
        for method, path, body in [("GET", base, None), ("DELETE", base, None),
                                   ("POST", base + "/executions", {"code": "1"}),
                                   ("POST", base + "/restart", None),
                                   ("GET", base + "/files", None),
                                   ("PUT", base + "/files/x", b"x")]:
            r = api(method, path, body, token=BOB)
            check_eq(r.status, 404, f"bob {method} {path[-20:]}")
        check_eq(api("POST", base + "/files", b"x", token=BOB,
                     headers={"Content-Type": "multipart/form-data; boundary=b"}).status, 404,
                 "bob uploads a form")
        try:
            events_ws(ctx, token=BOB)
            raise AssertionError("bob opened ana's events socket")
        except websocket.WebSocketBadStatusException as e:
            check_eq(e.status_code, 404, "bob's events socket")
        check(all(c["id"] != ctx["id"] for c in api("GET", "/v1/contexts", token=BOB).json()),
              "bob does not list it")
        check_eq(api("GET", "/api/kernels/" + ctx["kernel_id"], token=BOB).status, 404,
                 "nor its kernel")
        check(any(c["id"] == ctx["id"] for c in api("GET", "/v1/contexts", token=ROOT).json()),
              "an admin lists it")
        r = api("POST", base + "/executions", {"code": "21 * 2"}, token=ANA)
        check_eq(r.json()["results"][0]["data"]["text/plain"], "42", "ana runs code")
        # ana may have 2 kernels: a second context fits, a third is refused like a kernel.
        second = api("POST", "/v1/contexts", {}, token=ANA)
        check_eq(second.status, 201, "second context")
        third = api("POST", "/v1/contexts", {}, token=ANA)
        check_eq(third.status, 429, "over ana's quota")
        check_documented("POST", "/v1/contexts", third)
        check("retry-after" not in third.headers, "no Retry-After: waiting frees nothing",
              third.headers)
        check_eq(api("DELETE", "/v1/contexts/" + second.json()["id"], token=ANA).status, 204,
                 "delete the second")
    finally:
        check_eq(api("DELETE", "/v1/contexts/" + ctx["id"], token=ANA).status, 204, "cleanup")


if __name__ == "__main__":
    sys.exit(run_tests())
