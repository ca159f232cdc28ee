"""Kernels outlive the gateway (--state-dir, on by default when sandboxed), and the next
start adopts them with their state (issue 14). Phases, run by the TEST_CASE in
tests/e2e/e2e_tests.cpp around the kills and restarts; state in $CALLISTO_E2E_STATE:

  -k before_crash   first server (--zygote=off): kernel A (exec'd) holds x = 42 and a file,
                    and is running a 16 s cell when the gateway is SIGKILLed (the servers'
                    --kernel-ready-timeout is 10 s); kernel B too; a /v1
                    context holds z = 5, one finished execution and one running; an E2B
                    sandbox holds x = 42 and a file, and a second context holds y = 8.
  -k while_down     no server: B's processes are killed (it ends while no gateway runs) and
                    a garbage record is planted.
  -k after_crash    second server: A is back with its owner, variables and files, and the
                    Jupyter client that sent the 16 s cell, reconnecting with its session,
                    gets that cell's execute_reply; B and the
                    garbage record are gone with everything B left; the context is back with
                    z, its finished execution, and the running one reported as ended by the
                    restart; the E2B sandbox is back with its tokens and both contexts, each
                    with its state, sharing the sandbox's files, uid and cgroup; kernel C
                    (forked by the zygote) is made to hold y = 7, then the gateway gets
                    SIGUSR2 (upgrade).
  -k after_upgrade  third server: A and C are adopted again with their state, and the
                    E2B sandbox with both contexts.
  -k after_stop     no server: SIGTERM stopped every kernel; nothing is left.
"""

import glob
import http.client
import json
import os
import signal
import time
import urllib.parse

from e2e_client import (BASE_URL, HTTP_TIMEOUT, TOKEN, KernelWS, alive, api, check, check_eq,
                        check_documented, create_context, create_kernel, gateway_args, launch_info,
                        pids_of_uids, poll, process_tree, run_code, run_tests, test)

STATE = os.environ["CALLISTO_E2E_STATE"]


def load():
    with open(STATE) as f:
        return json.load(f)


def save(s):
    with open(STATE, "w") as f:
        json.dump(s, f)


def kernel_cgroups(kernel_id):
    return [d for d in glob.glob("/sys/fs/cgroup/*/callisto/*") + glob.glob("/sys/fs/cgroup/callisto/*")
            if kernel_id[:8] in os.path.basename(d)]


def process_cgroups(pid):
    """The Callisto cgroups a process is in, one line per hierarchy of /proc/<pid>/cgroup."""
    with open(f"/proc/{pid}/cgroup") as f:
        return sorted(line.strip() for line in f if "/callisto/" in line)


def records(state_dir, kind="kernels", with_writes_in_progress=False):
    """The record files of a state directory; a write in progress shows as a hidden
    .<id>.json.tmp until it is renamed over the record, so it is left out unless asked for."""
    d = os.path.join(state_dir, kind)
    names = os.listdir(d) if os.path.isdir(d) else []
    return sorted(n for n in names if with_writes_in_progress or not n.startswith("."))


def start_streaming(ctx_id, code):
    """Starts an execution with NDJSON events; returns (connection, execution id) once it runs."""
    url = urllib.parse.urlsplit(BASE_URL)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=HTTP_TIMEOUT)
    conn.request("POST", f"/v1/contexts/{ctx_id}/executions", body=json.dumps({"code": code}),
                 headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json",
                          "Accept": "application/x-ndjson"})
    resp = conn.getresponse()
    queued = json.loads(resp.readline())
    check_eq(queued["type"], "queued", "the first event")
    started = json.loads(resp.readline())
    check_eq(started["type"], "start", "the second event")
    return conn, queued["id"]


def e2b_data_plane(sandbox, method, path, body=None):
    return api(method, path, body, timeout=120, auth=None,
               headers={"E2b-Sandbox-Id": sandbox["sandboxID"],
                        "X-Access-Token": sandbox["envdAccessToken"]})


def e2b_stdout(sandbox, code, context=None):
    """What code run by POST /execute in one of the sandbox's contexts (by default its
    default one) printed."""
    body = {"code": code}
    if context:
        body["context_id"] = context
    r = e2b_data_plane(sandbox, "POST", "/execute", body)
    check_eq(r.status, 200, f"/execute answered ({r.body[:300]!r})")
    lines = [json.loads(line) for line in r.body.decode().splitlines() if line.strip()]
    check(not [line for line in lines if line.get("type") == "error"], f"no error ({lines})")
    return "".join(line["text"] for line in lines if line.get("type") == "stdout")


