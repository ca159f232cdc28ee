# What every ipykernel Callisto starts runs before the kernel's own code. Compiled into the
# launcher: a kernel started as its own process runs it from a file in its runtime directory
# (`python -c LOADER FILE module args`, the file ending with the call of _callisto_run_module),
# and the zygote defines it once and calls
# _callisto_try_iopub_holds_bursts(), _callisto_try_history_in_memory() and
# _callisto_let_the_control_thread_finish() in each fork.
# See launcher/ipykernel_bootstrap.hpp.
import sys


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
    """An ipykernel this does not fit (renamed internals) still starts, with its own mark."""
    try:
        _callisto_iopub_holds_bursts()
    except Exception as e:
        print(f"callisto: the kernel's iopub keeps its send mark ({type(e).__name__}: {e})",
              file=sys.stderr)


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
    try:
        _callisto_history_in_memory()
    except Exception as e:
        print(f"callisto: IPython's history stays in its file ({type(e).__name__}: {e})",
              file=sys.stderr)


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
    sys.path.insert(0, os.getcwd())  # where -m puts it
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        if module.startswith("ipykernel"):
            _callisto_let_the_control_thread_finish()
