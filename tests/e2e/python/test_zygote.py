#!/usr/bin/python3
"""Zygote kernels (issue 13): python3 kernels forked from a long-lived `callisto-zygote` that
has ipykernel, numpy, pandas and matplotlib imported, instead of exec'd through bwrap.

Two groups, chosen with -k:

  test_zygote_*    a server with the zygote on (the default) and small limits, e.g.
                     callisto --memory-limit=256MiB --pids-limit=64 --disk-quota=64MiB
                   Forked kernels are independent (seeds, uuids, HMAC keys, uids, pids,
                   workdirs), preloaded, still draw inline, and every attack a fork server
                   invites fails: reading a sibling's or pid 1's memory, signalling or tracing
                   the sibling or the zygote, the gateway's environment, the zygote's
                   descriptors or another kernel's secrets inherited with the zygote's memory.
                   The last test kills the zygote and waits for its successor.
  test_fallback_*  kernels started the old way (bwrap):
                     test_fallback_opt_out_*     a kernelspec with metadata.callisto.zygote
                                                 false, named by CALLISTO_E2E_OPT_OUT_KERNEL,
                                                 on a server with the zygote on;
                     test_fallback_zygote_off_*  a server with --zygote=off.

The host-side checks read the gateway's, the zygote's and the kernels' /proc entries (fds,
memory, namespaces), so the client runs as root, as the server does. Kernel code never gets a
secret it is checked for: the host compares, so finding a needle in memory means a leak.

Environment, besides e2e_client's:
  CALLISTO_E2E_SECRET_NAME, CALLISTO_E2E_SECRET_VALUE
                               a variable planted in the server's environment only
  CALLISTO_E2E_RUNTIME_DIR         the server's --runtime-dir (the zygote's argv names it)
  CALLISTO_E2E_OPT_OUT_KERNEL  a kernelspec with "metadata": {"callisto": {"zygote": false}}

tests/e2e/e2e_tests.cpp runs both groups.
"""

import base64
import json
import os
import signal
import sys
import uuid

from e2e_client import (KERNEL_NAME, TOKEN, KernelWS, SkipTest, alive, api, check, check_eq,
                        create_kernel, delete_kernel, gateway_pid, kernel,
                        launch_info, launched_kernel, poll, process_tree, real_uid, run_json,
                        run_tests, test)

SECRET_NAME = os.environ.get("CALLISTO_E2E_SECRET_NAME", "")
SECRET_VALUE = os.environ.get("CALLISTO_E2E_SECRET_VALUE", "")
RUNTIME_DIR = os.environ.get("CALLISTO_E2E_RUNTIME_DIR", "")
OPT_OUT_KERNEL = os.environ.get("CALLISTO_E2E_OPT_OUT_KERNEL", "")

