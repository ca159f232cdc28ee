"""Escape attempts against Callisto's kernel sandbox (issue 3). Each attack runs as
kernel code through the gateway's API and must fail; afterwards the gateway and a
second session must still work. docs/security.md lists the defences. The fork bomb, the
memory bomb, the disk fill, network access and reads outside the workdir are also run as
bash scripts ("language": "bash" executions on /v1, issue 16) in a Python context, which
runs them in its kernel's sandbox.

Run against a server started with small limits, e.g.
  callisto --memory-limit=256MiB --pids-limit=64 --disk-quota=64MiB
(tests/e2e/e2e_tests.cpp does). Every kernel attacked must have started as
CALLISTO_E2E_LAUNCH says: "zygote" (the default: forked by callisto-zygote) or "exec"
(bwrap; a server with --zygote=off). Never targets a real address: the egress test
uses TEST-NET-1 (192.0.2.1), which must fail before any packet leaves.
"""

import os
import sys
import threading
import time
import urllib.parse

from e2e_client import (BASE_URL, api, callisto_only, check, check_eq, gateway_args, get_kernel,
                        gateway_pid, launch_info, launched_context, launched_kernel, poll,
                        process_tree, run_code, run_json, run_tests, test, KernelWS, TOKEN)

# How the kernels under attack must have started: "zygote" (forked by callisto-zygote, the
# default) or "exec" (bwrap, with --zygote=off), so that a pass says which sandbox held.
LAUNCH = os.environ.get("CALLISTO_E2E_LAUNCH", "zygote")
# The limits the server under test was started with (see the module's docstring).
PIDS_LIMIT = 64
DISK_QUOTA = 64 << 20
# An execution's answer: its deadline, the interrupt's grace and a restart, on a loaded machine.
V1_TIMEOUT = 150


def sandboxed_kernel():
    """A fresh kernel started as LAUNCH says, deleted on exit."""
    return launched_kernel(LAUNCH)


@test
def test_the_kernels_under_attack_start_as_expected():
    with sandboxed_kernel() as k:
        check_eq(k["callisto"]["launch"], LAUNCH, "the kernel model's callisto.launch")
        print(f"  kernels under attack start by {LAUNCH}")
        # IPython's history is kept in memory: no file in the workdir, no thread to write it
        # (which, at a full disk, printed its failure into the next cell).
        with KernelWS(k["id"]) as ws:
            r = run_json(ws, "import json, threading\nhm = get_ipython().history_manager\n"
                             "print(json.dumps([str(hm.hist_file), sorted(type(t).__name__ "
                             "for t in threading.enumerate())]))")
        check_eq(r[0], ":memory:", "the history's database")
        check("HistorySavingThread" not in r[1], "no history saving thread", r[1])
        # `ps` shows each kernel's command line: no 3 KB bootstrap in it (an exec'd kernel
        # reads it from a file in its runtime directory).
        for pid in process_tree(k["callisto"]["pid"]):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            check(max(map(len, args)) < 512, "no long argument in the kernel's command line",
                  [a[:80] for a in args if len(a) >= 512])


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
def test_command_lines_name_no_host_path():
    """/proc/1/cmdline listed host paths: bwrap's whole command line (the workdir under
    --workdir-root, the runtime directory under --runtime-dir), or callisto-jail-init's
    scratch directory; a fork's /proc/self/cmdline showed the zygote's arguments, an exec'd
    kernel's its connection file's host path. (The runtime directory is still mounted at its
    host path, where the ipc sockets are: docs/security.md.)"""
    args = gateway_args(gateway_pid())
    roots = [args[flag] for flag in ("workdir-root", "runtime-dir") if flag in args]
    check(len(roots) == 2, "the server names both roots on its command line", args)
    with sandboxed_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, """
import json
r = {p: open(f"/proc/{p}/cmdline", "rb").read().decode("latin-1") for p in ("1", "self")}
print(json.dumps(r))
""")
        for name in ("1", "self"):
            for root in roots:
                check(root not in r[name], f"/proc/{name}/cmdline names no {root}",
                      r[name][:3000])


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
def test_memory_bomb_through_the_interpreter_api_says_why(context):
    # The kernel restarts on its own; the execution it ended must name the OOM kill, not
    # only the server log.
    ex = run_code(context, "chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))\n")
    check_eq(ex["status"], "error", f"execution status ({ex!r})")
    check(ex["error"]["name"] in ("KernelRestarted", "KernelDead"), "a stable kind", ex["error"])
    check("out of memory (limit 256MiB)" in ex["error"]["value"], "the error names the OOM kill",
          ex["error"]["value"])


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


