#!/usr/bin/python3
"""Snapshots of contexts (issue 37): a Python (and an R) context's namespace and files saved, listed,
restored into a new context in a fresh sandboxed kernel, refused to another user and when
tampered with. The server under test runs with --users=FILE where FILE holds ana (token
ana-token-1), bob (bob-token-1) and root (root-token-1, admin), as e2e_tests writes it.

  CALLISTO_URL=… CALLISTO_PID=… /usr/bin/python3 test_snapshots.py [-k NAME]

The snapshot directory is $CALLISTO_SNAPSHOT_DIR, else the server's --snapshot-dir, else
<--workdir-root>/.callisto-state/snapshots (the default).
"""

import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (  # noqa: E402
    SkipTest, api, callisto_only, check, check_documented, check_eq, create_context,
    delete_context, gateway_args, gateway_status_kib, reset_gateway_peak, run_code_ok, run_tests,
)

ANA, BOB, ROOT = "ana-token-1", "bob-token-1", "root-token-1"

SETUP = r"""
import pandas as pd, numpy as np, socket
df = pd.DataFrame({"a": np.arange(1000), "b": np.arange(1000) * 0.5})
def twice(x):
    return 2 * x + len(df)
class Counter:
    def __init__(self, start):
        self.n = start
    def bump(self):
        self.n += 1
        return self.n
counter = Counter(41)
df.head(10).to_csv("data.csv", index=False)
gen = (i * i for i in range(10))
sock = socket.socket()
print("ready")
"""

CHECK = r"""
import json, os
print(json.dumps({
    "shape": list(df.shape),
    "b_sum": float(df.b.sum()),
    "twice": twice(3),
    "bump": counter.bump(),
    "pd": pd.__name__,
    "csv": open("data.csv").read().splitlines()[:2],
    "gen": "gen" in globals(),
    "sock": "sock" in globals(),
    "leftovers": [n for n in os.listdir(".") if n.startswith(".callisto-snapshot")],
    "callisto_names": [n for n in globals() if n.startswith("_callisto")],
}))
"""


MiB = 1 << 20

# About 100 MiB of random floats: incompressible, and larger than anything else the gateway
# holds while the test runs.
BIG = r"""
import numpy as np
big = np.random.default_rng(7).random(100 * 2**20 // 8)
print(repr(float(big.sum())))
"""


def snapshot_dir():
    if os.environ.get("CALLISTO_SNAPSHOT_DIR"):
        return os.environ["CALLISTO_SNAPSHOT_DIR"]
    args = gateway_args()
    if "snapshot-dir" in args:
        return args["snapshot-dir"]
    return os.path.join(args["workdir-root"], ".callisto-state", "snapshots")


def run_json(token, context_id, code):
    import json
    out = run_code_ok(context_id, code, token=token)["stdout"]
    return json.loads(out.strip().splitlines()[-1])


class state:
    """One snapshot of ANA's, taken once and shared by the tests."""
    context = None
    snapshot = None


def the_snapshot():
    if state.snapshot:
        return state.snapshot
    ctx = create_context({"policy": "fresh"}, token=ANA)
    state.context = ctx
    run_code_ok(ctx, SETUP, token=ANA)
    r = api("POST", f"/v1/contexts/{ctx['id']}/snapshots", token=ANA, timeout=300)
    check_eq(r.status, 201, f"snapshot taken ({r.body[:500]!r})")
    check_documented("POST", "/v1/contexts/{context_id}/snapshots", r)
    state.snapshot = r.json()
    check_eq(r.headers.get("location"), "/v1/snapshots/" + state.snapshot["id"], "Location")
    return state.snapshot


