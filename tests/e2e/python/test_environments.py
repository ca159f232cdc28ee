#!/usr/bin/python3
"""Python environments an admin adds (issue 33; docs/operations.md, "Adding Python
libraries"): a venv, with and without the system's packages, and a conda-like prefix with an
interpreter of its own, each with its kernelspec in a --kernel-dir; and the kernelspecs the
sandbox cannot run, refused at start with their reason.

There is no package index here: the "packages" are a module file dropped into each
environment's site-packages, and what `pip install ipykernel` would have put into an isolated
environment is linked in from Debian's dist-packages (all but numpy, pandas and matplotlib, so
an isolated environment visibly lacks them).

Two steps. Before the server starts (e2e_tests.cpp does both):

    /usr/bin/python3 tests/e2e/python/test_environments.py --setup DIR

makes the environments and DIR/kernels; then, against a server started with
--kernel-dir=DIR/kernels (and with --zygote=off for CALLISTO_E2E_LAUNCH=exec):

    CALLISTO_E2E_ENVS=DIR /usr/bin/python3 tests/e2e/python/test_environments.py

Environment, besides e2e_client's:
  CALLISTO_E2E_ENVS    the DIR given to --setup
  CALLISTO_E2E_LAUNCH  how venv kernels must start: "zygote" (the default: forked by their
                       own zygote) or "exec" (a server with --zygote=off)
"""

import os
import shutil
import stat
import subprocess
import sys

from e2e_client import (
    api, check, check_eq, launched_context, run_code, run_code_ok, run_tests, test,
)

ENVS = os.environ.get("CALLISTO_E2E_ENVS", "")
LAUNCH = os.environ.get("CALLISTO_E2E_LAUNCH", "zygote")
PY = f"python{sys.version_info.major}.{sys.version_info.minor}"
SYSTEM_PACKAGES = "/usr/lib/python3/dist-packages"
# What an isolated environment must not have: installed system-wide, not in it.
NOT_INSTALLED = ("numpy", "pandas", "matplotlib", "mpl_toolkits", "pylab")
MODULE = "callisto_e2e_pkg"

OFFERED = ("env-sys", "env-isolated", "env-conda")
# name -> what the refusal must say
REFUSED = {
    "env-missing": "No such file or directory",
    "env-private": "(mode 0700) is not searchable by other users",
    "env-unrunnable": "(mode 0700) cannot be run by other users",
    "env-noipykernel": "finds no module ipykernel_launcher in the sandbox",
}


# --------------------------------------------------------------------------
# --setup DIR: the environments and their kernelspecs, as an admin would make them
# --------------------------------------------------------------------------

def drop_module(site, tag):
    """The 'package' each environment has and the system does not."""
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, MODULE + ".py"), "w") as f:
        f.write(f"WHERE = {tag!r}\n")


def link_ipykernel(site):
    """What `pip install ipykernel` would have put into an isolated environment: Debian's
    packages, linked, but for those an isolated environment must visibly lack."""
    for entry in sorted(os.listdir(SYSTEM_PACKAGES)):
        if entry.endswith(".pth") or entry.split("-")[0].split(".")[0] in NOT_INSTALLED:
            continue
        os.symlink(os.path.join(SYSTEM_PACKAGES, entry), os.path.join(site, entry))


def venv(path, system_site_packages):
    args = ["/usr/bin/python3", "-m", "venv", "--without-pip", path]
    if system_site_packages:
        args.insert(3, "--system-site-packages")
    subprocess.run(args, check=True)
    return os.path.join(path, "lib", PY, "site-packages")


