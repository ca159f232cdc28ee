"""Callisto's shell runner: "language": "bash" executions.

The gateway loads this module into the context's Python kernel and calls run(script). The
script runs under /bin/bash in the kernel's working directory, inside the kernel's sandbox and
limits, with the kernel's environment (an execution's "env" included). Its stdout and stderr
are streamed as they come. A non-zero exit is an error (ShellError) that shows the status and
the last lines of stderr. An interrupt (the client's, or the deadline's) stops the script's
whole process group: SIGINT, then SIGTERM, then SIGKILL. When bash exits, whatever it left
running is killed too, in its process group or out of it (setsid, a double fork: while the
script runs the kernel is a child subreaper, so such orphans become its children), so an
execution that ended runs nothing more.
"""

import codecs
import collections
import ctypes
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time

BASH = "/bin/bash"
TAIL_LINES = 20  # of stderr, shown with a non-zero exit
TAIL_LINE_CHARS = 500
# Longer scripts go through a file: one argument may not exceed 128 KiB (MAX_ARG_STRLEN).
MAX_ARGUMENT_BYTES = 100_000
# After an interrupt, how long each signal is given before the next one.
STOP_STEPS = ((signal.SIGINT, 1.0), (signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0))


PR_SET_CHILD_SUBREAPER = 36


class ShellError(Exception):
    """A script that exited non-zero or was killed; IPython shows _render_traceback_()."""

    def __init__(self, message, tail):
        super().__init__(message)
        self.tail = tail

    def _render_traceback_(self):
        lines = [f"ShellError: {self}"]
        if self.tail:
            lines.append("the last lines of stderr:")
            lines.extend("  " + line for line in self.tail)
        return lines


class Interrupted(KeyboardInterrupt):
    """The script stopped by an interrupt; named KeyboardInterrupt, as any interrupted code."""

    def _render_traceback_(self):
        return [f"KeyboardInterrupt: {self}"]


Interrupted.__name__ = Interrupted.__qualname__ = "KeyboardInterrupt"


def _describe(status):
    if status >= 0:
        return f"the script exited with status {status}"
    try:
        name = signal.Signals(-status).name
    except ValueError:
        name = f"signal {-status}"
    return f"the script was killed by {name}"


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False


class _Streams:
    """Copies the script's two pipes to the kernel's stdout and stderr as bytes arrive."""

    def __init__(self, proc):
        self.selector = selectors.DefaultSelector()
        self.decoders = {}
        self.tail = collections.deque(maxlen=TAIL_LINES)
        self.partial = ""
        for pipe, target in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr)):
            os.set_blocking(pipe.fileno(), False)
            self.selector.register(pipe, selectors.EVENT_READ, target)
            self.decoders[pipe] = codecs.getincrementaldecoder("utf-8")("replace")

    def pump(self, timeout):
        """Copies what is readable within `timeout`; False when nothing was."""
        if not self.selector.get_map():
            return False
        ready = self.selector.select(timeout)
        for key, _ in ready:
            try:
                data = os.read(key.fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                self._close(key.fileobj, key.data)
                continue
            text = self.decoders[key.fileobj].decode(data)
            key.data.write(text)
            key.data.flush()
            if key.data is sys.stderr:
                self._remember(text)
        return bool(ready)

    def close(self):
        for key in list(self.selector.get_map().values()):
            self._close(key.fileobj, key.data)

    def _close(self, pipe, target):
        text = self.decoders[pipe].decode(b"", final=True)
        if text:
            target.write(text)
            target.flush()
            if target is sys.stderr:
                self._remember(text)
        self.selector.unregister(pipe)
        pipe.close()

    def _remember(self, text):
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()[-TAIL_LINE_CHARS:]
        self.tail.extend(line[:TAIL_LINE_CHARS] for line in lines)

    def stderr_tail(self):
        tail = list(self.tail)
        if self.partial:
            tail.append(self.partial)
        return tail[-TAIL_LINES:]


def _set_subreaper(on):
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children():
    """The pids of this process's children (of every thread)."""
    pids = set()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
    return pids


def _end_strays(before):
    """Kills and reaps every child this process gained since `before` (what the script left
    behind, reparented here), until none is left: killing one may orphan its own children."""
    for _ in range(100):
        strays = _children() - before
        if not strays:
            return
        for pid in strays:
            for target in (-pid, pid):  # its group, when it leads one, then itself
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
        for pid in strays:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _stop(proc, streams):
    """The ladder after an interrupt: each signal to the script's group, given its time."""
    for sig, grace in STOP_STEPS:
        if not _signal_group(proc.pid, sig):
            break
        deadline = time.monotonic() + grace
        while proc.poll() is None and time.monotonic() < deadline:
            streams.pump(0.05)
        if proc.poll() is not None:
            break
    _signal_group(proc.pid, signal.SIGKILL)  # what it left behind


def run(script):
    script_file = None
    if len(script.encode("utf-8", "surrogatepass")) > MAX_ARGUMENT_BYTES:
        fd, script_file = tempfile.mkstemp(prefix="callisto-script-", suffix=".sh")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(script)
        argv = [BASH, script_file]
    else:
        argv = [BASH, "-c", script]
    before = _children()
    reaping = _set_subreaper(True)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
        streams = _Streams(proc)
        try:
            while proc.poll() is None:
                streams.pump(0.1)
            # Bash is done, and so is what it left running; what they wrote is copied, for at
            # most a second (a process that left the group may hold a pipe open).
            _signal_group(proc.pid, signal.SIGKILL)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline and streams.pump(0.05):
                pass
        except KeyboardInterrupt:
            _stop(proc, streams)
            streams.close()
            status = proc.wait()
            raise Interrupted(_describe(status) + " after an interrupt") from None
        streams.close()
        status = proc.wait()
    finally:
        if reaping:
            _end_strays(before)
            _set_subreaper(False)
        if script_file:
            os.unlink(script_file)
    if status != 0:
        raise ShellError(_describe(status), streams.stderr_tail())