@callisto_only
def test_snapshot_lists_what_it_carries_and_what_it_cannot():
    s = the_snapshot()
    check_eq(s["owner"], "ana", "owner")
    for name in ("df", "twice", "Counter", "counter", "pd", "np", "socket"):
        check(name in s["carried"], f"{name} carried", s["carried"])
    not_carried = {n["name"]: n for n in s["not_carried"]}
    check("gen" in not_carried and not_carried["gen"]["type"] == "builtins.generator",
          "the generator is listed as not carried, with its type", s["not_carried"])
    check("sock" in not_carried and not_carried["sock"]["type"] == "socket.socket",
          "the socket is listed as not carried, with its type", s["not_carried"])
    check(all(n["reason"] for n in s["not_carried"]), "each with a reason", s["not_carried"])
    check("data.csv" in [f["path"] for f in s["files"]], "the CSV is among the files", s["files"])
    check(not any(f["path"].startswith((".ipython", ".cache", ".callisto-snapshot"))
                  for f in s["files"]), "the kernel's own files stay out", s["files"])
    check(s["size"] > 0 and s["duration_ms"] >= 0, "size and duration", s)
    # The context itself is untouched: its names are all there, its workdir has no leftover.
    got = run_json(ANA, state.context["id"], CHECK)
    check_eq(got["leftovers"], [], "no snapshot file left in the workdir")
    check(got["gen"] and got["sock"], "the original keeps its generator and socket", got)


@callisto_only
def test_snapshots_are_listed_and_read_by_their_owner_only():
    s = the_snapshot()
    r = check_documented("GET", "/v1/snapshots", api("GET", "/v1/snapshots", token=ANA))
    check(s["id"] in [x["id"] for x in r.json()], "ana lists it")
    r = api("GET", "/v1/snapshots", token=BOB)
    check_eq(r.status, 200, "bob lists his")
    check(s["id"] not in [x["id"] for x in r.json()], "bob does not list ana's")
    r = api("GET", "/v1/snapshots", token=ROOT)
    check(s["id"] in [x["id"] for x in r.json()], "an admin lists all")
    r = check_documented("GET", "/v1/snapshots/{snapshot_id}",
                         api("GET", f"/v1/snapshots/{s['id']}", token=ANA))
    check_eq(r.json()["id"], s["id"], "ana reads it")
    for token, who in ((BOB, "bob"),):
        r = api("GET", f"/v1/snapshots/{s['id']}", token=token)
        check_eq(r.status, 404, f"{who} gets 404 reading it")
        r = api("DELETE", f"/v1/snapshots/{s['id']}", token=token)
        check_eq(r.status, 404, f"{who} gets 404 deleting it")
    for bad in ("not-an-id", "..", "%2e%2e", s["id"].upper(), s["id"] + "0"):
        r = api("GET", f"/v1/snapshots/{bad}", token=ANA)
        check(r.status in (400, 404), f"GET /v1/snapshots/{bad} is refused (the router: 400)", r)


@callisto_only
def test_restore_gives_a_new_context_with_the_state_and_files():
    s = the_snapshot()
    r = api("POST", "/v1/contexts", {"from_snapshot": s["id"], "policy": "fresh"}, token=ANA,
            timeout=300)
    check_eq(r.status, 201, f"restored ({r.body[:500]!r})")
    check_documented("POST", "/v1/contexts", r)
    ctx = r.json()
    try:
        check(ctx["id"] != state.context["id"], "a new context")
        check(ctx["kernel_id"] != state.context["kernel_id"], "in a new kernel")
        restored = ctx["restored"]
        check_eq(restored["snapshot_id"], s["id"], "restored from")
        check_eq(restored["not_carried"], [], "everything in the snapshot loaded")
        check("data.csv" in restored["files"], "files", restored)
        got = run_json(ANA, ctx["id"], CHECK)
        check_eq(got["shape"], [1000, 2], "the DataFrame")
        check_eq(got["b_sum"], 0.5 * sum(range(1000)), "its values")
        check_eq(got["twice"], 1006, "the function, with its global")
        check_eq(got["bump"], 42, "the class instance and its method")
        check_eq(got["pd"], "pandas", "the module, imported again")
        check_eq(got["csv"], ["a,b", "0,0.0"], "the CSV file")
        check(not got["gen"] and not got["sock"], "no generator nor socket", got)
        check_eq(got["leftovers"], [], "no snapshot file left in the new workdir")
        check_eq(got["callisto_names"], [], "no name of the gateway's left")
        # The original is independent: its counter did not move with the copy's.
        check_eq(run_json(ANA, state.context["id"], CHECK)["bump"], 43,
                 "the original's counter is its own")
    finally:
        delete_context(ctx["id"], token=ANA)