def conda_like(prefix, mode=0o755):
    """A prefix with an interpreter of its own (a copy: not the one the zygote embeds), its
    standard library a farm of links into the system's, and its own site directory."""
    os.makedirs(os.path.join(prefix, "bin"))
    shutil.copy2(os.path.realpath("/usr/bin/python3"), os.path.join(prefix, "bin", PY))
    os.chmod(os.path.join(prefix, "bin", PY), mode)
    os.symlink(PY, os.path.join(prefix, "bin", "python3"))
    lib = os.path.join(prefix, "lib", PY)
    os.makedirs(lib)
    system_lib = os.path.join("/usr/lib", PY)
    for entry in os.listdir(system_lib):
        if entry != "dist-packages":
            os.symlink(os.path.join(system_lib, entry), os.path.join(lib, entry))
    # Debian's site.py looks for lib/pythonX.Y/dist-packages under a prefix of its own.
    site = os.path.join(lib, "dist-packages")
    os.makedirs(site)
    return site


def kernelspec(kernels, name, python):
    os.makedirs(os.path.join(kernels, name))
    with open(os.path.join(kernels, name, "kernel.json"), "w") as f:
        f.write('{"argv": ["%s", "-m", "ipykernel_launcher", "-f", "{connection_file}"],'
                ' "display_name": "%s", "language": "python"}\n' % (python, name))


def prepare_environments(root):
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    os.chmod(root, 0o755)
    kernels = os.path.join(root, "kernels")

    drop_module(venv(os.path.join(root, "sys"), True), "sys")
    kernelspec(kernels, "env-sys", os.path.join(root, "sys", "bin", "python3"))

    site = venv(os.path.join(root, "isolated"), False)
    link_ipykernel(site)
    drop_module(site, "isolated")
    kernelspec(kernels, "env-isolated", os.path.join(root, "isolated", "bin", "python3"))

    site = conda_like(os.path.join(root, "conda"))
    link_ipykernel(site)
    drop_module(site, "conda")
    kernelspec(kernels, "env-conda", os.path.join(root, "conda", "bin", "python3"))

    # What the sandbox cannot run: refused at start.
    kernelspec(kernels, "env-missing", os.path.join(root, "gone", "bin", "python3"))
    os.makedirs(os.path.join(root, "private"))
    venv(os.path.join(root, "private", "env"), True)
    os.chmod(os.path.join(root, "private"), 0o700)
    kernelspec(kernels, "env-private", os.path.join(root, "private", "env", "bin", "python3"))
    site = conda_like(os.path.join(root, "unrunnable"), mode=0o700)
    link_ipykernel(site)
    kernelspec(kernels, "env-unrunnable", os.path.join(root, "unrunnable", "bin", "python3"))
    venv(os.path.join(root, "noipykernel"), False)
    kernelspec(kernels, "env-noipykernel", os.path.join(root, "noipykernel", "bin", "python3"))
    print(f"environments and kernelspecs under {root}; serve them with --kernel-dir={kernels}")


# --------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------

def stdout_of(ctx, code):
    return run_code_ok(ctx, code)["stdout"].strip()


def context(name, launch=None):
    return launched_context(launch or LAUNCH, body={"kernel": name, "policy": "fresh"})


def prefix_of(name):
    return os.path.join(ENVS, {"env-sys": "sys", "env-isolated": "isolated",
                               "env-conda": "conda"}[name])


def check_environment(name, launch, system_packages):
    with context(name, launch) as ctx:
        check_eq(ctx["callisto"]["launch"], launch, f"{name}: the kernel's launch")
        got = stdout_of(ctx, f"import sys, {MODULE}\n"
                             f"print({MODULE}.WHERE, sys.prefix, sys.executable)")
        where, prefix, executable = got.split()
        check_eq(where, prefix_of(name).rsplit("/", 1)[1], f"{name}: its own module imports")
        check_eq(prefix, prefix_of(name), f"{name}: sys.prefix")
        check_eq(executable, os.path.join(prefix_of(name), "bin", "python3"),
                 f"{name}: sys.executable")
        numpy = run_code(ctx, "import numpy")
        if system_packages:
            check_eq(numpy["status"], "ok", f"{name}: the system's numpy is seen")
        else:
            check_eq(numpy["status"], "error", f"{name}: the system's numpy is not seen")
            check_eq(numpy["error"]["name"], "ModuleNotFoundError", f"{name}: numpy's error")
        # Shown read-only: one kernel cannot change the environment every kernel runs.
        wrote = run_code(ctx, f"import {MODULE}\nopen({MODULE}.__file__, 'a').write('x = 1\\n')")
        check_eq(wrote["status"], "error", f"{name}: the environment cannot be written")
        check(wrote["error"]["name"] in ("OSError", "PermissionError"),
              f"{name}: writing fails with EROFS or EACCES", wrote["error"])
        # Its kernels still get the rest of the sandbox: no network, their own workdir.
        check_eq(stdout_of(ctx, "import os; print(os.getcwd(), os.getuid() != 0)"),
                 "/work True", f"{name}: workdir and uid")


