"""Escape attempts against Callisto's kernel sandbox (issue 3). Each attack runs as
kernel code through the gateway's API and must fail; afterwards the gateway and a
second session must still work. docs/security.md lists the defences.

Run against a server started with small limits, e.g.
  callisto --memory-limit=256MiB --pids-limit=64 --disk-quota=64MiB
(tests/e2e/e2e_tests.cpp does). Every kernel attacked must have started as
CALLISTO_E2E_LAUNCH says: "zygote" (the default: forked by callisto-zygote) or "exec"
(bwrap; a server with --zygote=off). Never targets a real address: the egress test
uses TEST-NET-1 (192.0.2.1), which must fail before any packet leaves.
"""

import os
import sys

from e2e_client import (api, check, check_eq, get_kernel, gateway_pid, launched_kernel, poll,
                        run_json, run_tests, test, KernelWS, TOKEN)

# How the kernels under attack must have started: "zygote" (forked by callisto-zygote, the
# default) or "exec" (bwrap, with --zygote=off), so that a pass says which sandbox held.
LAUNCH = os.environ.get("CALLISTO_E2E_LAUNCH", "zygote")


def sandboxed_kernel():
    """A fresh kernel started as LAUNCH says, deleted on exit."""
    return launched_kernel(LAUNCH)


@test
def test_the_kernels_under_attack_start_as_expected():
    with sandboxed_kernel() as k:
        check_eq(k["callisto"]["launch"], LAUNCH, "the kernel model's callisto.launch")
        print(f"  kernels under attack start by {LAUNCH}")


@test
def test_tcp_egress_fails():
    with sandboxed_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, """
import socket, json, errno
try:
    socket.create_connection(("192.0.2.1", 80), timeout=2)
    r = "connected"
except OSError as e:
    r = errno.errorcode.get(e.errno, str(e))
print(json.dumps(r))
""")
        check(r in ("ENETUNREACH", "EHOSTUNREACH", "EAFNOSUPPORT", "EPERM"),
              "TCP to 192.0.2.1 fails at once (no route)", r)


@test
def test_dns_lookup_fails():
    with sandboxed_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, """
import socket, json
try:
    r = str(socket.getaddrinfo("example.com", 80))
except OSError as e:
    r = "failed: " + type(e).__name__
print(json.dumps(r))
""")
        check(r.startswith("failed"), "DNS lookup fails", r)


@test
def test_host_secrets_unreadable():
    gw = gateway_pid()
    with sandboxed_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, f"""
import os, json
r = {{}}
for path in ["/etc/shadow", "/root", "/proc/{gw}/environ", "/proc/{gw}/cmdline",
             "/var/lib/callisto", "/sys/kernel"]:
    try:
        if os.path.isdir(path):
            r[path] = "listed: " + str(os.listdir(path))
        else:
            r[path] = "read: " + open(path, "rb").read(64).decode("latin-1")
    except OSError as e:
        r[path] = type(e).__name__
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for name in ("environ", "cmdline"):
            try:
                if {TOKEN!r}.encode() in open(f"/proc/{{pid}}/{{name}}", "rb").read():
                    found.append(pid + "/" + name)
            except OSError:
                pass
r["token_in_proc"] = found
r["token_in_env"] = any({TOKEN!r} in v for v in os.environ.values())
r["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print(json.dumps(r))
""")
        for path in ("/etc/shadow", "/root", f"/proc/{gw}/environ", f"/proc/{gw}/cmdline",
                     "/var/lib/callisto", "/sys/kernel"):
            check(r[path] in ("FileNotFoundError", "PermissionError"), f"{path} unreadable", r[path])
        check_eq(r["token_in_proc"], [], "the token is in no /proc file the kernel sees")
        check_eq(r["token_in_env"], False, "the token is not in the kernel's environment")
        check(max(r["pids"]) < 100, "only the sandbox's own pids are visible", r["pids"])


@test
def test_other_session_workdir_unreachable():
    with sandboxed_kernel() as a, sandboxed_kernel() as b, \
            KernelWS(a["id"]) as wa, KernelWS(b["id"]) as wb:
        wa.run("open('secret.txt', 'w').write('a-secret')")
        where = run_json(wa, "import os, json; print(json.dumps(os.getcwd()))")
        r = run_json(wb, f"""
import os, json
hits = []
for root, dirs, files in os.walk("/"):
    if root.startswith("/proc"):
        dirs[:] = []
        continue
    for f in files:
        if f == "secret.txt":
            hits.append(os.path.join(root, f))
for guess in ["/var/lib/callisto/work/{a['id']}/secret.txt", "/tmp/callisto-work/{a['id']}/secret.txt"]:
    if os.path.exists(guess):
        hits.append(guess)
print(json.dumps(hits))
""")
        check_eq(r, [], f"session B finds no trace of session A's files (A works in {where})")


@test
def test_writes_outside_workdir_fail():
    with sandboxed_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, """
import json
r = {}
for path in ["/usr/evil", "/etc/evil", "/evil", "/proc/evil", "/dev/evil"]:
    try:
        open(path, "w").write("x")
        r[path] = "written"
    except OSError as e:
        r[path] = type(e).__name__
print(json.dumps(r))
""")
        for path, result in r.items():
            check(result != "written", f"write to {path} fails", result)