# --------------------------------------------------------------------------
# The same attacks as bash scripts: "language": "bash" executions on /v1 in a Python context
# (issue 16). The script runs in the context's kernel, so in its sandbox and under its limits.

def sandboxed_context():
    """A fresh /v1 context whose Python kernel started as LAUNCH says, deleted on exit."""
    return launched_context(LAUNCH)


def bash(ctx, script, **fields):
    return run_code(ctx, script, language="bash", **fields)


def summary(ex):
    return repr({k: (ex.get(k)[-600:] if isinstance(ex.get(k), str) else ex.get(k))
                 for k in ("status", "stdout", "stderr", "error", "state_preserved")})


def keep_state(ctx):
    """Sets a Python variable that still_usable() looks for."""
    ex = run_code(ctx, "kept = 'yes'")
    check_eq(ex["status"], "ok", "set a Python variable " + summary(ex))


def still_usable(ctx, root):
    """After an attack: the same kernel process (no restart) kept its Python state, the
    context runs bash again, and the gateway answers."""
    check_eq(launch_info(ctx["kernel_id"])["pid"], root, "the same kernel process")
    ex = run_code(ctx, "kept")
    check_eq((ex["status"], ex["results"][0]["data"]["text/plain"] if ex["results"] else None),
             ("ok", "'yes'"), "the Python variable set before the attack " + summary(ex))
    ex = bash(ctx, "echo still-here")
    check_eq((ex["status"], ex["stdout"]), ("ok", "still-here\n"), "bash runs " + summary(ex))
    check_eq(api("GET", "/api").status, 200, "the gateway answers")


def cgroup_counter(pid, controller, v1_file, v2_file, key):
    """A counter of the cgroup host process `pid` is in, read on the host: the line `key N`
    of <v1_file> in the cgroup v1 `controller` hierarchy, or of <v2_file> in cgroup v2."""
    with open(f"/proc/{pid}/cgroup") as f:
        lines = [line.rstrip("\n").split(":", 2) for line in f]
    v1 = [path for _, names, path in lines if controller in names.split(",")]
    v2 = [path for hid, names, path in lines if hid == "0" and names == ""]
    file = (f"/sys/fs/cgroup/{controller}{v1[0]}/{v1_file}" if v1
            else f"/sys/fs/cgroup{v2[0]}/{v2_file}")
    with open(file) as f:
        for line in f:
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    raise AssertionError(f"no {key} in {file}")


def oom_kills(pid):
    """How many processes the memory cgroup of `pid` has had OOM-killed."""
    return cgroup_counter(pid, "memory", "memory.oom_control", "memory.events", "oom_kill")


@callisto_only
def test_bash_fork_bomb_is_bounded():
    with sandboxed_context() as ctx:
        root = ctx["callisto"]["pid"]
        keep_state(ctx)
        before = len(process_tree(root))
        answer = {}

        def run_the_bomb():
            try:
                # Bounded by the deadline: the interrupt stops the script's whole group.
                answer["ex"] = bash(ctx, ":(){ :|:& };:\nsleep 60", timeout=10)
            except BaseException as e:  # noqa: B902 - reported below
                answer["error"] = e

        bomb = threading.Thread(target=run_the_bomb, daemon=True)
        bomb.start()
        counts = []
        for _ in range(6):
            time.sleep(1)
            counts.append(len(process_tree(root)))
        t0 = time.monotonic()
        check_eq(api("GET", "/api").status, 200, "the gateway answers during the bomb")
        check(time.monotonic() - t0 < 10, "promptly", time.monotonic() - t0)
        bomb.join(V1_TIMEOUT)
        check("error" not in answer, "the bomb's execution answered", answer.get("error"))
        check("ex" in answer, "the bomb's execution ended")
        ex = answer["ex"]
        print(f"  processes of the kernel, {before} before the bomb, then once a second: {counts}")
        check(max(counts) - before > 20, "the bomb did run (else this test proves nothing)", counts)
        # The kernel's top process and the sandbox's init are in the count too.
        check(max(counts) <= PIDS_LIMIT + 2, "the pids limit holds the bomb", counts)
        check("fork: retry: Resource temporarily unavailable" in ex["stderr"],
              "bash was refused forks (EAGAIN)", ex["stderr"][-300:])
        check_eq((ex["status"], (ex["error"] or {}).get("name"), ex["state_preserved"]),
                 ("timeout", "KeyboardInterrupt", True),
                 "the deadline's interrupt stopped the script, not the kernel " + summary(ex))
        poll(lambda: len(process_tree(root)) <= before, 30, 0.2,
             "every process of the bomb to be gone")
        still_usable(ctx, root)


