#!/usr/bin/python3
"""The least a kernel forked from the zygote has cost on this machine, before any of ipykernel's
start: what a fork of the zygote, its exit, and the ZeroMQ context, sockets and threads every
kernel must make after the fork take, beside the same work in a process that is not new. Where
these exceed a target, leaving out more of ipykernel's start cannot reach it on this machine.

  /usr/bin/python3 bench/zygote_fork_floor.py [--runs N] [--out OUT.jsonl]

This process plays the zygote as bench/zygote_fork_start.py does (the helpers of this checkout,
numpy, pandas, matplotlib and matplotlib.pyplot preloaded, IPython's shell and the kernel's
application built, the start rehearsed), then measures, each N times (default 10; the first
and the slowest left out of the median), the CPU a forked child used in all (user + system, from
wait4, its exit included) and its minor faults:
  fork_exit              the child exits at once: its copy of the zygote's page tables and
                         their teardown (fork_in_zygote_ms: what os.fork took in the parent)
  prefault_exit          it faults in the pages a start writes (as page_prefault.cpp), exits
  zmq_threads            a ZeroMQ context, the five sockets a kernel binds (shell, control and
                         stdin ROUTER, iopub PUB, heartbeat REP) on 127.0.0.1, three threads
                         started and joined, then exit (zmq_threads_ready_ms: wall time from
                         the fork to sockets bound and threads started, the part of a start)
  zmq_threads_pinned     the same, the child first pinned to the CPU it runs on (its threads
                         then share that CPU, so its copies on write flush no other CPU's TLB)
  zmq_threads_warm       the same work again and again in this process, no fork: its CPU alone
  run_cell               no kernel: the zygote's shell runs the one-shot line
                         `import numpy as np; print(np.arange(3).sum())`, its output sent
                         back through a pipe, then exit
And what one page costs, in a 32 MiB private anonymous mapping this process wrote (µs per 4 KiB
page, one byte per page, in a Python loop whose own cost the first figure bounds; one fork each):
  page_read_warm         read again by this process
  page_read_fork         read for the first time by a forked child (its page tables copied)
  page_write_fork        written for the first time by a forked child (a copy on write)
  page_populate_fork     faulted in by madvise(MADV_POPULATE_WRITE) in a forked child, then
  page_write_populated   written by it
Prints one JSON line (appended to --out too).
"""

import argparse
import contextlib
import ctypes
import datetime
import io
import json
import mmap
import os
import platform
import resource
import statistics
import sys
import threading
import time
import traceback

import zygote_fork_start as zygote  # this directory's: the same zygote, preloaded the same way

PAGE = 4096
MADV_POPULATE_WRITE = 23
ONE_SHOT_LINE = "import numpy as np; print(np.arange(3).sum())"


def cpu_ms(usage):
    return (usage.ru_utime + usage.ru_stime) * 1000


def zmq_sockets_and_threads():
    import zmq

    context = zmq.Context()
    sockets = []
    for kind in (zmq.ROUTER, zmq.ROUTER, zmq.ROUTER, zmq.PUB, zmq.REP):
        socket = context.socket(kind)
        socket.bind_to_random_port("tcp://127.0.0.1")
        sockets.append(socket)
    go = threading.Event()
    threads = [threading.Thread(target=go.wait) for _ in range(3)]
    for thread in threads:
        thread.start()
    ready = time.perf_counter()  # as a kernel once it can answer: sockets bound, threads up
    go.set()
    for thread in threads:
        thread.join()
    for socket in sockets:
        socket.close(linger=0)
    context.term()
    return repr(ready).encode()


def pinned(work):
    """`work`, in a process pinned first to the CPU it is on."""
    def run():
        with open("/proc/thread-self/stat", "rb") as f:  # field 39: the CPU it last ran on
            cpu = int(f.read().rsplit(b")", 1)[1].split()[36])
        os.sched_setaffinity(0, {cpu})
        return work()
    return run


def run_one_shot_line():
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        result = zygote._callisto_shell.run_cell(ONE_SHOT_LINE, store_history=False)
    if not result.success or output.getvalue() != "3\n":
        raise RuntimeError(f"the one-shot line printed {output.getvalue()!r} "
                           f"({result.error_in_exec or result.error_before_exec!r})")
    return output.getvalue().encode()