@callisto_only
def test_another_users_restore_is_404():
    s = the_snapshot()
    r = api("POST", "/v1/contexts", {"from_snapshot": s["id"]}, token=BOB, timeout=120)
    check_eq(r.status, 404, f"bob restoring ana's snapshot ({r.body[:300]!r})")
    check_documented("POST", "/v1/contexts", r)
    r = api("POST", "/v1/contexts", {"from_snapshot": "0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11"},
            token=ANA, timeout=120)
    check_eq(r.status, 404, "an unknown snapshot")
    r = api("POST", "/v1/contexts", {"from_snapshot": "../../etc"}, token=ANA, timeout=120)
    check_eq(r.status, 404, "a path for an id")
    r = api("POST", "/v1/contexts", {"from_snapshot": 3}, token=ANA)
    check_eq(r.status, 400, "a number for an id")


@callisto_only
@pytest.mark.context({"policy": "fresh"}, token=ANA)
def test_a_busy_context_is_not_snapshotted(context):
    t = threading.Thread(target=lambda: api(
        "POST", f"/v1/contexts/{context['id']}/executions", {"code": "import time; time.sleep(4)"},
        token=ANA, timeout=60))
    t.start()
    time.sleep(1.0)
    r = api("POST", f"/v1/contexts/{context['id']}/snapshots", token=ANA)
    check_eq(r.status, 409, f"snapshot of a busy context ({r.body[:300]!r})")
    check("busy" in r.json()["message"], "says why", r.json())
    check_documented("POST", "/v1/contexts/{context_id}/snapshots", r)
    t.join(60)
    r = api("POST", f"/v1/contexts/{context['id']}/snapshots", token=BOB)
    check_eq(r.status, 404, "bob cannot snapshot ana's context")


@callisto_only
def test_a_tampered_snapshot_is_refused_with_the_reason():
    ctx = create_context({"policy": "fresh"}, token=ANA)
    try:
        run_code_ok(ctx, "x = list(range(100))\nopen('notes.txt', 'w').write('hello world')",
                    token=ANA)
        r = api("POST", f"/v1/contexts/{ctx['id']}/snapshots", token=ANA, timeout=300)
        check_eq(r.status, 201, f"snapshot taken ({r.body[:300]!r})")
        sid = r.json()["id"]
    finally:
        delete_context(ctx["id"], token=ANA)
    path = os.path.join(snapshot_dir(), sid)
    check(os.path.isdir(path), f"the snapshot is stored in {path}")
    pieces = sorted(n for n in os.listdir(path) if n.isdigit())
    check_eq(pieces, ["0", "1"], "the namespace and one file")
    with open(os.path.join(path, "1"), "r+b") as f:  # same size, one byte changed
        f.write(b"J")
    before = api("GET", "/v1/contexts", token=ANA).json()
    r = api("POST", "/v1/contexts", {"from_snapshot": sid}, token=ANA, timeout=120)
    check_eq(r.status, 422, f"a changed file is refused ({r.body[:300]!r})")
    check("notes.txt does not match its SHA-256" in r.json()["message"], "says which and why",
          r.json())
    check_documented("POST", "/v1/contexts", r)
    check_eq(len(api("GET", "/v1/contexts", token=ANA).json()), len(before), "no context made")
    with open(os.path.join(path, "1"), "r+b") as f:
        f.write(b"h")
    with open(os.path.join(path, "0"), "r+b") as f:
        f.truncate(10)
    r = api("POST", "/v1/contexts", {"from_snapshot": sid}, token=ANA, timeout=120)
    check_eq(r.status, 422, f"a truncated namespace is refused ({r.body[:300]!r})")
    check("truncated" in r.json()["message"], "says it is truncated", r.json())
    # Still listed, and its owner may delete it.
    check(sid in [x["id"] for x in api("GET", "/v1/snapshots", token=ANA).json()], "still listed")
    r = api("DELETE", f"/v1/snapshots/{sid}", token=ANA)
    check_eq(r.status, 204, "deleted")
    check_documented("DELETE", "/v1/snapshots/{snapshot_id}", r)
    check_eq(api("GET", f"/v1/snapshots/{sid}", token=ANA).status, 404, "gone")
    check(not os.path.exists(path), "its directory is gone")


