# What every ipykernel Callisto starts runs before the kernel's own code. Compiled into the
# launcher: a kernel started as its own process runs it from a file in its runtime directory
# (`python -c LOADER FILE module args`, the file ending with the call of _callisto_run_module),
# and the zygote defines it once and calls
# _callisto_try_iopub_holds_bursts(), _callisto_try_history_in_memory(),
# _callisto_try_error_fields_fit() and _callisto_let_the_control_thread_finish() in each fork.
# See launcher/kernelspec/ipykernel_bootstrap.hpp.
import sys


def _callisto_try(patch, unpatched):
    """Applies `patch`. An ipykernel it does not fit (renamed internals) still starts, with
    what `unpatched` names left as ipykernel has it, and says so on stderr."""
    try:
        patch()
    except Exception as e:
        print(f"callisto: {unpatched} ({type(e).__name__}: {e})", file=sys.stderr)


def _callisto_iopub_holds_bursts():
    """ZeroMQ's PUB socket drops what passes its high-water mark (1,000 messages by default).
    Output printed faster than the gateway reads it (a loop of flushed prints on a loaded host)
    lost the rest of the burst, and with it the execution's idle status, which clients wait for.
    Without a mark the burst waits in the kernel's own memory, under the kernel's limits, until
    the gateway reads on."""
    import zmq
    from ipykernel.kernelapp import IPKernelApp

    original = IPKernelApp.init_iopub
    if getattr(original, "_callisto", False):
        return

    def init_iopub(self, context):
        # The default of every socket made from this context from here on: iopub and the
        # kernel's later ones. The context is the kernel's own.
        context.setsockopt(zmq.SNDHWM, 0)
        original(self, context)

    init_iopub._callisto = True
    IPKernelApp.init_iopub = init_iopub


def _callisto_try_iopub_holds_bursts():
    _callisto_try(_callisto_iopub_holds_bursts, "the kernel's iopub keeps its send mark")


def _callisto_history_in_memory():
    """IPython keeps its input history in an SQLite file in the profile, under the workdir (the
    sandbox's HOME), written by a thread of its own. When code filled the disk quota, that
    thread's write failed and it printed its notice ("The history saving thread hit an
    unexpected error ... History will not be written") into whatever cell ran next. History
    across kernel restarts is no feature here (a restart, a reset or a fresh kernel starts
    afresh), so the history is kept in memory: no file, no thread. A hist_file the kernel's own
    configuration names is still used."""
    from IPython.core.history import HistoryManager

    HistoryManager._get_hist_file_name = lambda self, profile=None: ":memory:"


def _callisto_try_history_in_memory():
    _callisto_try(_callisto_history_in_memory, "IPython's history stays in its file")


# What an error's fields may weigh, JSON-encoded, in any message the kernel sends (the
# execute_reply of a failed execution, the iopub `error`, any reply with "status": "error").
# The gateway takes a reply part of at most 16 MiB (transport/detail/kernel_link.cpp,
# max_reply_part_bytes): ZeroMQ drops a larger one, and with it the connection, so a
# `raise ValueError("x" * 40_000_000)` left the client waiting for its deadline. The value and
# the traceback (which repeats the value) each within 7.5 MiB, the name within 1 KiB: the
# reply's content stays under 15.1 MiB. The gateway cuts them further for its clients
# (gateway/kernels/output/output_fields.hpp), with the same marker.
_CALLISTO_ERROR_NAME_BYTES = 1 << 10
_CALLISTO_ERROR_TEXT_BYTES = 15 << 19


def _callisto_utf8_bytes(text):
    try:
        return len(text.encode())  # the fast path; surrogatepass alone is 15 times slower
    except UnicodeEncodeError:
        return len(text.encode("utf-8", "surrogatepass"))


def _callisto_json_bytes(text):
    """The bytes `text` takes in a message part: JSON-escaped, UTF-8 (jupyter_client's packer)."""
    import json
    return _callisto_utf8_bytes(json.dumps(text, ensure_ascii=False)) - 2