@callisto_only
def test_bash_memory_bomb_is_oom_killed_and_the_kernel_lives_on():
    with sandboxed_context() as ctx:
        root = ctx["callisto"]["pid"]
        keep_state(ctx)
        kills = oom_kills(root)
        # tail keeps the last line whole: 2 GiB without a newline, far past the 256 MiB limit.
        ex = bash(ctx, "set -o pipefail\nhead -c 2G /dev/zero | tail | wc -c")
        check_eq((ex["status"], ex["error"] and ex["error"]["name"]), ("error", "ShellError"),
                 "the script failed " + summary(ex))
        check_eq(ex["error"]["value"], "the script exited with status 137",
                 "a process of the pipeline was SIGKILLed (128 + 9)")
        check("Killed" in ex["stderr"] and "tail" in ex["stderr"], "bash says tail was killed",
              ex["stderr"])
        check(oom_kills(root) > kills, "by the OOM killer of the kernel's memory cgroup",
              kills, oom_kills(root))
        still_usable(ctx, root)


@callisto_only
def test_bash_filling_the_disk_stops_at_the_quota():
    with sandboxed_context() as ctx:
        root = ctx["callisto"]["pid"]
        keep_state(ctx)
        ex = bash(ctx, "head -c 512M /dev/zero > fill.bin")
        check_eq((ex["status"], ex["error"] and ex["error"]["name"]), ("error", "ShellError"),
                 "writing 512 MiB fails " + summary(ex))
        check(any("No space left on device" in line for line in ex["error"]["traceback"]),
              "at the quota", ex["error"]["traceback"])
        ex = bash(ctx, "stat -c size=%s fill.bin\nrm fill.bin\necho small > after.txt\n"
                       "echo after=$(cat after.txt)")
        check_eq(ex["status"], "ok", "the workdir after the fill " + summary(ex))
        # IPython's history saving thread once printed here that it could not write.
        check(ex["stdout"].startswith("size="), "nothing but the cell's own output",
              ex["stdout"][:300])
        said = dict(line.split("=", 1) for line in ex["stdout"].splitlines()
                    if line.startswith(("size=", "after=")))
        size, after = said.get("size"), said.get("after")
        check(size is not None and 0 < int(size) <= DISK_QUOTA,
              "the file is no larger than the quota", ex["stdout"][-300:])
        check_eq(after, "small", "the workdir is writable again once freed")
        still_usable(ctx, root)


@callisto_only
def test_bash_network_access_fails():
    port = urllib.parse.urlsplit(BASE_URL).port
    # Each probe: bash's /dev/tcp connect (bounded by timeout 5), its exit status, how long it
    # took (EPOCHREALTIME in microseconds) and what it said, on one line.
    script = f"""
probe() {{
  local start=${{EPOCHREALTIME//[!0-9]/}} out rc
  out=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/$0/$1" && echo connected' "$1" "$2" 2>&1); rc=$?
  echo "$1:$2|$rc|$(( (${{EPOCHREALTIME//[!0-9]/}} - start) / 1000 ))|${{out//$'\\n'/ }}"
}}
probe 192.0.2.1 80
probe 127.0.0.1 {port}
if getent hosts example.com; then echo "dns|0|0|resolved"; else echo "dns|$?|0|failed"; fi
"""
    with sandboxed_context() as ctx:
        ex = bash(ctx, script, timeout=30)
        check_eq(ex["status"], "ok", "the probes ran " + summary(ex))
        r = {}
        for line in ex["stdout"].splitlines():
            target, rc, ms, said = line.split("|", 3)
            r[target] = (int(rc), int(ms), said)
        print(f"  {r}")
        rc, ms, said = r["192.0.2.1:80"]
        check(rc != 0 and "connected" not in said and "Network is unreachable" in said,
              "TCP to 192.0.2.1 (TEST-NET-1): no route", r["192.0.2.1:80"])
        check(ms < 2000, "it fails at once, not at a timeout", ms)
        rc, ms, said = r[f"127.0.0.1:{port}"]
        check(rc != 0 and "connected" not in said and "Connection refused" in said,
              "the gateway's port on 127.0.0.1: the sandbox's own loopback, nothing listening",
              r[f"127.0.0.1:{port}"])
        check(r["dns"][0] != 0 and r["dns"][2] == "failed", "DNS resolves nothing", r["dns"])
    check_eq(api("GET", "/api").status, 200, "the gateway answers")


