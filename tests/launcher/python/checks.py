"""What the launcher's Python test scripts share: the source tree they test (their first
argument); their checks, each printed as it is made, the failed ones remembered for the exit
status; and the connection file of a kernel they start, and a client of it."""

import json
import os
import sys

import jupyter_client

SOURCE_DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                                  "..", "..", "..")
failures = []


def check(ok, what, detail=""):
    print(("  ok    " if ok else "  FAIL  ") + what + (f": {detail}" if not ok and detail else ""))
    if not ok:
        failures.append(what)


def summary():
    """Prints how the checks went; the script's exit status (1 when one failed)."""
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


def write_connection_file(path):
    """A connection file for a kernel that binds ports of its choice and writes them back."""
    with open(path, "w") as f:
        json.dump({"shell_port": 0, "iopub_port": 0, "stdin_port": 0, "control_port": 0,
                   "hb_port": 0, "ip": "127.0.0.1", "key": os.urandom(16).hex(),
                   "transport": "tcp", "signature_scheme": "hmac-sha256"}, f)


def ports_written(path):
    """Whether the kernel has written the ports it bound into its connection file."""
    try:
        with open(path) as f:
            return bool(json.load(f)["shell_port"])
    except (ValueError, FileNotFoundError):  # read while the kernel replaced it
        return False


def ready_client(path):
    """A jupyter_client of the kernel of that connection file, once the kernel answers."""
    kc = jupyter_client.BlockingKernelClient(connection_file=path)
    kc.load_connection_file()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return kc
