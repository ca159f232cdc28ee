#!/usr/bin/python3
"""The MCP endpoint with several users, over raw HTTP: a session belongs to the user who
initialized it (another user's token, even an admin's, gets 404 for its id), each session
runs in a context of its owner, and the owner's kernel quota applies to it (a tool error
the model can read, and the session works again once a kernel is free).

The server runs with --users=FILE: ana (ana-token-1, max_kernels 2), bob (bob-token-1),
root (root-token-1, admin); see test_users.py.

  CALLISTO_URL=… /usr/bin/python3 test_mcp_users.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import api, callisto_only, check, check_eq, poll, run_tests  # noqa: E402
from mcp_client import Session  # noqa: E402

ANA, BOB, ROOT = "ana-token-1", "bob-token-1", "root-token-1"


def contexts(token):
    r = api("GET", "/v1/contexts", token=token)
    check_eq(r.status, 200, "list contexts")
    return r.json()


@callisto_only
def test_a_session_is_its_owners_only():
    ana = Session(ANA)
    try:
        # Kernels of ana's contexts from earlier suites count against her quota while the
        # reuse policy resets them (then they are kept, and give way): retry in that window.
        def first_call():
            text, err = ana.tool("run_code", code="secret = 'ana'; open('mine.txt', 'w').write('x')")
            check(not err or "limit" in text, "ana runs code", text)
            return not err
        poll(first_call, 60, interval=0.5, what="ana's first call within her quota")
        ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
        for token in (BOB, ROOT):
            r = ana.post(ping, token=token)
            check_eq(r.status, 404, f"{token} gets 404 for ana's session")
            check_eq(ana.end(token=token).status, 404, f"{token} cannot end ana's session")
        check_eq(ana.post(ping).status, 200, "ana's session still answers")
        # Her context is hers: listed for her, not for bob; an admin sees every context.
        mine = [c for c in contexts(ANA)]
        check_eq(len(mine), 1, "ana has one context (the session's)")
        check(all(c["id"] != mine[0]["id"] for c in contexts(BOB)), "bob does not see it")
        check(any(c["id"] == mine[0]["id"] for c in contexts(ROOT)), "the admin sees it")

        bob = Session(BOB)
        try:
            text, err = bob.tool("list_files")
            check(not err and "mine.txt" not in text, "bob's session has its own workdir", text)
            text, err = bob.tool("run_code", code="print(secret)")
            check(err and "NameError" in text, "and its own kernel", text)
        finally:
            check_eq(bob.end().status, 204, "bob ends his session")
    finally:
        check_eq(ana.end().status, 204, "ana ends her session")
    check_eq(contexts(ANA), [], "ana's context went with the session")


@callisto_only
def test_the_owners_kernel_quota_applies_to_her_session():
    kernels = []
    session = Session(ANA)
    try:
        # Up to ana's limit of 2 live kernels. Kernels of her ended contexts are reset in the
        # background and then kept for her (and give way to new ones): retry the 429s of that
        # window.
        def start_kernel():
            r = api("POST", "/api/kernels", {"name": "python3"}, token=ANA)
            check(r.status in (201, 429), "ana starts a kernel", r.status, r.body[:200])
            if r.status == 201:
                kernels.append(r.json()["id"])
            return r.status == 201
        for _ in range(2):
            poll(start_kernel, 60, interval=0.5, what="a kernel within ana's quota")
        text, err = session.tool("run_code", code="1 + 1")
        check(err, "no kernel left for the session: a tool error", text)
        check("limit" in text, "saying why", text)
        api("DELETE", f"/api/kernels/{kernels.pop()}", token=ANA)
        text, err = session.tool("run_code", code="print(40 + 2)")
        check(not err and "42" in text, "works once a kernel is free", text)
    finally:
        for k in kernels:
            api("DELETE", f"/api/kernels/{k}", token=ANA)
        session.end()


if __name__ == "__main__":
    sys.exit(run_tests())
