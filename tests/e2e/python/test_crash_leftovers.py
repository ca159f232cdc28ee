"""A gateway killed with SIGKILL cleans nothing up; the next start on the same
--workdir-root must reap what it left (issue 10, item 6). Two phases, run by the
TEST_CASE in tests/e2e/e2e_tests.cpp around the kill and the restart:

  -k before   against the first server: starts a kernel, records its uid, workdir,
              tmpfs mount, cgroups and the runtime root in $CALLISTO_E2E_STATE, and
              plants stand-ins: an orphan like a kernel whose spawn the crash
              interrupted (its uid, an argument naming its workdir; parent pid 1 once
              this script exits); an orphan whose command line names nothing, in a mount
              namespace that holds the kernel's workdir, as a sandbox left by a gateway
              without cgroups would be; and bystanders that only share the uid range
              (another instance's kernels, one in a mount namespace of its own: must
              survive).
  -k after    against the restarted server: none of it is left, the bystander
              lives, and the new server runs code.

Run as root (the gateway's sandbox needs it anyway): it reads /proc, mountinfo and
the cgroup hierarchies, and starts the stand-ins as sandbox uids.
"""

import glob
import json
import os
import subprocess

from e2e_client import (KernelWS, alive, check, check_eq, create_kernel, delete_kernel,
                        gateway_args, pids_of_uids, poll, real_uid, run_tests, test)

STATE = os.environ["CALLISTO_E2E_STATE"]


def pids_of_uid(uid):
    return pids_of_uids(uid, uid)


def workdir_mounts(path):
    with open("/proc/self/mountinfo") as f:
        return [line for line in f if line.split()[4] == path]


def kernel_cgroups(kernel_id):
    # Named after the kernel's runtime dir, "<id[:8]>-<hex>", with or without an instance tag.
    return sorted(d for d in glob.glob("/sys/fs/cgroup/*/callisto/*") + glob.glob("/sys/fs/cgroup/callisto/*")
                  if kernel_id[:8] in os.path.basename(d))


def stand_in(uid, *args):
    """A detached sleeper running as uid, with args in its command line."""
    p = subprocess.Popen(["/usr/bin/python3", "-c", "import time; time.sleep(3600)", *args],
                         user=uid, group=uid, extra_groups=[], start_new_session=True, cwd="/",
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p.pid


def stand_in_own_mounts(uid, unmount=None):
    """A detached `sleep 3600` running as uid in a mount namespace of its own (a copy of this
    one's, so it holds the workdir tmpfs), with `unmount` lazily unmounted there first. Its
    command line names no path."""
    drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "3600"]
    command = ["unshare", "--mount", "--propagation", "private"]
    if unmount:
        command += ["sh", "-c", 'umount -l "$0" && exec "$@"', unmount, *drop]
    else:
        command += drop
    p = subprocess.Popen(command, start_new_session=True, cwd="/", stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # The sleeper is the same process once it runs as uid (unshare, sh and setpriv exec).
    poll(lambda: real_uid(p.pid) == uid, 10, what=f"the stand-in {p.pid} to run as {uid}")
    return p.pid


@test
def test_before_crash_a_kernel_and_its_traces_exist():
    args = gateway_args()
    root, runtime = args["workdir-root"], args["runtime-dir"]
    first, last = (int(x) for x in args["sandbox-uids"].split("-"))
    k = create_kernel()
    with KernelWS(k["id"]) as ws:
        ex = ws.run("import os; print(os.getuid(), os.getcwd())")
        uid, cwd = ex.stdout().split()
    uid = int(uid)
    check_eq(cwd, "/work", "the kernel runs in its workdir")
    check(first <= uid <= last, "the kernel runs as a sandbox uid", uid)
    workdir = os.path.join(root, k["id"])
    check(os.path.isdir(workdir), "its workdir exists", workdir)
    check(workdir_mounts(workdir), "its workdir is a tmpfs mount", workdir)
    check(pids_of_uid(uid), "processes run as its uid", uid)
    cgroups = kernel_cgroups(k["id"])
    if os.path.isdir("/sys/fs/cgroup/memory") or os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        check(cgroups, "it has cgroups")
    check(os.path.isdir(runtime), "the runtime root exists", runtime)

    orphan = stand_in(uid, "--bind", workdir, "/work")
    sandboxed_orphan = stand_in_own_mounts(uid)
    bystander_uid = first + 50
    bystander = stand_in(bystander_uid, "--bind", "/tmp/another-instance-root/" + k["id"], "/work")
    sandboxed_bystander = stand_in_own_mounts(bystander_uid, unmount=workdir)
    with open(STATE, "w") as f:
        json.dump({"kernel_id": k["id"], "uid": uid, "workdir": workdir, "cgroups": cgroups,
                   "runtime_root": runtime, "orphan": orphan, "bystander": bystander,
                   "sandboxed_orphan": sandboxed_orphan,
                   "sandboxed_bystander": sandboxed_bystander,
                   "bystander_uid": bystander_uid}, f)


@test
def test_after_restart_nothing_of_the_dead_gateway_is_left():
    with open(STATE) as f:
        s = json.load(f)
    try:
        # The server reaps before it listens: by now all of it is gone (the wait is for the
        # host's init to collect the killed orphan).
        poll(lambda: not alive(s["orphan"]), 30, what="the orphan stand-in to be gone")
        poll(lambda: not alive(s["sandboxed_orphan"]), 30,
             what="the stand-in holding the workdir in its mount namespace to be gone")
        check_eq(pids_of_uid(s["uid"]), [], f"processes running as the old kernel's uid {s['uid']}")
        check_eq(workdir_mounts(s["workdir"]), [], "tmpfs mounts left on the old workdir")
        check(not os.path.exists(s["workdir"]), "the old workdir is gone", s["workdir"])
        left = [d for d in s["cgroups"] if os.path.exists(d)]
        check_eq(left, [], "cgroups of the old kernel left")
        check(not os.path.exists(s["runtime_root"]), "the old runtime root is gone", s["runtime_root"])
        check(alive(s["bystander"]), "a process of the same uid range that is not this instance's lives")
        check(alive(s["sandboxed_bystander"]),
              "so does one in a mount namespace of its own that holds none of its workdirs")
    finally:
        for name in ("bystander", "sandboxed_bystander"):
            try:
                os.kill(s[name], 9)
            except OSError:
                pass
    k = create_kernel()
    try:
        with KernelWS(k["id"]) as ws:
            check_eq(ws.run("6*7").result_text(), "42", "the restarted gateway runs code")
    finally:
        delete_kernel(k["id"])


if __name__ == "__main__":
    raise SystemExit(run_tests())