@test
def test_before_crash():
    args = gateway_args()
    a = create_kernel()
    b = create_kernel()
    with KernelWS(a["id"]) as ws:
        ws.kernel_info()
        check_eq(ws.run("x = 41 + 1; open('kept.txt', 'w').write('kept'); print(x)").stdout(),
                 "42\n", "kernel A ran")
        # Still running when the gateway is killed, and for longer than the next gateway's
        # --kernel-ready-timeout (10 s): the kernel goes on with it, and is adopted after.
        long_cell = ws.execute("import time; time.sleep(16); open('finished.txt', 'w').write('yes')")
        lab_session = ws.session
        ws.wait_for(lambda m: m["msg_type"] == "status" and
                    m["content"].get("execution_state") == "busy", what="A busy")
    with KernelWS(b["id"]) as ws:
        check_eq(ws.run("print('b')").stdout(), "b\n", "kernel B ran")

    ctx = create_context()
    done = run_code(ctx["id"], "z = 5\nprint(z)")
    check_eq(done["stdout"], "5\n", "the context ran")
    conn, running = start_streaming(ctx["id"], "import time\ntime.sleep(4)\nprint('late')")

    state_dir = os.path.join(args["workdir-root"], ".callisto-state")
    check_eq(records(state_dir),
             sorted([a["id"] + ".json", b["id"] + ".json", ctx["kernel_id"] + ".json"]),
             "a record per running kernel")
    check_eq(records(state_dir, "contexts"), [ctx["id"] + ".json"], "a record of the context")
    # An E2B sandbox holding x = 42 and a file, with a second context holding y = 8: the
    # sandbox comes back under its id and tokens with both, the second one's kernel in the
    # first one's sandbox again.
    before = {c["id"] for c in api("GET", "/v1/contexts").json()}
    r = api("POST", "/v2/sandboxes", {"templateID": "code-interpreter-v1", "timeout": 600},
            timeout=120)
    check_eq(r.status, 201, f"an E2B sandbox ({r.body[:300]!r})")
    sandbox = r.json()
    check_eq(e2b_stdout(sandbox, "x = 42; open('kept.txt', 'w').write('kept'); print(x)"),
             "42\n", "the sandbox ran")
    r = e2b_data_plane(sandbox, "POST", "/contexts", {"language": "python"})
    check_eq(r.status, 200, f"a second context of the sandbox ({r.body[:300]!r})")
    second = r.json()["id"]
    check_eq(e2b_stdout(sandbox, "y = 8; print(open('kept.txt').read())", second), "kept\n",
             "the second context reads the sandbox's file")
    e2b_contexts = {c["id"]: c["kernel_id"] for c in api("GET", "/v1/contexts").json()
                    if c["id"] not in before}
    check_eq(len(e2b_contexts), 2, "the sandbox's two contexts")
    check_eq(len(records(state_dir, "e2b-sandboxes")), 1, "a record of the sandbox")

    save({"a": a["id"], "b": b["id"], "a_pid": launch_info(a["id"])["pid"],
          "b_pid": launch_info(b["id"])["pid"], "root": args["workdir-root"],
          "long_cell": long_cell, "lab_session": lab_session,
          "state_dir": state_dir, "uids": args["sandbox-uids"],
          "b_cgroups": kernel_cgroups(b["id"]), "ctx": ctx["id"], "done": done["id"],
          "running": running, "sandbox": sandbox, "e2b_contexts": e2b_contexts,
          "e2b_second": second})
    conn.close()


@test
def test_while_down():
    s = load()
    check(alive(s["a_pid"]) and alive(s["b_pid"]), "both kernels outlived the SIGKILLed gateway")
    for pid in reversed(process_tree(s["b_pid"])):
        os.kill(pid, signal.SIGKILL)
    poll(lambda: not alive(s["b_pid"]), 10, what="kernel B to end")
    garbage = os.path.join(s["state_dir"], "kernels", "deadbeef-0000-4000-8000-000000000000.json")
    with open(garbage, "w") as f:
        f.write('{"id": "deadbeef-0000-4000-8000-000000000000", "pid": ')
    s["garbage"] = garbage
    save(s)