@callisto_only
def test_fork_gives_independent_copies():
    ctx = create_context({"policy": "fresh"}, token=BOB)
    made = []
    probe = ("import json; print(json.dumps([state['n'], int(state['xs'][0]), "
             "open('f.txt').read()]))")
    try:
        run_code_ok(ctx, "import numpy as np\nstate = {'n': 1, 'xs': np.arange(5)}\n"
                         "open('f.txt', 'w').write('orig')", token=BOB)
        r = api("POST", f"/v1/contexts/{ctx['id']}/fork", {"count": 3}, token=BOB, timeout=600)
        check_eq(r.status, 201, f"forked ({r.body[:500]!r})")
        check_documented("POST", "/v1/contexts/{context_id}/fork", r)
        body = r.json()
        made = [c["id"] for c in body["contexts"]]
        check_eq(len(made), 3, "three copies")
        check_eq(len(set(made + [ctx["id"]])), 4, "each a new context")
        kernels = {c["kernel_id"] for c in body["contexts"]} | {ctx["kernel_id"]}
        check_eq(len(kernels), 4, "each in its own kernel")
        check("state" in body["snapshot"]["carried"], "the state was carried", body["snapshot"])
        print(f"  fork x3: {body['duration_ms']} ms, snapshot {body['snapshot']['duration_ms']} ms")
        for i, cid in enumerate(made):
            run_code_ok(cid, f"state['n'] = {10 + i}\nstate['xs'][0] = {10 + i}\n"
                             f"open('f.txt', 'w').write('copy{i}')", token=BOB)
        for i, cid in enumerate(made):
            check_eq(run_json(BOB, cid, probe), [10 + i, 10 + i, f"copy{i}"],
                     f"copy {i} has its own change only")
        check_eq(run_json(BOB, ctx["id"], probe), [1, 0, "orig"], "the original is untouched")
        left = [s for s in api("GET", "/v1/snapshots", token=BOB).json()
                if s["context_id"] == ctx["id"]]
        check_eq(left, [], "the fork's own snapshot is not left behind")
    finally:
        for cid in made + [ctx["id"]]:
            delete_context(cid, token=BOB)


@callisto_only
@pytest.mark.context({"policy": "fresh"}, token=BOB)
def test_fork_refuses_bad_counts_and_others_contexts(context):
    before = len(api("GET", "/v1/contexts", token=BOB).json())
    for body in ({"count": 0}, {"count": -1}, {"count": 17}, {"count": 1.5},
                 {"count": "2"}, {"count": None}, {"count": True}, {"n": 2}, [2], "x",
                 "{\"count\": 2", b"\xff"):
        r = api("POST", f"/v1/contexts/{context['id']}/fork", body, token=BOB)
        check_eq(r.status, 400, f"fork with {body!r} ({r.body[:200]!r})")
        check_documented("POST", "/v1/contexts/{context_id}/fork", r)
    check("count" in api("POST", f"/v1/contexts/{context['id']}/fork", {"count": 0},
                         token=BOB).json()["message"], "says what is wrong")
    check_eq(len(api("GET", "/v1/contexts", token=BOB).json()), before, "no context made")
    r = api("POST", f"/v1/contexts/{context['id']}/fork", {"count": 1}, token=ANA)
    check_eq(r.status, 404, "ana cannot fork bob's context")
    r = api("POST", "/v1/contexts/0b7c2a2e-6c1f-4c3e-9a55-0d5d0e0c9a11/fork", {"count": 1},
            token=BOB)
    check_eq(r.status, 404, "an unknown context")


