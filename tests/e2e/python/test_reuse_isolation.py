#!/usr/bin/python3
"""Under the default `reuse` policy a kept kernel serves its owner's next context: nothing of
the last conversation may reach it. Context A plants state of every kind a kernel can carry
(a /tmp and a /dev/shm file, an environment variable, a patched module, builtins, an injected
module, a thread, a library's options, files in the workdir, start-up files that the kernel's
language runs when a process starts); A is deleted; context B, on the same kernel (its second
use), and then a one-shot execution on it, find none of it.

The kernelspec comes from REUSE_KERNEL (python3, or ir for R), and how its kernels start from
REUSE_LAUNCH (zygote or exec, as an admin's GET /api/kernels/{id} says): e2e_tests.cpp runs
this with python3 forked by its zygote, python3 exec'd (--zygote=off), and R.

  CALLISTO_URL=… CALLISTO_TOKEN=… REUSE_KERNEL=python3 REUSE_LAUNCH=zygote \
      /usr/bin/python3 test_reuse_isolation.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from e2e_client import (api, check, check_eq, create_context, delete_context,  # noqa: E402
                        launch_info, launched_context, run_code_ok, run_tests, test)

TIMEOUT = 120
KERNEL = os.environ.get("REUSE_KERNEL", "python3")
LAUNCH = os.environ.get("REUSE_LAUNCH", "exec")

# Each check prints one line "LEAK <what>" for each piece of A's state it still finds.
PLANT = {
    "python3": r"""
import builtins, os, sys, threading, time
import numpy, matplotlib
open('/tmp/leak.txt', 'w').write('secret')
open('/dev/shm/leak', 'w').write('secret')
os.environ['API_KEY'] = 'sk-123'
numpy.pi = 3
builtins.leaked_builtin = 'yes'
sys.modules['callisto_leak'] = sys
matplotlib.rcParams['lines.linewidth'] = 7.25
threading.Thread(target=time.sleep, args=(3600,), name='leaky-thread', daemon=True).start()
secret = 42
open('left-behind.txt', 'w').write('x')
startup = os.path.expanduser('~/.ipython/profile_default/startup')
os.makedirs(startup, exist_ok=True)
open(startup + '/00-leak.py', 'w').write("import os\nos.environ['STARTUP_RAN'] = '1'\n")
site = os.path.expanduser('~/.local/lib/python%d.%d/site-packages' % sys.version_info[:2])
os.makedirs(site, exist_ok=True)
open(site + '/usercustomize.py', 'w').write("import os\nos.environ['USERCUSTOMIZE_RAN'] = '1'\n")
print('planted', os.getuid())
""",
    "ir": r"""
Sys.setenv(API_KEY = "sk-123")
options(digits = 3, callisto.leak = "yes")
writeLines("secret", "/tmp/leak.txt")
writeLines("secret", "/dev/shm/leak")
writeLines('Sys.setenv(RPROFILE_RAN = "1")', file.path(Sys.getenv("HOME"), ".Rprofile"))
writeLines("x", "left-behind.txt")
secret <- 42
suppressMessages(library(tools))
cat("planted", Sys.getenv("USER"), "\n")
""",
}

CHECK = {
    "python3": r"""
import builtins, os, sys, threading
import numpy, matplotlib
found = {
    '/tmp file': os.path.exists('/tmp/leak.txt'),
    '/dev/shm file': os.path.exists('/dev/shm/leak'),
    'environment variable': 'API_KEY' in os.environ,
    'patched module': numpy.pi != 3.141592653589793,
    'builtins': hasattr(builtins, 'leaked_builtin'),
    'injected module': 'callisto_leak' in sys.modules,
    'library options': matplotlib.rcParams['lines.linewidth'] == 7.25,
    'thread': any(t.name == 'leaky-thread' for t in threading.enumerate()),
    'variable': 'secret' in globals(),
    'workdir file': os.path.exists('left-behind.txt'),
    'IPython start-up file': os.path.exists(os.path.expanduser('~/.ipython/profile_default/startup/00-leak.py')),
    'IPython start-up file ran': 'STARTUP_RAN' in os.environ,
    'usercustomize ran': 'USERCUSTOMIZE_RAN' in os.environ,
}
for what, leaked in found.items():
    if leaked:
        print('LEAK', what)
print('checked', len(found))
""",
    "ir": r"""
found <- c(
  "environment variable" = Sys.getenv("API_KEY") != "",
  "options" = getOption("digits") != 7 || !is.null(getOption("callisto.leak")),
  "/tmp file" = file.exists("/tmp/leak.txt"),
  "/dev/shm file" = file.exists("/dev/shm/leak"),
  ".Rprofile" = file.exists(file.path(Sys.getenv("HOME"), ".Rprofile")),
  ".Rprofile ran" = Sys.getenv("RPROFILE_RAN") != "",
  "workdir file" = file.exists("left-behind.txt"),
  "variable" = exists("secret"),
  "attached package" = "package:tools" %in% search()
)
for (what in names(found)[found]) cat("LEAK", what, "\n")
cat("checked", length(found), "\n")
""",
}


def launch(ctx):
    return launch_info(ctx["kernel_id"]).get("launch")


def drop_kept_kernels(but=None):
    """Deletes the caller's kernels that back no context (kept for reuse), but `but`."""
    in_use = {c["kernel_id"] for c in api("GET", "/v1/contexts").json()}
    for k in api("GET", "/api/kernels").json():
        if k["id"] not in in_use and k["id"] != but:
            api("DELETE", "/api/kernels/" + k["id"], timeout=TIMEOUT)


def leaks(out, where):
    check("checked" in out["stdout"], f"the check ran in {where}", out)
    return [line[5:].strip() for line in out["stdout"].splitlines() if line.startswith("LEAK ")]


@test
def test_the_next_context_on_a_kept_kernel_finds_nothing_of_the_last():
    drop_kept_kernels()
    # Leaving the block deletes A: its kernel is kept for the owner's next context.
    with launched_context(LAUNCH, {"kernel": KERNEL, "policy": "reuse"}) as a:
        planted = run_code_ok(a, PLANT[KERNEL])
        check("planted" in planted["stdout"], "A planted its state", planted)
        own = leaks(run_code_ok(a, CHECK[KERNEL]), "A")
        check(len(own) >= 7, "the check finds A's state in A itself", own)
    drop_kept_kernels(but=a["kernel_id"])  # those of attempts that started the other way

    b = create_context({"kernel": KERNEL, "policy": "reuse"})
    try:
        check_eq(b["kernel_id"], a["kernel_id"], "the kept kernel serves the owner's next context")
        check_eq(b["kernel_uses"], a["kernel_uses"] + 1, "its next use")
        check_eq(launch(b), LAUNCH, "renewed the way it first started")
        check_eq(leaks(run_code_ok(b, CHECK[KERNEL]), "B"), [], f"{KERNEL}: B finds nothing of A")
    finally:
        check(delete_context(b["id"]) in (204, 404, 410), "delete context")

    # A one-shot execution runs on the kernel that B's end kept.
    r = api("POST", "/v1/executions", {"code": CHECK[KERNEL], "kernel": KERNEL, "policy": "reuse"},
            timeout=TIMEOUT)
    check_eq(r.status, 200, f"one-shot: {r.body[:300]!r}")
    check_eq(leaks(r.json(), "a one-shot"), [], f"{KERNEL}: a one-shot finds nothing of A")


if __name__ == "__main__":
    sys.exit(run_tests())