@test
def test_after_crash():
    s = load()
    model = api("GET", f"/api/kernels/{s['a']}")
    check_eq(model.status, 200, "kernel A is listed after the restart")
    check_eq(launch_info(s["a"])["pid"], s["a_pid"], "kernel A is the same process")
    # The client reconnects as a Jupyter client does, with its session in the URL: the reply
    # to the cell it sent the gateway that was killed reaches it all the same.
    with KernelWS(s["a"], session_id=s["lab_session"]) as ws:
        ws.kernel_info(timeout=60)
        reply = ws.wait_for(lambda m: m["msg_type"] == "execute_reply" and
                            m["parent_header"].get("msg_id") == s["long_cell"], timeout=30,
                            what="the reply to the cell sent before the crash")
        check_eq(reply["content"]["status"], "ok", "the cell from before the crash ended ok")
        ex = ws.run("print(x, open('kept.txt').read(), open('finished.txt').read())", timeout=60)
        check_eq(ex.stdout(), "42 kept yes\n",
                 "A's variables and files are there; the cell running at the crash finished")

    check_eq(api("GET", f"/api/kernels/{s['b']}").status, 404, "kernel B, ended meanwhile, is gone")
    check(not os.path.exists(os.path.join(s["root"], s["b"])), "B's workdir was removed")
    check_eq([d for d in s["b_cgroups"] if os.path.exists(d)], [], "B's cgroups were removed")
    check(not os.path.exists(s["garbage"]), "the unreadable record was removed")
    check(s["b"] + ".json" not in records(s["state_dir"]), "B's record is gone")

    # The E2B sandbox is back under its id and tokens with both contexts, each with its state;
    # they still share one sandbox: its files, its uid and its cgroup.
    box = s["sandbox"]
    check_eq(api("GET", f"/sandboxes/{box['sandboxID']}").status, 200, "the E2B sandbox is back")
    check_eq(e2b_stdout(box, "print(x, open('kept.txt').read())"), "42 kept\n",
             "its default context kept its variables and files, reached with its token")
    listed = [c["id"] for c in e2b_data_plane(box, "GET", "/contexts").json()]
    check_eq(sorted(listed), sorted(s["e2b_contexts"]), "both contexts are listed")
    check_eq(e2b_stdout(box, "open('second.txt', 'w').write('s'); print(y)", s["e2b_second"]),
             "8\n", "the second context kept its variables")
    check_eq(e2b_stdout(box, "import os; print(open('second.txt').read(), os.getuid() == "
                             "os.stat('kept.txt').st_uid)"), "s True\n",
             "the default context reads what the second wrote, as the same uid")
    cgroups = [process_cgroups(launch_info(k)["pid"]) for k in s["e2b_contexts"].values()]
    check(cgroups[0] and cgroups[0] == cgroups[1],
          "both kernels are in the sandbox's one cgroup", cgroups)

    # The /v1 context is back, with its history; the execution cut off is reported as such.
    r = api("GET", f"/v1/contexts/{s['ctx']}")
    check(r.status == 200, "the context is back after the restart", r)
    done = api("GET", f"/v1/contexts/{s['ctx']}/executions/{s['done']}")
    check_documented("GET", "/v1/contexts/{context_id}/executions/{execution_id}", done)
    done = done.json()
    check_eq((done["status"], done["stdout"], done.get("restored")), ("ok", "5\n", True),
             "the finished execution, as recorded")
    cut = api("GET", f"/v1/contexts/{s['ctx']}/executions/{s['running']}")
    check_documented("GET", "/v1/contexts/{context_id}/executions/{execution_id}", cut)
    cut = cut.json()
    check_eq((cut["status"], cut["error"]["name"]), ("error", "GatewayRestarted"),
             "the execution running at the crash is reported as ended by the restart")
    check("went on running it" in cut["error"]["value"], "the reason says what happened", cut)
    listing = api("GET", f"/v1/contexts/{s['ctx']}/executions").json()
    check({s["done"], s["running"]} <= {e["id"] for e in listing}, "both are listed", listing)
    check_eq(run_code(s["ctx"], "print(z)")["stdout"], "5\n", "the context keeps its variables")

    # Kernel C is forked by the zygote (on for this server): wait until it is ready.
    deadline = time.monotonic() + 90
    while True:
        c = create_kernel()
        if launch_info(c["id"])["launch"] == "zygote":
            break
        api("DELETE", f"/api/kernels/{c['id']}")
        check(time.monotonic() < deadline, "the zygote became ready")
        time.sleep(1)
    with KernelWS(c["id"]) as ws:
        check_eq(ws.run("y = 7; print(y)").stdout(), "7\n", "kernel C ran")
    s["c"] = c["id"]
    s["c_pid"] = launch_info(c["id"])["pid"]
    save(s)


@test
def test_after_upgrade():
    s = load()
    for kernel, code, out in ((s["a"], "print(x)", "42\n"), (s["c"], "print(y)", "7\n")):
        with KernelWS(kernel) as ws:
            ws.kernel_info(timeout=60)
            check_eq(ws.run(code, timeout=60).stdout(), out, f"kernel {kernel} kept its state")
    check_eq(launch_info(s["c"])["pid"], s["c_pid"], "the forked kernel C is the same process")
    check_eq(run_code(s["ctx"], "print(z + 1)")["stdout"], "6\n", "the context came back again")
    check_eq(e2b_stdout(s["sandbox"], "print(x + 1)"), "43\n", "and the E2B sandbox")
    check_eq(e2b_stdout(s["sandbox"], "print(y + 1)", s["e2b_second"]), "9\n",
             "with its second context")


@test
def test_after_stop():
    s = load()
    first, last = (int(x) for x in s["uids"].split("-"))
    poll(lambda: not pids_of_uids(first, last), 15, what="every kernel process to end")
    check_eq(records(s["state_dir"], with_writes_in_progress=True), [],
             "no kernel record is left after SIGTERM")
    check_eq(records(s["state_dir"], "contexts", with_writes_in_progress=True), [],
             "no context record is left after SIGTERM")
    check_eq(records(s["state_dir"], "e2b-sandboxes", with_writes_in_progress=True), [],
             "nor an E2B sandbox's")
    left = [e for e in os.listdir(s["root"]) if not e.startswith(".callisto")]
    check_eq(left, [], "no workdir is left")


if __name__ == "__main__":
    raise SystemExit(run_tests())