@callisto_only
@pytest.mark.context({"policy": "fresh"}, token=ANA)
def test_fork_past_the_users_kernel_limit_makes_none(context):
    # ana may hold 2 kernels: her context and 3 copies cannot all be.
    before = len(api("GET", "/v1/contexts", token=ANA).json())
    r = api("POST", f"/v1/contexts/{context['id']}/fork", {"count": 3}, token=ANA, timeout=600)
    check_eq(r.status, 429, f"refused at ana's max_kernels ({r.body[:300]!r})")
    check_documented("POST", "/v1/contexts/{context_id}/fork", r)
    time.sleep(1)
    check_eq(len(api("GET", "/v1/contexts", token=ANA).json()), before,
             "no copy is left behind")
    left = [s for s in api("GET", "/v1/snapshots", token=ANA).json()
            if s["context_id"] == context["id"]]
    check_eq(left, [], "nor the fork's snapshot")


@callisto_only
def test_a_100_mib_state_passes_through_the_gateway_in_bounded_memory():
    # The gateway copies a snapshot's pieces through one buffer (docs/operations.md): its
    # peak RSS must not grow by the snapshot's size, neither taking it nor restoring it.
    # bob (no kernel limit), so that ana's contexts above do not count.
    ctx = create_context({"policy": "fresh"}, token=BOB)
    sid, copy = None, None
    try:
        total = run_code_ok(ctx, BIG, token=BOB)["stdout"].strip()
        reset_gateway_peak()
        before = gateway_status_kib("VmRSS")
        r = api("POST", f"/v1/contexts/{ctx['id']}/snapshots", token=BOB, timeout=600)
        check_eq(r.status, 201, f"snapshot of 100 MiB taken ({r.body[:300]!r})")
        sid = r.json()["id"]
        check(r.json()["size"] >= 100 * MiB, "the snapshot holds the 100 MiB", r.json()["size"])
        growth = gateway_status_kib("VmHWM") - before
        print(f"  gateway peak RSS growth taking a {r.json()['size'] // MiB} MiB snapshot: "
              f"{growth // 1024} MiB")
        check(growth < 32 * 1024, "the gateway's peak RSS grew by less than 32 MiB", growth)

        reset_gateway_peak()
        before = gateway_status_kib("VmRSS")
        r = api("POST", "/v1/contexts", {"from_snapshot": sid, "policy": "fresh"}, token=BOB,
                timeout=600)
        check_eq(r.status, 201, f"restored ({r.body[:300]!r})")
        copy = r.json()
        growth = gateway_status_kib("VmHWM") - before
        print(f"  gateway peak RSS growth restoring it: {growth // 1024} MiB")
        check(growth < 32 * 1024, "the gateway's peak RSS grew by less than 32 MiB", growth)
        got = run_code_ok(copy, "print(repr(float(big.sum())))", token=BOB)["stdout"]
        check_eq(got.strip(), total, "the 100 MiB came back whole")
    finally:
        for c in (ctx, copy):
            if c:
                delete_context(c["id"], token=BOB)
        if sid:
            api("DELETE", f"/v1/snapshots/{sid}", token=BOB)


R_SETUP = r"""
df <- data.frame(x = 1:4, y = c("a", "b", "c", "d"), stringsAsFactors = FALSE)
scale_by <- function(v) v * 10 + nrow(df)
write.csv(df, "r_data.csv", row.names = FALSE)
con <- file("r_scratch.txt", "w")
"""