@callisto_only
def test_bash_reads_outside_the_workdir_fail():
    gw = gateway_pid()
    workdirs = gateway_args(gw)["workdir-root"]
    with sandboxed_context() as a, sandboxed_context() as b:
        ex = bash(a, "echo a-secret > secret_sh.txt")
        check_eq(ex["status"], "ok", "session A wrote its secret " + summary(ex))
        a_dir = f"{workdirs}/{a['kernel_id']}"
        check(os.path.isfile(f"{a_dir}/secret_sh.txt"), "A's file is at the host path B tries",
              a_dir)
        # The token for B to look for, in a file: in the script it would be in bash's cmdline.
        r = api("PUT", f"/v1/contexts/{b['id']}/files/needle.txt", TOKEN.encode())
        check_eq(r.status, 201, "upload the needle")
        paths = ["/etc/shadow", "/root", f"/proc/{gw}/environ", f"/proc/{gw}/cmdline",
                 "/var/lib/callisto", "/sys/kernel", workdirs, a_dir, f"{a_dir}/secret_sh.txt"]
        script = """
probe() {
  local out
  if [ -d "$1" ]; then out=$(ls -A "$1" 2>&1) && { echo "$1|listed: ${out//$'\\n'/ }"; return; }
  else out=$(head -c 64 "$1" 2>&1) && { echo "$1|read: ${out//$'\\n'/ }"; return; }
  fi
  echo "$1|refused: ${out//$'\\n'/ }"
}
""" + "".join(f"probe '{p}'\n" for p in paths) + """
echo own > secret_sh_own.txt  # the search must find this one: it works
# /home: /home/user is the working directory mounted again (E2B's home), found as /work.
echo "found|$(find / \\( -path /proc -o -path /sys -o -path /home \\) -prune -o -name 'secret_sh*.txt' -print \\
             2>/dev/null | tr '\\n' ' ')"
echo "token_in_proc|$(grep -laF -f needle.txt /proc/[0-9]*/environ /proc/[0-9]*/cmdline \\
                     2>/dev/null | tr '\\n' ' ')"
echo "token_in_env|$(env | grep -cF -f needle.txt)"
echo "pids|$(ls -d /proc/[0-9]* | tr -dc '0-9\\n' | sort -n | tail -1)"
"""
        ex = bash(b, script, timeout=60)
        check_eq(ex["status"], "ok", "the probes ran " + summary(ex))
        r = dict(line.split("|", 1) for line in ex["stdout"].splitlines())
        print("  " + "; ".join(f"{p}: {r[p].rsplit(': ', 1)[-1]}" for p in paths))
        for p in paths:
            check(r[p].startswith("refused:") and
                  ("No such file or directory" in r[p] or "Permission denied" in r[p]),
                  f"{p} is unreadable", r[p][:300])
        check_eq(r["found"].split(), ["/work/secret_sh_own.txt"],
                 "session B finds its own file and no trace of session A's")
        check_eq(r["token_in_proc"].strip(), "", "the token is in no /proc file the script sees")
        check_eq(r["token_in_env"], "0", "the token is not in the script's environment")
        check(int(r["pids"]) < 100, "only the sandbox's own pids are visible", r["pids"])


@test
def test_gateway_and_a_second_session_still_work():
    check_eq(api("GET", "/api").status, 200, "GET /api")
    with sandboxed_kernel() as k, KernelWS(k["id"], "v1") as ws:
        check_eq(ws.run("6*7").result_text(), "42", "a fresh session computes")


if __name__ == "__main__":
    sys.exit(run_tests())