def in_a_fork(work):
    """A child that does `work` and exits without Python's finalization, as a kernel of the
    zygote does; its CPU, faults and what it sent back (`work`'s bytes), and when the fork
    began. A child that fails prints why and exits 1, which fails the run."""
    read, write = os.pipe()
    started = time.perf_counter()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        raise
    if pid == 0:
        code = 1
        try:
            os.close(read)
            os.write(write, work() or b"-")
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    forking_ms = (time.perf_counter() - started) * 1000
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        sent = pipe.read()
    _, status, usage = os.wait4(pid, 0)
    if status != 0 or not sent:
        raise RuntimeError(f"the child failed (wait status {status})")
    return {"cpu": cpu_ms(usage), "faults": usage.ru_minflt, "forking": forking_ms,
            "sent": sent, "started": started}


def median_of(samples):
    kept = sorted(samples[1:])[:-1] if len(samples) > 3 else samples
    return round(statistics.median(kept), 2)


def fork_figures(runs):
    works = {
        "fork_exit": lambda: None,
        "prefault_exit": zygote.fault_in_start_writes,
        "zmq_threads": zmq_sockets_and_threads,
        "zmq_threads_pinned": pinned(zmq_sockets_and_threads),
        "run_cell": run_one_shot_line,
    }
    figures = {}
    for name, work in works.items():
        samples = [in_a_fork(work) for _ in range(runs)]
        figures[name + "_cpu_ms"] = median_of([s["cpu"] for s in samples])
        figures[name + "_faults"] = median_of([s["faults"] for s in samples])
        if name == "fork_exit":
            figures["fork_in_zygote_ms"] = median_of([s["forking"] for s in samples])
        if name.startswith("zmq_threads"):  # perf_counter is the same clock in the fork
            figures[name + "_ready_ms"] = median_of(
                [(float(s["sent"]) - s["started"]) * 1000 for s in samples])
    warm = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_SELF)
        zmq_sockets_and_threads()
        warm.append(cpu_ms(resource.getrusage(resource.RUSAGE_SELF)) - cpu_ms(before))
    figures["zmq_threads_warm_cpu_ms"] = median_of(warm)
    return figures


def touch_pages(view, pages, write):
    started = time.perf_counter()
    if write:
        for page in range(pages):
            view[page * PAGE] = 1
    else:
        total = 0
        for page in range(pages):
            total += view[page * PAGE]
    return (time.perf_counter() - started) * 1e6 / pages


def page_figures(megabytes=32):
    pages = megabytes * 1024 * 1024 // PAGE
    area = mmap.mmap(-1, pages * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    area.madvise(mmap.MADV_NOHUGEPAGE)  # one fault per 4 KiB page, as in the zygote's heap
    view = memoryview(area)
    # Written page by page, not from one 32 MiB bytes: after freeing so large a temporary this
    # machine charged even the writer's own next reads as first touches (docs/performance.md).
    touch_pages(view, pages, True)
    touch_pages(view, pages, False)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    address = ctypes.addressof(ctypes.c_char.from_buffer(area))

    def in_child(measure):
        return json.loads(in_a_fork(lambda: json.dumps(measure()).encode())["sent"])

    def populate_then_write():
        started = time.perf_counter()
        if libc.madvise(address, pages * PAGE, MADV_POPULATE_WRITE) != 0:
            print(f"madvise(MADV_POPULATE_WRITE): {os.strerror(ctypes.get_errno())}",
                  file=sys.stderr)  # EINVAL before Linux 5.14
            return [None, None]
        populate = (time.perf_counter() - started) * 1e6 / pages
        return [populate, touch_pages(view, pages, True)]

    figures = {"page_read_warm_us": touch_pages(view, pages, False),
               "page_read_fork_us": in_child(lambda: touch_pages(view, pages, False)),
               "page_write_fork_us": in_child(lambda: touch_pages(view, pages, True))}
    figures["page_populate_fork_us"], figures["page_write_populated_us"] = \
        in_child(populate_then_write)
    del view
    area.close()
    return {k: None if v is None else round(v, 3) for k, v in figures.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", help="append the JSON line to this file too")
    args = parser.parse_args()

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    zygote.define_helpers(here)
    loaded, failed, seconds, python = zygote._callisto_preload(zygote.PRELOAD)
    if failed:
        print(f"preload failed: {failed}", file=sys.stderr)
        return 1
    figures = {**fork_figures(args.runs), **page_figures()}
    commit = zygote.commit_of(here, ["launcher", "bench/zygote_fork_floor.py",
                                     "bench/zygote_fork_start.py"])
    line = {"bench": "zygote_fork_floor",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": commit, "kernel": platform.release(), "cpus": os.cpu_count(),
            "python": python, "runs": args.runs, "loadavg": os.getloadavg()[0],
            "start_writes_pages": sum(zygote._callisto_start_writes[1::2]) // PAGE, **figures}
    zygote.emit(line, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