R_CHECK = r"""
cat(jsonlite::toJSON(list(x = sum(df$x), y = paste(df$y, collapse = ""), f = scale_by(1),
    csv = nrow(read.csv("r_data.csv")), con = exists("con"),
    leftovers = list.files(all.files = TRUE, pattern = "^[.]callisto")), auto_unbox = TRUE), "\n")
"""


@callisto_only
def test_an_r_context_is_snapshotted_restored_and_forked():
    kernels = api("GET", "/v1/languages", token=BOB).json()["kernels"]
    r_kernels = [k["name"] for k in kernels if k["language"].lower() == "r"]
    if not r_kernels:
        raise SkipTest("no R kernel (IRkernel) is installed here")
    ctx = create_context({"kernel": r_kernels[0], "policy": "fresh"}, token=BOB)
    made = []
    try:
        run_code_ok(ctx, R_SETUP, token=BOB)
        r = api("POST", f"/v1/contexts/{ctx['id']}/snapshots", token=BOB, timeout=300)
        check_eq(r.status, 201, f"snapshot taken ({r.body[:500]!r})")
        check_documented("POST", "/v1/contexts/{context_id}/snapshots", r)
        s = r.json()
        check_eq(s["language"], "r", "an R snapshot")
        check_eq(sorted(s["carried"]), ["df", "scale_by"], "what it carried")
        check_eq([n["name"] for n in s["not_carried"]], ["con"], "the connection is listed")
        check("r_data.csv" in [f["path"] for f in s["files"]], "the file", s)
        # Naming no kernel, the restore gets an R one; naming a Python one is refused.
        r = api("POST", "/v1/contexts", {"from_snapshot": s["id"], "kernel": "python3"},
                token=BOB, timeout=300)
        check_eq(r.status, 400, f"an R snapshot into a Python kernel ({r.body[:300]!r})")
        r = api("POST", "/v1/contexts", {"from_snapshot": s["id"], "policy": "fresh"}, token=BOB,
                timeout=300)
        check_eq(r.status, 201, f"restored ({r.body[:500]!r})")
        check_documented("POST", "/v1/contexts", r)
        restored = r.json()
        made.append(restored["id"])
        check_eq(restored["kernel"], r_kernels[0], "into an R kernel")
        check_eq(sorted(restored["restored"]["carried"]), ["df", "scale_by"], "loaded")
        expected = {"x": 10, "y": "abcd", "f": 14, "csv": 4, "con": False, "leftovers": []}
        check_eq(run_json(BOB, restored["id"], R_CHECK), expected, "the restored state")
        r = api("POST", f"/v1/contexts/{ctx['id']}/fork", {"count": 2}, token=BOB, timeout=600)
        check_eq(r.status, 201, f"forked ({r.body[:500]!r})")
        copies = [c["id"] for c in r.json()["contexts"]]
        made += copies
        run_code_ok(copies[0], "df$x <- df$x * 100", token=BOB)
        check_eq(run_json(BOB, copies[0], R_CHECK)["x"], 1000, "the first copy changed")
        check_eq(run_json(BOB, copies[1], R_CHECK)["x"], 10, "the second did not")
        check_eq(run_json(BOB, ctx["id"], R_CHECK)["x"], 10, "nor the original")
        check_eq(api("DELETE", f"/v1/snapshots/{s['id']}", token=BOB).status, 204, "deleted")
    finally:
        for cid in made + [ctx["id"]]:
            delete_context(cid, token=BOB)


@callisto_only
def test_cleanup():
    if state.context:
        delete_context(state.context["id"], token=ANA)
    if state.snapshot:
        check_eq(api("DELETE", f"/v1/snapshots/{state.snapshot['id']}", token=ANA).status, 204,
                 "the shared snapshot deleted")


if __name__ == "__main__":
    sys.exit(run_tests())
