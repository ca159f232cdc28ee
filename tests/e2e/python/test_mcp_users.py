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
        text, err = ana.tool("run_code", code="secret = 'ana'; open('mine.txt', 'w').write('x')")
        check(not err, "ana runs code", text)
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


def kernels_of(token):
    r = api("GET", "/api/kernels", token=token)
    check_eq(r.status, 200, "list kernels")
    return r.json()


@callisto_only
def test_the_owners_kernel_quota_applies_to_her_session():
    # Kernels of ended sessions finish shutting down in the background; they count till then.
    for token in (ANA, BOB):
        poll(lambda: not kernels_of(token), 60, what="earlier kernels gone")
    kernels = []
    session = Session(ANA)
    try:
        for _ in range(2):  # ana's limit
            r = api("POST", "/api/kernels", {"name": "python3"}, token=ANA)
            check_eq(r.status, 201, "ana starts a kernel")
            kernels.append(r.json()["id"])
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
