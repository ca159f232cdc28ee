# What every ipykernel Callisto starts runs before the kernel's own code. Compiled into the
# launcher: `python -c` runs it for a kernel started as its own process (appending the call of
# _callisto_run_module), and the zygote defines it once and calls
# _callisto_iopub_holds_bursts() in each fork. See launcher/ipykernel_bootstrap.hpp.
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
        context.setsockopt(zmq.SNDHWM, 0)  # the default of every socket made from here on
        original(self, context)

    init_iopub._callisto = True
    IPKernelApp.init_iopub = init_iopub


def _callisto_run_module():
    """`python -c THIS module args...` as `python -m module args...`."""
    import runpy

    cwd = sys.path.pop(0)  # the user's files must not stand in for what is imported here
    _callisto_iopub_holds_bursts()
    sys.path.insert(0, cwd)
    runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)
