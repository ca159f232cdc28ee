#!/usr/bin/python3
"""What a kernel forked from the zygote costs in its own process, before its first message:
the Python of ipykernel's start and the pages it copies from the zygote. No gateway, no jail,
no other process competing, so the figures move with the zygote's Python only and a change to
launcher/zygote/zygote_helpers.py can be measured beside its predecessor in a minute.

  /usr/bin/python3 bench/zygote_fork_start.py [--kernels N] [--source DIR] [--out OUT.jsonl]

This process plays the zygote as callisto-zygote does: it defines the helpers from DIR (default:
this checkout), preloads numpy, pandas, matplotlib and matplotlib.pyplot, then forks N kernels
one after another (default 20), each in its own directory and home on tmpfs, running
`_callisto_run_kernel` as a fork of the zygote does, after faulting in the pages the zygote's
rehearsed start wrote (as launcher/zygote/page_prefault.cpp does, one madvise per range). Each
kernel records, as its event loop starts (ipykernel's IPKernelApp.start: initialize done, the
first message next):
  ms      wall time since the fork returned in the child
  cpu_ms  its CPU time (all threads, user + system) since the fork
  faults  its minor page faults since the fork: nearly all copies of the zygote's pages
A jupyter_client then waits for its kernel_info_reply and shuts it down. Prints one JSON line
(appended to --out too) with the medians and every sample; the first kernel is left out of the
medians (it pays for what the zygote's first fork warms).

To compare two versions: run it in each checkout (`git worktree add /tmp/old REV`), alternating.
"""

import argparse
import datetime
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

PRELOAD = ["numpy", "pandas", "matplotlib", "matplotlib.pyplot"]


def define_helpers(source):
    for name in ("launcher/kernelspec/ipykernel_bootstrap.py", "launcher/zygote/zygote_helpers.py"):
        with open(os.path.join(source, name)) as f:
            exec(compile(f.read(), name, "exec"), globals())


def cpu_ms():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (usage.ru_utime + usage.ru_stime) * 1000


def record_when_the_loop_starts(path, started, cpu_at_fork, faults_at_fork):
    """In the kernel: write the figures as IPKernelApp.start begins."""
    from ipykernel.kernelapp import IPKernelApp

    start = IPKernelApp.start

    def start_recorded(app):
        figures = {"ms": (time.perf_counter() - started) * 1000,
                   "cpu_ms": cpu_ms() - cpu_at_fork,
                   "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_at_fork}
        with open(path + ".part", "w") as f:
            json.dump(figures, f)
        os.rename(path + ".part", path)  # whole, or not there
        return start(app)

    IPKernelApp.start = start_recorded


def fault_in_start_writes():
    """What callisto-zygote's fork does first (launcher/zygote/page_prefault.cpp): the pages
    the zygote's rehearsed start wrote, faulted in by madvise(MADV_POPULATE_WRITE)."""
    import ctypes

    pairs = _callisto_start_writes  # noqa: F821 - defined by define_helpers
    if not pairs:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    for i in range(0, len(pairs), 2):
        libc.madvise(pairs[i], pairs[i + 1], 23)  # MADV_POPULATE_WRITE


def fork_kernel(root, index):
    work = os.path.join(root, f"k{index}")
    home = os.path.join(work, "home")
    os.makedirs(home)
    connection = os.path.join(work, "kernel.json")
    with open(connection, "w") as f:  # ports 0: the kernel binds its own and writes them back
        json.dump({"shell_port": 0, "iopub_port": 0, "stdin_port": 0, "control_port": 0,
                   "hb_port": 0, "ip": "127.0.0.1", "key": os.urandom(16).hex(),
                   "transport": "tcp", "signature_scheme": "hmac-sha256"}, f)
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8",
           "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", connection]
    figures = os.path.join(work, "figures.json")
    pid = os.fork()
    if pid == 0:
        started = time.perf_counter()
        code = 1
        try:
            # What the fork inherited is the zygote's: count from here.
            faults_at_fork = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            cpu_at_fork = cpu_ms()
            fault_in_start_writes()
            os.chdir(work)
            log = os.open(os.path.join(work, "kernel.log"), os.O_WRONLY | os.O_CREAT, 0o600)
            os.dup2(log, 1)
            os.dup2(log, 2)
            record_when_the_loop_starts(figures, started, cpu_at_fork, faults_at_fork)
            code = _callisto_run_kernel(argv, env)  # noqa: F821 - defined by define_helpers
        finally:
            os._exit(code)
    return pid, connection, figures, work


def serve_and_stop(pid, connection, figures, timeout=60):
    """Once the kernel recorded its figures (its connection file, ports and all, is written
    before), its kernel_info_reply, then its shutdown."""
    import jupyter_client

    deadline = time.monotonic() + timeout
    while not os.path.exists(figures):
        if os.waitpid(pid, os.WNOHANG)[0]:
            raise RuntimeError("the kernel exited before its loop started")
        if time.monotonic() > deadline:
            raise TimeoutError("the kernel's loop did not start")
        time.sleep(0.02)
    client = jupyter_client.BlockingKernelClient(connection_file=connection)
    client.load_connection_file()
    client.start_channels()
    client.wait_for_ready(timeout=timeout)
    client.shutdown()
    client.stop_channels()


def commit_of(source, paths):
    """The checkout's commit, "+changes" after it if any of `paths` differs from it."""
    git = ["git", "-C", source]
    commit = subprocess.run(git + ["rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    if subprocess.run(git + ["status", "--porcelain"] + paths,
                      capture_output=True, text=True).stdout.strip():
        commit += "+changes"
    return commit


def emit(line, out):
    """The JSON line on stdout, and appended to OUT if given."""
    text = json.dumps(line)
    print(text)
    if out:
        with open(out, "a") as f:
            f.write(text + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--kernels", type=int, default=20)
    parser.add_argument("--source", default=here, help="the checkout whose helpers to run")
    parser.add_argument("--out", help="append the JSON line to this file too")
    args = parser.parse_args()

    define_helpers(args.source)
    loaded, failed, seconds, python = _callisto_preload(PRELOAD)  # noqa: F821
    if failed:
        print(f"preload failed: {failed}", file=sys.stderr)
        return 1
    # On tmpfs, as a sandboxed kernel's home and workdir are: on a disk, IPython's history
    # database alone (its fsyncs) made each start 10 ms slower than any kernel's.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    root = tempfile.mkdtemp(prefix="callisto-fork-start-", dir=shm)
    samples = []
    try:
        for index in range(args.kernels):
            pid, connection, figures, work = fork_kernel(root, index)
            try:
                serve_and_stop(pid, connection, figures)
                os.waitpid(pid, 0)
            except BaseException:
                print(open(os.path.join(work, "kernel.log")).read(), file=sys.stderr)
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):  # reaped already
                    pass
                raise
            with open(figures) as f:
                samples.append(json.load(f))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    counted = samples[1:] or samples
    commit = commit_of(args.source, ["launcher"])
    line = {"bench": "zygote_fork_start",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "source": os.path.abspath(args.source), "commit": commit, "python": python,
            "preloaded": loaded, "kernels": len(samples), "loadavg": os.getloadavg()[0],
            **{f"{key}_p50": round(statistics.median(s[key] for s in counted), 2)
               for key in ("ms", "cpu_ms", "faults")},
            "samples": [{k: round(v, 2) for k, v in s.items()} for s in samples]}
    emit(line, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