def _callisto_cap_text(text, max_bytes):
    """`text` when it takes at most max_bytes, else its head and tail around a marker saying
    how many bytes were left out, within max_bytes; and how many bytes were left out."""
    if len(text) <= max_bytes and _callisto_json_bytes(text) <= max_bytes:
        return text, 0
    keep = min(len(text), max_bytes)  # characters: each takes at least one byte
    while True:
        keep = max(0, keep - 64)  # room for the marker
        head, tail = text[:keep // 2], text[len(text) - (keep - keep // 2):] if keep > 1 else ""
        cut = _callisto_utf8_bytes(text[len(head):len(text) - len(tail)])
        out = f"{head}\n[... {cut} bytes truncated ...]\n{tail}"
        size = _callisto_json_bytes(out)
        if size <= max_bytes or keep == 0:
            return out, cut
        # Escapes (control characters, ANSI colours) take more than a byte: keep less.
        keep = keep * max_bytes // size


def _callisto_cap_lines(lines, max_bytes):
    """A traceback's lines within max_bytes together: each line within half of it, then the
    first lines and the last ones, each side within half, around a marker line."""
    sizes = [_callisto_json_bytes(line) + 3 for line in lines]  # quotes and separator
    if sum(sizes) <= max_bytes:
        return lines, 0
    half, cut = max_bytes // 2, 0
    lines = list(lines)
    for i, line in enumerate(lines):
        if sizes[i] > half:
            lines[i], line_cut = _callisto_cap_text(line, half - 3)
            sizes[i] = _callisto_json_bytes(lines[i]) + 3
            cut += line_cut
    if sum(sizes) <= max_bytes:
        return lines, cut
    first, used = 0, 0
    while first < len(lines) and used + sizes[first] <= half:
        used += sizes[first]
        first += 1
    last, used = len(lines), 0
    while last > first and used + sizes[last - 1] <= max_bytes - half - 64:
        last -= 1
        used += sizes[last]
    dropped = sum(_callisto_utf8_bytes(line) for line in lines[first:last])
    return lines[:first] + [f"\n[... {dropped} bytes truncated ...]\n"] + lines[last:], \
        cut + dropped


def _callisto_cap_error_content(content):
    """`content` itself when its error fields fit, else a copy with them cut."""
    capped = None
    for name, cap in (("ename", _CALLISTO_ERROR_NAME_BYTES), ("evalue", _CALLISTO_ERROR_TEXT_BYTES)):
        value = content.get(name)
        if isinstance(value, str):
            text, cut = _callisto_cap_text(value, cap)
            if cut:
                capped = capped or dict(content)
                capped[name] = text
    traceback = content.get("traceback")
    if isinstance(traceback, list):
        lines = [line if isinstance(line, str) else str(line) for line in traceback]
        lines, cut = _callisto_cap_lines(lines, _CALLISTO_ERROR_TEXT_BYTES)
        if cut:
            capped = capped or dict(content)
            capped["traceback"] = lines
    return content if capped is None else capped


def _callisto_error_fields_fit():
    """Every message the kernel's session sends goes through Session.serialize: an error's
    fields are cut there, whichever part of ipykernel or IPython made them."""
    from jupyter_client.session import Session

    original = Session.serialize
    if getattr(original, "_callisto", False):
        return

    def serialize(self, msg, ident=None):
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, dict) and ("evalue" in content or "traceback" in content):
            capped = _callisto_cap_error_content(content)
            if capped is not content:
                msg = dict(msg, content=capped)  # the caller's dicts stay as they are
        return original(self, msg, ident)

    serialize._callisto = True
    Session.serialize = serialize


def _callisto_try_error_fields_fit():
    _callisto_try(_callisto_error_fields_fit, "the kernel's errors are sent uncut")


def _callisto_let_the_control_thread_finish(seconds=2.0):
    """After shutdown_request the main loop ends while ipykernel's control thread still
    flushes the output and publishes `idle` through the iopub thread. If the exit's
    IPKernelApp.close stops the iopub thread first, that flush waits out its 10 s timeout and
    close waits for it: the gateway saw about 1 exit in 20 take 5 s and be SIGTERMed. The
    control thread ends by itself once its reply is out (shutdown_request stopped its loop);
    wait for that, within a bound, before the exit handlers run."""
    try:
        from ipykernel.kernelapp import IPKernelApp
        if not IPKernelApp.initialized():
            return
        control = getattr(IPKernelApp.instance(), "control_thread", None)
        if control is not None and control.is_alive():
            control.join(seconds)
    except Exception as e:
        print(f"callisto: did not wait for the control thread ({type(e).__name__}: {e})",
              file=sys.__stderr__)


def _callisto_run_module():
    """`python -c THIS module args...` as `python -m module args...`."""
    import os
    import runpy

    sys.path.pop(0)  # '': the user's files must not stand in for what is imported here
    module = sys.argv.pop(1)
    _callisto_try_iopub_holds_bursts()
    if module.startswith("ipykernel"):
        _callisto_try_history_in_memory()
        _callisto_try_error_fields_fit()
    sys.path.insert(0, os.getcwd())  # where -m puts it
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        if module.startswith("ipykernel"):
            _callisto_let_the_control_thread_finish()