@test
def test_ipc_socket_cannot_be_replaced():
    with sandboxed_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, """
import json, os
from ipykernel.kernelapp import IPKernelApp
d = os.path.dirname(IPKernelApp.instance().connection_file)
r = {}
for name, act in [("symlink", lambda: os.symlink("/run/host.sock", d + "/evil")),
                  ("replace", lambda: os.replace(d + "/k-1", d + "/k-1.old")),
                  ("unlink", lambda: os.unlink(d + "/k-2"))]:
    try:
        act()
        r[name] = "done"
    except OSError as e:
        r[name] = type(e).__name__
print(json.dumps(r))
""")
        for name, result in r.items():
            check_eq(result, "PermissionError", f"{name} in the sealed ipc dir")
        check_eq(ws.run("1+1").result_text(), "2", "the kernel still answers over its sockets")


@test
def test_fork_bomb_is_bounded():
    with sandboxed_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, """
import os, time, json, errno
pids, err = [], None
for i in range(5000):
    try:
        p = os.fork()
    except OSError as e:
        err = errno.errorcode.get(e.errno); break
    if p == 0:
        time.sleep(60); os._exit(0)
    pids.append(p)
for p in pids:
    os.kill(p, 9)
for p in pids:
    os.waitpid(p, 0)
print(json.dumps([len(pids), err]))
""", timeout=120)
        check_eq(r[1], "EAGAIN", f"fork fails after {r[0]} children")
        check(r[0] < 5000, "the pids limit stopped the bomb", r[0])
        check_eq(ws.run("1+1").result_text(), "2", "the kernel survives its fork bomb")


@test
def test_memory_bomb_dies_with_a_reason():
    with sandboxed_kernel() as k, KernelWS(k["id"]) as ws:
        ws.kernel_info()
        ws.execute("chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))\n")
        died = ws.wait_for(lambda m: m["channel"] == "iopub" and m["msg_type"] == "stream"
                           and "Kernel died" in m["content"].get("text", ""), 120,
                           "iopub 'Kernel died' message")
        check("out of memory" in died["content"]["text"], "iopub names the OOM kill",
              died["content"]["text"])
        model = poll(lambda: get_kernel(k["id"]) if get_kernel(k["id"]).get("reason") else None,
                     20, what="dead kernel model with reason")
        check("out of memory (limit" in model["reason"], "model reason names the OOM kill",
              model["reason"])


@test
def test_memory_bomb_through_the_interpreter_api_says_why():
    # The kernel restarts on its own; the execution it ended must name the OOM kill, not
    # only the server log.
    r = api("POST", "/v1/contexts", {})
    check_eq(r.status, 201, "create context")
    ctx = r.json()
    try:
        r = api("POST", f"/v1/contexts/{ctx['id']}/executions",
                {"code": "chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))\n"},
                timeout=180)
        check_eq(r.status, 200, f"execution answered ({r.body[:300]!r})")
        ex = r.json()
        check_eq(ex["status"], "error", f"execution status ({ex!r})")
        check(ex["error"]["name"] in ("KernelRestarted", "KernelDead"), "a stable kind", ex["error"])
        check("out of memory (limit 256MiB)" in ex["error"]["value"], "the error names the OOM kill",
              ex["error"]["value"])
    finally:
        api("DELETE", "/v1/contexts/" + ctx["id"])


@test
def test_filling_the_disk_stops_at_the_quota():
    with sandboxed_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, """
import json, errno, os
written, err = 0, None
try:
    with open("fill.bin", "wb") as f:
        while written < (8 << 30):
            f.write(b"x" * (1 << 20))
            written += 1 << 20
            f.flush()
except OSError as e:
    err = errno.errorcode.get(e.errno)
os.remove("fill.bin")
print(json.dumps([written, err]))
""", timeout=120)
        check(r[1] in ("ENOSPC", "EFBIG"), "writing fails at the quota", r)
        check(r[0] < (8 << 30), "the quota stopped the writer", r[0])


@test
def test_gateway_cannot_be_signalled_or_traced():
    gw = gateway_pid()
    with sandboxed_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, f"""
import os, json, signal, ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = {{}}
try:
    os.kill({gw}, signal.SIGTERM)
    r["kill"] = "sent"
except OSError as e:
    r["kill"] = type(e).__name__
for target in (1, {gw}):
    rc = libc.ptrace(16, target, None, None)  # PTRACE_ATTACH
    r["ptrace %d" % target] = "attached" if rc == 0 else os.strerror(ctypes.get_errno())
print(json.dumps(r))
""")
        check_eq(r["kill"], "ProcessLookupError", "the gateway's pid does not exist in the sandbox")
        for key, value in r.items():
            check(value not in ("sent", "attached"), key, value)
    check_eq(api("GET", "/api").status, 200, "the gateway is alive")


@test
def test_namespaces_and_raw_sockets_denied():
    with sandboxed_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, """
import ctypes, os, socket, json
libc = ctypes.CDLL(None, use_errno=True)
r = {}
for name, flags in [("user", 0x10000000), ("net", 0x40000000), ("mount", 0x00020000)]:
    rc = libc.unshare(flags)
    r["unshare " + name] = "ok" if rc == 0 else os.strerror(ctypes.get_errno())
for name, args in [("packet", (socket.AF_PACKET, socket.SOCK_RAW, 0)),
                   ("raw", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
                   ("raw6", (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6))]:
    try:
        socket.socket(*args).close()
        r[name] = "ok"
    except OSError as e:
        r[name] = type(e).__name__
print(json.dumps(r))
""")
        for key, value in r.items():
            check(value != "ok", f"{key} denied", value)


@test
def test_gateway_and_a_second_session_still_work():
    check_eq(api("GET", "/api").status, 200, "GET /api")
    with sandboxed_kernel() as k, KernelWS(k["id"], "v1") as ws:
        check_eq(ws.run("6*7").result_text(), "42", "a fresh session computes")


if __name__ == "__main__":
    sys.exit(run_tests())
