#!/usr/bin/python3
"""Warm pool with real kernels. The server under test runs with --pool-size=1.

  CALLISTO_URL=… CALLISTO_TOKEN=… /usr/bin/python3 test_pool.py
"""

import datetime
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    KernelWS, api, check, check_eq, create_kernel, delete_kernel, poll, run_tests, test,
)

# The kernel's process age in seconds, from its own /proc (works inside a pid namespace).
AGE = ("(lambda: (float(open('/proc/uptime').read().split()[0]) - "
       "int(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19]) / os.sysconf('SC_CLK_TCK')))()")


def process_age(kernel_id):
    with KernelWS(kernel_id) as ws:
        ws.kernel_info()
        ex = ws.run("import os\n" + AGE)
        return float(ex.result_text())


def created_before_request(settle=0):
    """Creates a kernel; True when its process already existed when POST was sent."""
    time.sleep(settle)
    t0 = time.monotonic()
    k = create_kernel()
    try:
        age = process_age(k["id"])
        return age > (time.monotonic() - t0), k
    finally:
        delete_kernel(k["id"])


@test
def test_create_claims_a_prestarted_kernel_and_the_pool_refills():
    # The pool filled at server start; give a loaded machine time to boot it.
    pooled = poll(lambda: created_before_request()[0] or None, 60, 3, "a pooled kernel")
    check(pooled, "first kernel came from the pool")
    # After a claim the pool starts a replacement in the background.
    again = poll(lambda: created_before_request()[0] or None, 60, 3, "a refilled kernel")
    check(again, "the pool refilled")


def seconds_of(iso):
    return datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


@test
def test_a_claimed_kernel_counts_as_just_used():
    # A pooled kernel may have waited longer than the idle-cull timeout: its last_activity
    # must be the claim, or the culler could take it before the client's first request.
    def claim_after_idle():
        time.sleep(2)
        t0 = time.time()
        k = create_kernel()
        try:
            pooled = process_age(k["id"]) > time.time() - t0
            return (k, t0) if pooled else None
        finally:
            delete_kernel(k["id"])
    k, t0 = poll(claim_after_idle, 60, 1, "a kernel claimed from the pool")
    check(seconds_of(k["last_activity"]) >= t0 - 0.01,
          "last_activity is the claim, not the pooled process's start", k)


@test
def test_pooled_kernels_are_not_listed_or_culled_as_users_kernels():
    ids = [m["id"] for m in api("GET", "/api/kernels").json()]
    check_eq(ids, [], "GET /api/kernels lists no pooled kernel")


@test
def test_concurrent_creates_never_share_a_kernel():
    results, errors = [], []

    def create():
        try:
            results.append(create_kernel())
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=create) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        check_eq(errors, [], "every create succeeded")
        ids = [k["id"] for k in results]
        check_eq(len(set(ids)), 3, "three distinct kernels")
        # Each kernel gets its own value first, then every value is read back: kernels that
        # shared a process (or a namespace) would see the last value written.
        for k in results:
            with KernelWS(k["id"]) as ws:
                ws.kernel_info()
                ws.run("secret = %r" % k["id"])
        for k in results:
            with KernelWS(k["id"]) as ws:
                check_eq(ws.run("secret").result_text(), repr(k["id"]), "own state only")
    finally:
        for k in results:
            delete_kernel(k["id"])


if __name__ == "__main__":
    sys.exit(run_tests())
