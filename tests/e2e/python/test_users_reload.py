#!/usr/bin/python3
"""The users file is read again while the server runs: on SIGHUP, and when the file changes.
A user added can use the server at once, a user removed (or whose token changed) gets 401 and
loses their open WebSockets, and a file that does not parse leaves the users as they were.
`callisto --hash-token=-` reads the token from standard input, so it shows in no process list.

The server under test runs with --users=$CALLISTO_USERS_FILE, a file this script rewrites
(ana, bob and root, as tests/e2e/e2e_tests.cpp writes it).

  CALLISTO_URL=... CALLISTO_TOKEN=root-token-1 CALLISTO_PID=... CALLISTO_USERS_FILE=F \\
      /usr/bin/python3 test_users_reload.py
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (KernelWS, api, callisto_only, check, check_eq, poll,  # noqa: E402
                        run_tests)

USERS_FILE = os.environ.get("CALLISTO_USERS_FILE", "")
PID = int(os.environ.get("CALLISTO_PID", "0"))


def entry(name, token, **extra):
    return dict(name=name, token_sha256=hashlib.sha256(token.encode()).hexdigest(), **extra)


def write_users(users):
    # A new file renamed into place, as a deployment would.
    with open(USERS_FILE + ".new", "w") as f:
        json.dump(users, f)
    os.rename(USERS_FILE + ".new", USERS_FILE)


ORIGINAL = [entry("ana", "ana-token-1", max_kernels=2), entry("bob", "bob-token-1"),
            entry("root", "root-token-1", role="admin")]


def status_as(token):
    return api("GET", "/api/kernels", token=token).status


@callisto_only
def test_sighup_adds_a_user_and_removes_one_closing_their_websocket():
    try:
        check_eq(status_as("bob-token-1"), 200, "bob to begin with")
        check_eq(status_as("dee-token-1"), 401, "no dee yet")
        r = api("POST", "/api/kernels", {"name": "python3"}, token="bob-token-1", timeout=90)
        check_eq(r.status, 201, "bob's kernel")
        kernel_id = r.json()["id"]
        ws = KernelWS(kernel_id, token="bob-token-1")
        ws.kernel_info()

        write_users([entry("ana", "ana-token-1", max_kernels=2),
                     entry("root", "root-token-1", role="admin"), entry("dee", "dee-token-1")])
        os.kill(PID, signal.SIGHUP)
        poll(lambda: status_as("bob-token-1") == 401, 10, 0.1, "bob refused after SIGHUP")
        check_eq(status_as("dee-token-1"), 200, "dee served")
        check_eq(status_as("ana-token-1"), 200, "ana, unchanged, still served")

        def closed():
            try:
                ws.ws.settimeout(0.2)
                ws.ws.recv()
                return False
            except Exception:  # noqa: BLE001 - closed, reset: either way it is gone
                return not ws.ws.connected
        poll(closed, 10, 0.1, "bob's WebSocket closed")
        ws.close()
        api("DELETE", f"/api/kernels/{kernel_id}", token="root-token-1")  # an admin may
    finally:
        write_users(ORIGINAL)
        os.kill(PID, signal.SIGHUP)
        poll(lambda: status_as("bob-token-1") == 200, 10, 0.1, "bob back")


@callisto_only
def test_a_changed_file_takes_effect_without_a_signal():
    try:
        write_users(ORIGINAL + [entry("eve", "eve-token-1")])
        poll(lambda: status_as("eve-token-1") == 200, 15, 0.2, "eve served within the poll")
    finally:
        write_users(ORIGINAL)
        poll(lambda: status_as("eve-token-1") == 401, 15, 0.2, "eve gone again")


@callisto_only
def test_a_users_file_that_does_not_parse_leaves_the_users_in_effect():
    try:
        with open(USERS_FILE + ".new", "w") as f:
            f.write("[{\"name\": \"broken\"")
        os.rename(USERS_FILE + ".new", USERS_FILE)
        os.kill(PID, signal.SIGHUP)
        time.sleep(3)  # the signal and one poll of the file
        check_eq(status_as("bob-token-1"), 200, "bob still served")
        check_eq(status_as("root-token-1"), 200, "root still served")
    finally:
        write_users(ORIGINAL)


@callisto_only
def test_hash_token_reads_the_token_from_standard_input():
    binary = os.readlink(f"/proc/{PID}/exe")
    out = subprocess.run([binary, "--hash-token=-"], input="a-secret-token-9\n",
                         capture_output=True, text=True, timeout=30)
    check_eq(out.returncode, 0, f"exit code ({out.stderr})")
    check_eq(out.stdout.strip(), hashlib.sha256(b"a-secret-token-9").hexdigest(), "the hash")
    bad = subprocess.run([binary, "--hash-token=-"], input="short\n", capture_output=True,
                         text=True, timeout=30)
    check(bad.returncode != 0, "a token too short is refused", bad.stdout, bad.stderr)


if __name__ == "__main__":
    sys.exit(run_tests())