@test
def test_offered_kernelspecs_are_listed_and_refused_ones_are_not():
    listed = api("GET", "/api/kernelspecs").json()["kernelspecs"]
    for name in OFFERED:
        check(name in listed, f"{name} is offered", sorted(listed))
    for name in REFUSED:
        check(name not in listed, f"{name} is not offered", sorted(listed))
    languages = api("GET", "/v1/languages")
    check_eq(languages.status, 200, "GET /v1/languages")
    for name in REFUSED:
        check(name not in languages.body.decode(), f"{name} is not in /v1/languages",
              languages.body)


@test
def test_a_refused_kernelspec_is_answered_with_its_reason():
    for name, reason in REFUSED.items():
        r = api("GET", f"/api/kernelspecs/{name}")
        check_eq(r.status, 404, f"GET /api/kernelspecs/{name}")
        check(reason in r.json()["message"], f"{name}: the 404 says why", r.body)
        for method, path, body in (("POST", "/v1/contexts", {"kernel": name}),
                                   ("POST", "/api/kernels", {"name": name})):
            r = api(method, path, body, timeout=120)
            check_eq(r.status, 500, f"{method} {path} for {name} ({r.body[:300]!r})")
            message = r.json()["message"]
            check(message.startswith(f"kernelspec '{name}' is not offered here: ") and
                  reason in message, f"{name}: {path} names the reason", message)
            check("exited with code" not in message, f"{name}: not a bare exit", message)


@test
def test_a_venv_with_the_system_packages_runs_its_own_module():
    check_environment("env-sys", LAUNCH, True)


@test
def test_an_isolated_venv_runs_its_own_module_without_the_system_packages():
    check_environment("env-isolated", LAUNCH, False)


@test
def test_a_conda_like_prefix_starts_without_a_zygote():
    # Its interpreter is not the one the zygote embeds: exec'd through bwrap, zygote on or off.
    check_environment("env-conda", "exec", False)


@test
def test_a_venv_is_a_venv_to_its_kernel():
    with context("env-isolated") as ctx:
        got = stdout_of(ctx, "import site, sys\n"
                             "print(sys.prefix != sys.base_prefix, sys.base_prefix,"
                             " any(p.endswith('dist-packages') for p in sys.path))")
        check_eq(got, "True /usr False", "an isolated venv's prefixes and path")


@test
def test_setup_left_the_refused_environments_as_described():
    # The refusals above are about these very files.
    check(not os.path.exists(os.path.join(ENVS, "gone")), "env-missing has no interpreter")
    check_eq(stat.S_IMODE(os.stat(os.path.join(ENVS, "private")).st_mode), 0o700,
             "env-private's directory mode")
    check_eq(stat.S_IMODE(os.stat(os.path.join(ENVS, "unrunnable", "bin", PY)).st_mode), 0o700,
             "env-unrunnable's interpreter mode")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--setup":
        prepare_environments(os.path.abspath(sys.argv[2]))
        sys.exit(0)
    if not ENVS:
        print("CALLISTO_E2E_ENVS is not set: run --setup DIR first", file=sys.stderr)
        sys.exit(2)
    sys.exit(run_tests())
