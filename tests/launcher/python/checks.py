"""What the launcher's Python test scripts share: the source tree they test (their first
argument), and their checks, each printed as it is made, the failed ones remembered for the
exit status."""

import os
import sys

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