# What may be in a kernel's environment (launcher/kernelspec/kernel_command.cpp passes these host
# variables through; launcher/sandbox/sandbox.cpp sets the next, bwrap PWD; IPython and ipykernel the
# last).
PASSED_THROUGH = {"PATH", "LANG", "LC_ALL", "TZ", "HOME"}
SET_BY_THE_SANDBOX = {"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "SHELL", "PWD"}
SET_BY_IPYTHON = {"TERM", "CLICOLOR", "PAGER", "GIT_PAGER", "MPLBACKEND", "PYDEVD_USE_FRAME_EVAL"}
EXPECTED_NAMES = PASSED_THROUGH | SET_BY_THE_SANDBOX | SET_BY_IPYTHON

NAMESPACES = ("pid", "net", "ipc", "uts", "mnt", "cgroup")
MEM_CHUNK = 4 << 20

_first_zygote = []  # the zygote the suite met first: the attacks must not have replaced it


def zygote_kernel(body=None):
    """A fresh kernel forked by the zygote (creates are retried while it is not ready)."""
    return launched_kernel("zygote", body=body)


def kernel_code(body, **args):
    """Kernel code with ARGS (JSON-able values) defined first."""
    return f"import json\nARGS = json.loads({json.dumps(args)!r})\n" + body


# --------------------------------------------------------------------------
# The host's view: /proc of the gateway, the zygote and the kernels
# --------------------------------------------------------------------------

def read_proc(pid, name):
    """/proc/PID/NAME as bytes, or None (gone, or not readable)."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return None


def cmdline(pid):
    raw = read_proc(pid, "cmdline")
    return raw.rstrip(b"\0").split(b"\0") if raw else []


def status(pid):
    out = {}
    for line in (read_proc(pid, "status") or b"").decode(errors="replace").splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def parent_of(pid):
    ppid = status(pid).get("PPid")
    return int(ppid) if ppid else None


def host_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def namespace(pid, kind):
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return None


def is_zygote_binary(pid):
    args = cmdline(pid)
    return bool(args) and args[0].endswith(b"callisto-zygote")


def zygotes(gw):
    """The gateway's zygotes: its children running callisto-zygote in its own pid namespace.
    (A forked kernel shows the program's name alone, and is pid 1 of a namespace of its own.)"""
    found = []
    for pid in host_pids():
        if not is_zygote_binary(pid) or parent_of(pid) != gw:
            continue
        if namespace(pid, "pid") != namespace(gw, "pid"):
            continue
        if RUNTIME_DIR and not any(RUNTIME_DIR.encode() in a for a in cmdline(pid)):
            continue
        found.append(pid)
    return found


def the_zygote(gw, timeout=90):
    """The gateway's one zygote (python3 is the only kernelspec it forks here)."""
    def one():
        found = zygotes(gw)
        return found[0] if len(found) == 1 else None
    pid = poll(one, timeout, 0.2, f"exactly one callisto-zygote child of the gateway {gw}")
    if not _first_zygote:
        _first_zygote.append(pid)
    return pid


def kernel_python(top):
    """Host pid of the python kernel below a kernel's top process: pid 2 of its namespace."""
    def find():
        for pid in process_tree(top):
            nspid = status(pid).get("NSpid", "").split()
            if len(nspid) >= 2 and nspid[-1] == "2":
                return pid
        return None
    return poll(find, 20, 0.2, f"the python kernel (pid 2 inside) below host pid {top}")


def fd_links(pid):
    """{fd: link} of a host process, read as root."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError as e:
        raise AssertionError(f"cannot list /proc/{pid}/fd from the host (run as root): {e}")
    out = {}
    for name in names:
        try:
            out[int(name)] = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            pass
    return out


def inodes(links, kind):
    """Inode numbers of the "socket:[N]" (kind "socket") or "pipe:[N]" links."""
    prefix = kind + ":["
    return {int(link[len(prefix):-1]) for link in links if link.startswith(prefix)}


def unix_socket_paths(pid, wanted):
    """Bound names of the unix sockets with the `wanted` inodes, from the process's own
    /proc/PID/net/unix ("@name" for an abstract one)."""
    paths = []
    for line in (read_proc(pid, "net/unix") or b"").decode(errors="replace").splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and int(fields[6]) in wanted:
            paths.append(fields[7])
    return paths


def memory_hits(pid, needles):
    """Which needles ({name: bytes}) are in the writable memory of host process pid, read
    through /proc/PID/mem: {name: [mapping, ...]}."""
    maps = read_proc(pid, "maps")
    check(maps is not None, f"/proc/{pid}/maps readable from the host (run as root)")
    keep = max(len(n) for n in needles.values()) - 1
    hits = {}
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError as e:
        raise AssertionError(f"cannot open /proc/{pid}/mem from the host (run as root): {e}")
    try:
        for line in maps.decode(errors="replace").splitlines():
            fields = line.split(None, 5)
            if len(fields) < 2 or not fields[1].startswith("rw"):
                continue  # secrets that arrive at run time live in writable memory
            where = fields[5].strip() if len(fields) > 5 else "[anonymous]"
            if where in ("[vvar]", "[vvar_vclock]", "[vsyscall]"):
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            pos, tail = lo, b""
            while pos < hi:
                try:
                    data = os.pread(fd, min(MEM_CHUNK, hi - pos), pos)
                except OSError:
                    break
                if not data:
                    break
                block = tail + data
                for name, needle in needles.items():
                    if needle in block:
                        hits.setdefault(name, set()).add(f"{where} {fields[0]}")
                tail = block[-keep:] if keep > 0 else b""
                pos += len(data)
    finally:
        os.close(fd)
    return {name: sorted(where) for name, where in hits.items()}


def gateway_environment(gw):
    raw = read_proc(gw, "environ")
    check(raw is not None, "the gateway's environment is readable from the host (run as root)")
    return parse_environ(raw.decode(errors="replace"))


def parse_environ(text):
    out = {}
    for entry in text.split("\0"):
        if "=" in entry:
            name, _, value = entry.partition("=")
            out[name] = value
    return out


# --------------------------------------------------------------------------
# Kernel code
# --------------------------------------------------------------------------

IDENTITY = r"""
import os, random, socket, uuid
import numpy
from ipykernel.kernelapp import IPKernelApp
# The key the kernel signs with (its connection file is sealed once the kernel is up).
print(json.dumps({
    "random": [random.random() for _ in range(4)],
    "numpy": numpy.random.rand(4).tolist(),
    "uuid4": [str(uuid.uuid4()) for _ in range(2)],
    "session_key": get_ipython().kernel.session.key.decode(),
    "connection_file": IPKernelApp.instance().connection_file,
    "uid": os.getuid(), "gid": os.getgid(), "pid": os.getpid(), "ppid": os.getppid(),
    "cwd": os.getcwd(), "hostname": socket.gethostname(),
}))
"""

# The sandbox's device nodes work (a nodev mount would refuse them) and a child can use them.
DEVICES = r"""
import subprocess
devices = {}
for path, mode in (("/dev/null", "wb"), ("/dev/zero", "rb"), ("/dev/full", "rb"),
                   ("/dev/random", "rb"), ("/dev/urandom", "rb")):
    try:
        with open(path, mode, buffering=0) as f:
            f.write(b"x") if "w" in mode else f.read(4)
        devices[path] = "ok"
    except OSError as e:
        devices[path] = type(e).__name__
try:
    devices["subprocess with DEVNULL"] = subprocess.run(
        ["/bin/true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL).returncode
except OSError as e:
    devices["subprocess with DEVNULL"] = type(e).__name__
"""

CREDENTIALS = r"""
import ctypes, errno, os, platform, resource, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
def status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict((k, v.strip()) for k, _, v in (l.partition(":") for l in f.read().splitlines()))
FIELDS = ("Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")
me = status("self")
init = status(1)
def err():
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
# A user namespace of its own would give the kernel capabilities there (a forked kernel has no
# user namespace of bwrap's around it): each way to make one must fail. A child made anyway
# exits at once.
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
ns = {}
rc = libc.unshare(CLONE_NEWUSER)
ns["unshare(CLONE_NEWUSER)"] = "made" if rc == 0 else err()
SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(platform.machine())
if SYS_CLONE:
    rc = libc.syscall(L(SYS_CLONE), L(CLONE_NEWUSER | SIGCHLD), L(0), L(0), L(0), L(0))
    if rc == 0:
        os._exit(0)
    ns["clone(CLONE_NEWUSER)"] = "made" if rc > 0 else err()
    if rc > 0:
        os.waitpid(rc, 0)
# struct clone_args: flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
# set_tid, set_tid_size, cgroup.
clone_args = (ctypes.c_uint64 * 11)(CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0, 0, 0, 0)
rc = libc.syscall(L(435), clone_args, ctypes.c_size_t(ctypes.sizeof(clone_args)))  # clone3
if rc == 0:
    os._exit(0)
ns["clone3(CLONE_NEWUSER)"] = "made" if rc > 0 else err()
if rc > 0:
    os.waitpid(rc, 0)
print(json.dumps({
    "self": {k: me.get(k) for k in FIELDS},
    "init": {k: init.get(k) for k in FIELDS},
    "init_environ_owner": os.stat("/proc/1/environ").st_uid,
    "uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups(),
    "pid": os.getpid(), "ppid": os.getppid(),
    "rlimits": {n: resource.getrlimit(getattr(resource, n))
                for n in ("RLIMIT_NPROC", "RLIMIT_CORE", "RLIMIT_NOFILE", "RLIMIT_FSIZE")},
    "hostname": socket.gethostname(), "cwd": os.getcwd(),
    "new_user_namespace": ns,
}))
"""

# Reads another process's memory three ways: /proc/PID/mem, process_vm_readv, and stealing
# its descriptors with pidfd_getfd. The address is this process's copy of `sys`: every fork of
# the zygote has the same layout, so it is mapped in the sibling, pid 1 and the zygote too.
MEMORY_ATTACK = r"""
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
libc.process_vm_readv.restype = ctypes.c_ssize_t
libc.process_vm_readv.argtypes = [ctypes.c_int, ctypes.POINTER(iovec), ctypes.c_ulong,
                                  ctypes.POINTER(iovec), ctypes.c_ulong, ctypes.c_ulong]
ADDR = id(sys)
def name(e):
    return errno.errorcode.get(e, str(e))
def own(pid):
    # This process or one it started: its own to read.
    seen = set()
    while pid > 1 and pid not in seen:
        if pid == os.getpid():
            return True
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return False
    return False
def proc_mem(pid):
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError as e:
        return "open: " + name(e.errno)
    try:
        return "opened, read %d bytes" % len(os.pread(fd, 64, ADDR))
    except OSError as e:
        return "opened, read: " + name(e.errno)
    finally:
        os.close(fd)
def vm_readv(pid):
    buf = ctypes.create_string_buffer(64)
    local = iovec(ctypes.cast(buf, ctypes.c_void_p), 64)
    remote = iovec(ADDR, 64)
    n = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    return "read %d bytes" % n if n >= 0 else name(ctypes.get_errno())
def steal_fds(pid):
    pidfd = libc.syscall(ctypes.c_long(434), ctypes.c_long(pid), ctypes.c_long(0))  # pidfd_open
    if pidfd < 0:
        return "pidfd_open: " + name(ctypes.get_errno())
    stolen, last = [], None
    try:
        for target in range(32):
            fd = libc.syscall(ctypes.c_long(438), ctypes.c_long(pidfd), ctypes.c_long(target),
                              ctypes.c_long(0))  # pidfd_getfd
            if fd >= 0:
                stolen.append(target)
                os.close(fd)
            else:
                last = name(ctypes.get_errno())
    finally:
        os.close(pidfd)
    return "stole fds %s" % stolen if stolen else "pidfd_getfd: %s" % last
targets = {"pid %s" % p: int(p) for p in os.listdir("/proc") if p.isdigit() and not own(int(p))}
targets.update(ARGS["host_pids"])
r = {label: {"/proc/PID/mem": proc_mem(pid), "process_vm_readv": vm_readv(pid),
             "pidfd_getfd": steal_fds(pid)} for label, pid in targets.items()}
print(json.dumps({"visible": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
                  "results": r}))
"""

SIGNAL_ATTACK = r"""
import ctypes, errno, os, signal
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_ATTACH, PTRACE_DETACH, PTRACE_SEIZE = 16, 17, 0x4206
def kill(pid, sig):
    try:
        os.kill(pid, sig)
        return "sent"
    except OSError as e:
        return type(e).__name__
def trace(pid, request):
    if libc.ptrace(request, pid, None, None) == 0:
        libc.ptrace(PTRACE_DETACH, pid, None, None)
        return "attached"
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
r = {}
for label, pid in ARGS["host_pids"].items():
    r[label] = {"signal 0": kill(pid, 0), "PTRACE_ATTACH": trace(pid, PTRACE_ATTACH),
                "PTRACE_SEIZE": trace(pid, PTRACE_SEIZE), "SIGKILL": kill(pid, signal.SIGKILL)}
r["pid 1"] = {"PTRACE_ATTACH": trace(1, PTRACE_ATTACH), "PTRACE_SEIZE": trace(1, PTRACE_SEIZE)}
r["every process"] = {"kill(-1, SIGKILL)": kill(-1, signal.SIGKILL)}
print(json.dumps(r))
"""

INIT_ATTACK = r"""
import os
def read(path):
    try:
        f = open(path, "rb", buffering=0)
    except OSError as e:
        return type(e).__name__
    with f:
        try:
            return "opened, read %r" % f.read(64)[:40]
        except OSError as e:
            return "opened (%s)" % type(e).__name__
def attempt(fn, *args):
    try:
        return "done: %r" % (fn(*args),)
    except OSError as e:
        return type(e).__name__
r = {}
for name in ("environ", "mem", "maps", "auxv"):
    r["/proc/1/" + name] = read("/proc/1/" + name)
r["listdir /proc/1/fd"] = attempt(os.listdir, "/proc/1/fd")
for name in ("cwd", "root", "exe"):
    r["readlink /proc/1/" + name] = attempt(os.readlink, "/proc/1/" + name)
print(json.dumps(r))
"""

ENVIRONMENT = r"""
import os
with open("/proc/self/environ", "rb") as f:
    block = f.read().decode("latin-1")
print(json.dumps({"environ": dict(os.environ), "block": block}))
"""

# Each descriptor: its link, and for one naming a file, whether the sandbox sees that file at
# that path (same device and inode; for a device node, the same device under /dev). A file of
# the zygote's, opened outside the jail, fails that.
DESCRIPTORS = r"""
import os, stat
own_mounts = set()
for p in ("/tmp", "/dev/shm", "/work"):
    try:
        own_mounts.add(os.stat(p).st_dev)
    except OSError:
        pass
fds, outside = {}, []
for name in os.listdir("/proc/self/fd"):
    try:
        link = os.readlink("/proc/self/fd/" + name)
        st = os.fstat(int(name))
    except OSError:
        continue  # the listing's own descriptor, closed by now
    fds[name] = link
    if not link.startswith("/"):
        continue
    deleted = link.endswith(" (deleted)")
    path = link[:-len(" (deleted)")] if deleted else link
    try:
        seen = os.stat(path)
    except OSError:
        seen = None
    if stat.S_ISCHR(st.st_mode):
        ok = (path.startswith("/dev/") and seen is not None and stat.S_ISCHR(seen.st_mode)
              and seen.st_rdev == st.st_rdev)
    elif seen is not None and (seen.st_dev, seen.st_ino) == (st.st_dev, st.st_ino):
        ok = True
    else:
        ok = deleted and st.st_dev in own_mounts  # a scratch file of its own, unlinked
    if not ok:
        outside.append([name, link])
print(json.dumps({"fds": fds, "outside": outside}))
"""

CONNECT = r"""
import socket
r = {}
for path in ARGS["paths"]:
    address = "\0" + path[1:] if path.startswith("@") else path
    for kind in ("SOCK_STREAM", "SOCK_SEQPACKET", "SOCK_DGRAM"):
        s = socket.socket(socket.AF_UNIX, getattr(socket, kind))
        try:
            s.settimeout(2)
            s.connect(address)
            r[path + " " + kind] = "connected"
        except OSError as e:
            r[path + " " + kind] = type(e).__name__
        finally:
            s.close()
print(json.dumps(r))
"""

# The sandbox as the kernel sees it, for comparing a forked kernel with an exec'd one.
SANDBOX_VIEW = DEVICES + r"""
import os, resource, socket
from ipykernel.kernelapp import IPKernelApp
# Where its ipc sockets are: the runtime directory at its host path (an exec'd kernel names
# its connection file under /run/kernel, the same directory bound a second time).
runtime = os.path.dirname(IPKernelApp.instance().ip)
with open("/proc/self/status") as f:
    st = dict((k, v.strip()) for k, _, v in (l.partition(":") for l in f.read().splitlines()))
FLAGS = {"ro", "rw", "nosuid", "nodev", "noexec"}
mounts = []
with open("/proc/self/mountinfo") as f:
    for line in f:
        pre, _, post = line.partition(" - ")
        fields, fs_type = pre.split(), post.split()[0]
        point = fields[4].replace(runtime, "<runtime dir>")
        mounts.append([point, fs_type, sorted(FLAGS & set(fields[5].split(",")))])
umask = os.umask(0o022)
os.umask(umask)
print(json.dumps({
    "status": {k: st.get(k) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
                                      "NoNewPrivs", "Seccomp")},
    "uid_is_root": os.getuid() == 0, "groups": os.getgroups(),
    "pid": os.getpid(), "ppid": os.getppid(), "cwd": os.getcwd(),
    "hostname": socket.gethostname(), "umask": umask,
    "rlimits": {n: resource.getrlimit(getattr(resource, n))
                for n in dir(resource) if n.startswith("RLIMIT_")},
    "mounts": sorted(mounts),
    # bwrap's /dev/core (a link to /proc/kcore, unreadable anyway) is not part of the contract.
    "root": sorted(os.listdir("/")), "dev": sorted(set(os.listdir("/dev")) - {"core"}),
    "etc": sorted(os.listdir("/etc")),
    "devices": devices,
    "environ": dict(os.environ),
}))
"""


def check_sibling_and_zygote_unharmed(wb, b, gw, zygote):
    """After an attack from one kernel: its sibling, the zygote and the gateway all carry on."""
    check_eq(wb.run("6*7").result_text(), "42", "the sibling kernel still computes")
    check(alive(b["callisto"]["pid"]), "the sibling's top process is alive",
          b["callisto"]["pid"])
    check(alive(zygote) and is_zygote_binary(zygote) and parent_of(zygote) == gw,
          "the zygote is alive and still the gateway's", zygote)
    check_eq(api("GET", "/api").status, 200, "the gateway serves")


# --------------------------------------------------------------------------
# Zygote on (the default)
# --------------------------------------------------------------------------

@test
def test_zygote_kernels_are_forks_of_the_zygote():
    gw = gateway_pid()
    with zygote_kernel() as k, KernelWS(k["id"]) as ws:
        zygote = the_zygote(gw)
        check(alive(zygote) and real_uid(zygote) is not None, "the zygote runs", zygote)
        if RUNTIME_DIR:
            check(any(RUNTIME_DIR.encode() in a for a in cmdline(zygote)),
                  "the zygote's argv names the server's runtime directory", cmdline(zygote))
        top = k["callisto"]["pid"]
        # The jail's pid 1 is a small program of its own, not a second copy of the zygote.
        args = cmdline(top)
        check(bool(args) and args[0].endswith(b"callisto-jail-init"),
              "the kernel's top process is the jail's init, callisto-jail-init", args)
        check_eq(parent_of(top), zygote, "parent of the kernel's top process")
        check(namespace(top, "pid") != namespace(zygote, "pid"),
              "the kernel's top process is pid 1 of a pid namespace of its own")
        python = kernel_python(top)
        check(is_zygote_binary(python), "the python kernel is a fork of callisto-zygote too",
              cmdline(python))
        r = run_json(ws, kernel_code(IDENTITY))
        check_eq([r["pid"], r["ppid"]], [2, 1], "the kernel's pid and parent inside")
        check_eq(real_uid(python), r["uid"], "the python kernel's host uid")
        check_eq(real_uid(top), r["uid"], "the jail's pid 1 runs as the kernel's uid")
        check_eq(r["cwd"], "/work", "the kernel's working directory")
        check_eq(r["hostname"], "kernel", "the kernel's hostname")
        check_eq(ws.run("6*7").result_text(), "42", "the forked kernel computes")
        print(f"  zygote {zygote}, kernel top {top}, python {python}, "
              f"pss_bytes {k['callisto']['pss_bytes']}")


@test
def test_zygote_two_kernels_are_independent():
    with zygote_kernel() as a, zygote_kernel() as b, \
            KernelWS(a["id"]) as wa, KernelWS(b["id"]) as wb:
        ra = run_json(wa, kernel_code(IDENTITY))
        rb = run_json(wb, kernel_code(IDENTITY))
        check(ra["random"] != rb["random"], "random.random() differs (reseeded after the fork)",
              ra["random"], rb["random"])
        check(ra["numpy"] != rb["numpy"], "numpy.random.rand() differs (reseeded from the OS)",
              ra["numpy"], rb["numpy"])
        check(not set(ra["uuid4"]) & set(rb["uuid4"]), "uuid.uuid4() values differ",
              ra["uuid4"], rb["uuid4"])
        check(ra["session_key"] and rb["session_key"], "both kernels sign with a key")
        check(ra["session_key"] != rb["session_key"], "the HMAC keys differ")
        check(ra["connection_file"] != rb["connection_file"], "the connection files differ",
              ra["connection_file"])
        check(ra["uid"] != rb["uid"], "the kernels run as different uids", ra["uid"], rb["uid"])
        check(ra["uid"] != 0 and rb["uid"] != 0, "neither runs as root", ra["uid"], rb["uid"])
        pa, pb = a["callisto"]["pid"], b["callisto"]["pid"]
        check(pa != pb, "the models name different host pids", pa, pb)
        check(real_uid(kernel_python(pa)) != real_uid(kernel_python(pb)),
              "the host sees two uids", real_uid(kernel_python(pa)), real_uid(kernel_python(pb)))

        name = f"zygote-{uuid.uuid4().hex}.txt"
        wa.run(f"open('/work/{name}', 'w').write('only in A')")
        check_eq(run_json(wa, kernel_code("import os\nprint(json.dumps(os.path.exists(ARGS['p'])))",
                                          p="/work/" + name)),
                 True, "kernel A wrote a file in its /work")
        # B's own runtime dir is bound at its host path; A's, beside it on the host, is not.
        seen = run_json(wb, kernel_code(r"""
import os
from ipykernel.kernelapp import IPKernelApp
mine = os.path.dirname(IPKernelApp.instance().connection_file)
print(json.dumps({"file": os.path.exists(ARGS["file"]),
                  "listed": ARGS["name"] in os.listdir("/work"),
                  "runtime_dir": os.path.exists(ARGS["runtime_dir"]),
                  "beside_mine": sorted(os.listdir(os.path.dirname(mine)))}))
""", file="/work/" + name, name=name, runtime_dir=os.path.dirname(ra["connection_file"])))
        check_eq(seen["file"] or seen["listed"], False, "kernel B sees A's file in /work")
        check_eq(seen["runtime_dir"], False, "kernel B sees A's runtime dir")
        check_eq(seen["beside_mine"], [os.path.basename(os.path.dirname(rb["connection_file"]))],
                 "the runtime dirs kernel B sees (only its own)")


@test
def test_zygote_preloads_numpy_pandas_and_matplotlib():
    with zygote_kernel() as k, KernelWS(k["id"]) as ws:
        first = run_json(ws, "import sys, json\nprint(json.dumps({m: m in sys.modules for m in "
                             "('ipykernel', 'numpy', 'pandas', 'matplotlib')}))")
        check_eq(first, {"ipykernel": True, "numpy": True, "pandas": True, "matplotlib": True},
                 "modules imported before the user's first import")
        took = run_json(ws, "import time, json\nt0 = time.perf_counter()\n"
                            "import numpy, pandas, matplotlib.pyplot\n"
                            "print(json.dumps(time.perf_counter() - t0))")
        # A sanity bound, not a benchmark: exec'd, these imports take seconds.
        check(took < 1.0, "import numpy, pandas, matplotlib.pyplot takes well under a second",
              f"{took:.3f} s")
        print(f"  imports took {took * 1000:.0f} ms")


@test
def test_zygote_kernels_take_the_prebuilt_shell_as_their_own():
    """The zygote builds IPython's shell once (launcher/zygote/zygote_helpers.py); each kernel
    takes it over with its own home, profile, history and __main__. The zygote stays one
    thread: a thread it started would not survive the fork, and could hold a lock when it runs."""
    gw = gateway_pid()
    code = ("import json, os, __main__\nip = get_ipython()\n"
            "print(json.dumps({'prebuilt': getattr(ip, '_callisto_prebuilt', False), "
            "'home': ip.home_dir, 'env_home': os.environ['HOME'], "
            "'profile': ip.profile_dir.location, 'history': str(ip.history_manager.hist_file), "
            "'main': __main__.__dict__ is ip.user_ns, 'ident': ip.kernel.ident}))")
    with zygote_kernel() as a, KernelWS(a["id"]) as wa, \
            zygote_kernel() as b, KernelWS(b["id"]) as wb:
        ra, rb = run_json(wa, code), run_json(wb, code)
        for name, r in (("A", ra), ("B", rb)):
            check(r["prebuilt"], f"kernel {name} took the zygote's shell")
            check_eq(r["home"], r["env_home"], f"kernel {name}'s shell has its home")
            check(r["profile"].startswith(r["env_home"] + "/"),
                  f"kernel {name}'s profile is in its home", r["profile"])
            check_eq(r["history"], ":memory:", f"kernel {name}'s history is its own, in memory")
            check(r["main"], f"kernel {name}'s __main__ is its namespace")
        check(ra["ident"] != rb["ident"], "each shell serves its own kernel")
        wa.run("zygote_history_marker = 1")
        check("zygote_history_marker" not in wb.run("%history").stdout(),
              "B's history holds nothing of A's")
        zygote = the_zygote(gw)
        check_eq(os.listdir(f"/proc/{zygote}/task"), [str(zygote)], "the zygote runs one thread")


@test
def test_zygote_matplotlib_still_draws_inline():
    with zygote_kernel() as k, KernelWS(k["id"]) as ws:
        ex = ws.run("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()", timeout=60)
        check_eq(ex.status, "ok", "the plotting cell ran")
        images = [m["content"]["data"]["image/png"] for m in ex.of_type("display_data")
                  if "image/png" in m["content"].get("data", {})]
        backend = ws.run("import matplotlib\nmatplotlib.get_backend()").result_text()
        check(images, "plt.show() sends a display_data with image/png", f"backend {backend}",
              [m["msg_type"] for m in ex.iopub])
        check(base64.b64decode(images[0]).startswith(b"\x89PNG\r\n\x1a\n"), "the image is a PNG")


@test
def test_zygote_kernel_devices_work():
    with zygote_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, kernel_code(DEVICES + "\nprint(json.dumps(devices))"))
        for what, result in r.items():
            check(result in ("ok", 0), f"{what} works in a forked kernel", result)


@test
def test_zygote_kernel_credentials_limits_and_namespaces():
    gw = gateway_pid()
    with zygote_kernel() as a, zygote_kernel() as b, KernelWS(a["id"]) as wa:
        zygote = the_zygote(gw)
        r = run_json(wa, kernel_code(CREDENTIALS))
        check(r["uid"] != 0 and r["euid"] != 0 and r["gid"] != 0, "the kernel is not root", r)
        check_eq(r["groups"], [], "supplementary groups")
        for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            check_eq(r["self"][field], "0000000000000000", f"the kernel's {field}")
        check_eq(r["self"]["NoNewPrivs"], "1", "the kernel's NoNewPrivs")
        check_eq(r["self"]["Seccomp"], "2", "the kernel's Seccomp (a filter)")
        check_eq([r["pid"], r["ppid"]], [2, 1], "the kernel's pid and parent")
        # The jail's pid 1: the kernel's uid, no capabilities, and not dumpable (its private
        # /proc entries then belong to root; /proc/1 itself keeps the uid).
        check_eq(r["init"]["Uid"], r["self"]["Uid"], "pid 1 runs as the kernel's uid")
        for field in ("CapPrm", "CapEff", "CapBnd", "CapAmb"):
            check_eq(r["init"][field], "0000000000000000", f"pid 1's {field}")
        check_eq(r["init_environ_owner"], 0,
                 "/proc/1/environ belongs to root: pid 1 is not dumpable")
        nproc, core = r["rlimits"]["RLIMIT_NPROC"], r["rlimits"]["RLIMIT_CORE"]
        check(nproc[0] == nproc[1] and 0 < nproc[1], "RLIMIT_NPROC is set", nproc)
        check_eq(core, [0, 0], "RLIMIT_CORE")
        check_eq(r["hostname"], "kernel", "hostname")
        check_eq(r["cwd"], "/work", "working directory")
        for how, result in r["new_user_namespace"].items():
            check(result != "made", f"{how} is denied", result)

        # From the host: every namespace the sandbox promises is the kernel's own.
        pa = kernel_python(a["callisto"]["pid"])
        pb = kernel_python(b["callisto"]["pid"])
        for kind in NAMESPACES:
            mine = namespace(pa, kind)
            check(mine is not None, f"the kernel's {kind} namespace is readable from the host")
            for other, who in ((zygote, "the zygote"), (gw, "the gateway"), (pb, "the sibling")):
                check(mine != namespace(other, kind),
                      f"the kernel's {kind} namespace is not {who}'s", mine)
        cgroup = read_proc(pa, "cgroup")
        check(cgroup != read_proc(zygote, "cgroup"), "the kernel is not in the zygote's cgroup",
              cgroup)
        check(cgroup != read_proc(pb, "cgroup"), "the kernel is not in its sibling's cgroup",
              cgroup)


@test
def test_zygote_sibling_memory_cannot_be_read():
    gw = gateway_pid()
    with zygote_kernel() as a, zygote_kernel() as b, \
            KernelWS(a["id"]) as wa, KernelWS(b["id"]) as wb:
        zygote = the_zygote(gw)
        top_b = b["callisto"]["pid"]
        targets = {"sibling's pid 1 (host pid)": top_b,
                   "sibling's python (host pid)": kernel_python(top_b),
                   "zygote (host pid)": zygote}
        r = run_json(wa, kernel_code(MEMORY_ATTACK, host_pids=targets), timeout=120)
        check(1 in r["visible"], "pid 1 is visible to the kernel (and attacked)", r["visible"])
        check(max(r["visible"]) < 100, "only the kernel's own pid namespace is visible",
              r["visible"])
        for host_pid in targets.values():
            check(host_pid not in r["visible"] or host_pid == 1,
                  "a host pid of the attack collides with one inside; rerun", host_pid)
        for target, results in r["results"].items():
            check(results["/proc/PID/mem"].startswith("open: "),
                  f"{target}: /proc/PID/mem cannot even be opened", results["/proc/PID/mem"])
            check(not results["process_vm_readv"].startswith("read"),
                  f"{target}: process_vm_readv fails", results["process_vm_readv"])
            check(not results["pidfd_getfd"].startswith("stole"),
                  f"{target}: pidfd_getfd takes no descriptor", results["pidfd_getfd"])
        check_sibling_and_zygote_unharmed(wb, b, gw, zygote)


@test
def test_zygote_sibling_and_zygote_cannot_be_signalled_or_traced():
    gw = gateway_pid()
    with zygote_kernel() as a, zygote_kernel() as b, \
            KernelWS(a["id"]) as wa, KernelWS(b["id"]) as wb:
        zygote = the_zygote(gw)
        top_b = b["callisto"]["pid"]
        targets = {"sibling's pid 1": top_b, "sibling's python": kernel_python(top_b),
                   "zygote": zygote}
        r = run_json(wa, kernel_code(SIGNAL_ATTACK, host_pids=targets))
        for target in targets:
            for how in ("signal 0", "SIGKILL"):
                check_eq(r[target][how], "ProcessLookupError",
                         f"{how} to the {target}'s host pid: no such process in the sandbox")
            for how in ("PTRACE_ATTACH", "PTRACE_SEIZE"):
                check(r[target][how] != "attached", f"{how} of the {target} fails", r[target][how])
        for how, result in r["pid 1"].items():
            check(result != "attached", f"{how} of the jail's pid 1 fails", result)
        check_eq(r["every process"]["kill(-1, SIGKILL)"], "ProcessLookupError",
                 "kill(-1, SIGKILL) finds nobody to kill")
        check_eq(wa.run("1+1").result_text(), "2", "the attacker itself still runs")
        check_sibling_and_zygote_unharmed(wb, b, gw, zygote)


@test
def test_zygote_jail_init_is_opaque_to_the_kernel():
    with zygote_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, kernel_code(INIT_ATTACK))
        for what, result in r.items():
            check_eq(result, "PermissionError",
                     f"{what} (pid 1 holds a copy of the zygote's memory)")
        top = k["callisto"]["pid"]
        check(real_uid(top) not in (None, 0), "pid 1 runs unprivileged", real_uid(top))
        check_eq(os.stat(f"/proc/{top}/environ").st_uid, 0,
                 "pid 1 is not dumpable (its /proc/PID/environ belongs to root, host view)")


@test
def test_zygote_kernel_environment_holds_nothing_of_the_gateway():
    gw = gateway_pid()
    gateway_env = gateway_environment(gw)
    if SECRET_NAME:
        check_eq(gateway_env.get(SECRET_NAME), SECRET_VALUE,
                 "the harness planted its variable in the gateway's environment")
    with zygote_kernel() as k, KernelWS(k["id"]) as ws:
        r = run_json(ws, kernel_code(ENVIRONMENT))
        # os.environ, and the environment block the process started with: for a fork, the
        # zygote's, which the kernel reads at /proc/self/environ.
        for what, env in (("os.environ", r["environ"]),
                          ("/proc/self/environ", parse_environ(r["block"]))):
            if SECRET_NAME:
                check(SECRET_NAME not in env, f"the gateway's {SECRET_NAME} is not in {what}")
                check(not any(SECRET_VALUE in v for v in env.values()),
                      f"its value is in no variable of {what}")
            check(not any(TOKEN in v for v in env.values()), f"the token is not in {what}")
            same = sorted(n for n, v in env.items()
                          if gateway_env.get(n) == v and n not in EXPECTED_NAMES)
            check_eq(same, [], f"variables of the gateway's found in {what}")
        # The block is the zygote's own start-up environment, with variables of its own.
        check_eq(sorted(set(r["environ"]) - EXPECTED_NAMES), [], "unexpected variables")
        if SECRET_VALUE:
            check(SECRET_VALUE not in r["block"], "the planted value is not in the kernel's block")
        check_eq(r["environ"].get("HOME"), "/work", "HOME")


@test
def test_zygote_kernel_inherits_no_descriptor():
    gw = gateway_pid()
    with zygote_kernel() as a, zygote_kernel() as b, KernelWS(a["id"]) as wa:
        zygote = the_zygote(gw)
        z_links = fd_links(zygote).values()
        z_sockets, z_pipes = inodes(z_links, "socket"), inodes(z_links, "pipe")
        gw_sockets = inodes(fd_links(gw).values(), "socket")
        r = run_json(wa, kernel_code(DESCRIPTORS))
        links = r["fds"].values()
        check(not inodes(links, "socket") & z_sockets,
              "the kernel holds none of the zygote's sockets", r["fds"], sorted(z_sockets))
        check(not inodes(links, "pipe") & z_pipes,
              "the kernel holds none of the zygote's pipes", r["fds"], sorted(z_pipes))
        check(not inodes(links, "socket") & gw_sockets,
              "the kernel holds none of the gateway's sockets", r["fds"])
        check_eq(r["outside"], [], "every file the kernel holds open is one its sandbox shows")
        check_eq([n for n, link in r["fds"].items() if link == "anon_inode:[pidfd]"], [],
                 "the kernel holds no pidfd")

        # The host's view of both processes of each kernel. The jail's pid 1 may share a pipe
        # with the zygote (its own reports), never a socket; the python kernel neither.
        top_a, top_b = a["callisto"]["pid"], b["callisto"]["pid"]
        python_a, python_b = kernel_python(top_a), kernel_python(top_b)
        check_eq(sorted(inodes(fd_links(top_a).values(), "socket") & z_sockets), [],
                 "the jail's pid 1 holds none of the zygote's sockets")
        host_a = fd_links(python_a).values()
        with_zygote = (inodes(host_a, "socket") & z_sockets) | (inodes(host_a, "pipe") & z_pipes)
        check_eq(sorted(with_zygote), [],
                 "the python kernel shares no socket or pipe with the zygote (host view)")
        host_b = fd_links(python_b).values()
        shared = ((inodes(host_a, "socket") & inodes(host_b, "socket"))
                  | (inodes(host_a, "pipe") & inodes(host_b, "pipe")))
        check_eq(sorted(shared), [], "the two kernels share no socket or pipe")


@test
def test_zygote_memory_holds_no_secret_of_another_kernel():
    """What a fork inherits is the zygote's memory at the time of the fork: it must hold
    nothing of the kernels forked before (their environment, their keys) or of the gateway."""
    gw = gateway_pid()
    secret_a = "kernel-a-secret-" + uuid.uuid4().hex
    with zygote_kernel({"name": KERNEL_NAME, "env": {"KERNEL_E2E_SECRET": secret_a}}) as a, \
            KernelWS(a["id"]) as wa:
        got = run_json(wa, "import os, json\n"
                           "print(json.dumps(os.environ.get('KERNEL_E2E_SECRET')))")
        check_eq(got, secret_a, "kernel A got its KERNEL_ variable")
        key_a = run_json(wa, kernel_code(IDENTITY))["session_key"]
        # B is forked after A (its own env keeps the pool out of it).
        with zygote_kernel({"name": KERNEL_NAME, "env": {"KERNEL_E2E_OTHER": "b"}}) as b, \
                KernelWS(b["id"]) as wb:
            check_eq(wb.run("6*7").result_text(), "42", "kernel B runs")
            zygote = the_zygote(gw)
            needles = {"kernel A's KERNEL_E2E_SECRET": secret_a.encode(),
                       "kernel A's HMAC key": key_a.encode(),
                       "the gateway's token": TOKEN.encode()}
            if SECRET_VALUE:
                needles["the gateway's planted variable"] = SECRET_VALUE.encode()
            scanned = {"the zygote": [zygote],
                       "kernel B": process_tree(b["callisto"]["pid"])}
            for who, pids in scanned.items():
                for pid in pids:
                    hits = memory_hits(pid, needles)
                    check_eq(hits, {}, f"secrets in the memory of {who} (host pid {pid})")
            for pid in process_tree(a["callisto"]["pid"]):
                hits = memory_hits(pid, {k: v for k, v in needles.items() if "gateway" in k})
                check_eq(hits, {}, f"the gateway's secrets in kernel A's memory (host pid {pid})")


@test
def test_zygote_control_socket_is_out_of_reach():
    gw = gateway_pid()
    with zygote_kernel() as k, KernelWS(k["id"]) as ws:
        zygote = the_zygote(gw)
        wanted = inodes(fd_links(zygote).values(), "socket") | inodes(fd_links(gw).values(),
                                                                       "socket")
        paths = sorted(set(unix_socket_paths(zygote, wanted) + unix_socket_paths(gw, wanted)))
        if not paths:
            print("  the zygote and the gateway have no named unix socket (socketpairs only)")
            return
        r = run_json(ws, kernel_code(CONNECT, paths=paths))
        for what, result in r.items():
            check(result != "connected", f"the kernel cannot connect to {what}", result)


@test
def test_zygote_after_the_attacks_the_gateway_and_the_zygote_carry_on():
    gw = gateway_pid()
    check_eq(api("GET", "/api").status, 200, "GET /api")
    with zygote_kernel() as k, KernelWS(k["id"], "v1") as ws:
        check_eq(ws.run("6*7").result_text(), "42", "a fresh forked kernel computes")
        zygote = the_zygote(gw)
        if _first_zygote:
            check_eq(zygote, _first_zygote[0], "the zygote is the one the suite began with")


@test
def test_zygote_a_dead_zygote_is_replaced_and_kernels_keep_starting():
    """Runs last: it kills the zygote. Its kernels die with it (their death signal); the
    gateway must notice, start kernels the old way meanwhile, and start a new zygote."""
    gw = gateway_pid()
    with zygote_kernel() as a:
        zygote = the_zygote(gw)
        os.kill(zygote, signal.SIGKILL)
        poll(lambda: read_proc(zygote, "status") is None, 20, 0.1,
             "the gateway to reap its killed zygote")

        # Meanwhile: a kernel starts (the old way unless a new zygote is already up) and runs.
        c = create_kernel()
        try:
            info = launch_info(c["id"])
            with KernelWS(c["id"]) as wc:
                wc.kernel_info(timeout=60)
                check_eq(wc.run("6*7").result_text(), "42",
                         f"a kernel started as the zygote died computes ({info['launch']})")
        finally:
            delete_kernel(c["id"])

        # The forked kernel died with its zygote (its death signal). Within a bound the gateway
        # must say so, or have restarted it: it may not list it as alive while it cannot answer.
        def settled():
            r = api("GET", f"/api/kernels/{a['id']}")
            if r.status == 404:
                return "forgotten (404)"
            check_eq(r.status, 200, "GET the zygote's old kernel")
            if r.json()["execution_state"] == "dead":
                return "dead"
            try:
                with KernelWS(a["id"]) as wa:
                    return "answers" if wa.run("1+1", timeout=10).result_text() == "2" else None
            except Exception:  # noqa: BLE001 - refused, closed or timed out: not settled yet
                return None
        print(f"  the zygote's kernel afterwards: {poll(settled, 90, 1, 'kernel A dead or back')}")

    successor = poll(lambda: [z for z in zygotes(gw) if z != zygote], 120, 0.5,
                     "a new zygote")
    check_eq(len(successor), 1, "one new zygote")
    with zygote_kernel() as k, KernelWS(k["id"]) as ws:
        check_eq(parent_of(k["callisto"]["pid"]), successor[0], "forked by the new zygote")
        check_eq(ws.run("6*7").result_text(), "42", "a kernel of the new zygote computes")
    check_eq(api("GET", "/api").status, 200, "the gateway serves")


# --------------------------------------------------------------------------
# The old way: a kernelspec that opts out, and --zygote=off
# --------------------------------------------------------------------------

def check_exec_kernel(k, ws):
    """k was started the old way: bwrap and python exec'd, nothing preloaded."""
    info = k["callisto"]
    check_eq(info["launch"], "exec", "callisto.launch")
    check(not is_zygote_binary(info["pid"]), "the top process is no fork of the zygote",
          cmdline(info["pid"]))
    python = kernel_python(info["pid"])
    check(any(b"ipykernel_launcher" in a for a in cmdline(python)),
          "the kernel is an exec'd python -m ipykernel_launcher", cmdline(python))
    check_eq(ws.run("6*7").result_text(), "42", "the kernel computes")
    check_eq(ws.run("import sys\n'numpy' in sys.modules").result_text(), "False",
             "nothing was preloaded")


def opt_out_kernel():
    if not OPT_OUT_KERNEL:
        raise SkipTest("CALLISTO_E2E_OPT_OUT_KERNEL names no kernelspec")
    return OPT_OUT_KERNEL


@test
def test_fallback_opt_out_kernelspec_starts_the_old_way():
    name = opt_out_kernel()
    r = api("GET", f"/api/kernelspecs/{name}")
    check_eq(r.status, 200, f"GET /api/kernelspecs/{name}")
    metadata = r.json()["spec"]["metadata"]
    check(metadata.get("callisto", {}).get("zygote") is False,
          "the spec opts out (metadata.callisto.zygote false)", metadata)
    with launched_kernel("exec", name=name) as k, KernelWS(k["id"]) as ws:
        check_exec_kernel(k, ws)
    with zygote_kernel() as k, KernelWS(k["id"]) as ws:
        check_eq(ws.run("6*7").result_text(), "42", "python3 is still forked on this server")


@test
def test_fallback_opt_out_forked_and_execd_kernels_see_the_same_sandbox():
    name = opt_out_kernel()
    with zygote_kernel() as z, launched_kernel("exec", name=name) as e, \
            KernelWS(z["id"]) as wz, KernelWS(e["id"]) as we:
        forked = run_json(wz, kernel_code(SANDBOX_VIEW))
        execd = run_json(we, kernel_code(SANDBOX_VIEW))
        # The fork may lack what bwrap and ipykernel's start-up set (PWD, PYDEVD_*), but has
        # nothing more, and the same values.
        env_f, env_e = forked.pop("environ"), execd.pop("environ")
        check_eq(sorted(set(env_f) - set(env_e)), [], "variables only the forked kernel has")
        check_eq({n: env_f[n] for n in sorted(env_f) if n in env_e},
                 {n: env_e[n] for n in sorted(env_f) if n in env_e},
                 "the environment's values (forked, exec'd)")
        if set(env_e) - set(env_f):
            print(f"  only the exec'd kernel has {sorted(set(env_e) - set(env_f))}")
        differences = {}
        for key in forked:
            if key == "mounts":
                f = {json.dumps(m) for m in forked[key]}
                e = {json.dumps(m) for m in execd[key]}
                if f != e:
                    differences[key] = {"forked only": sorted(f - e), "exec'd only": sorted(e - f)}
            elif forked[key] != execd[key]:
                differences[key] = {"forked": forked[key], "exec'd": execd[key]}
        check_eq(differences, {}, "where the forked kernel's sandbox differs from the exec'd one")


@test
def test_fallback_zygote_off_starts_every_kernel_the_old_way():
    if os.environ.get("CALLISTO_E2E_ZYGOTE") != "off":
        raise SkipTest("for a server with --zygote=off (CALLISTO_E2E_ZYGOTE=off)")
    gw = gateway_pid()
    # One from the pool (if any), one fresh (its env keeps the pool out).
    with launched_kernel("exec") as a, \
            launched_kernel("exec", body={"name": KERNEL_NAME, "env": {"KERNEL_E2E": "1"}}) as b, \
            KernelWS(a["id"]) as wa, KernelWS(b["id"]) as wb:
        check_exec_kernel(a, wa)
        check_exec_kernel(b, wb)
    check_eq(zygotes(gw), [], "no callisto-zygote runs")
    with kernel() as k:
        check_eq(launch_info(k["id"])["launch"], "exec", "a plain kernel() too")


if __name__ == "__main__":
    sys.exit(run_tests())
