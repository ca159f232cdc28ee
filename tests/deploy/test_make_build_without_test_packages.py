#!/usr/bin/python3
"""`make run` on a machine without the tests' packages, and the image built the same way.

`make run`'s configure command, taken from the Makefile itself (`make -n run`), must succeed
with doctest made unfindable (doctest-dev is a test package, not one of RUN_PACKAGES). Nothing
is built: the configure runs into a temporary directory. And the Dockerfile installs and builds
through the Makefile's targets (`make deps-build`, `make build`, `make deps-image`), naming no
package but make, so the compose test's image build from a debootstrap base proves them.

  /usr/bin/python3 tests/deploy/test_make_build_without_test_packages.py [SOURCE_DIR]
"""

import fnmatch
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

# All make sees of the caller's environment: the Makefile's `?=` variables (CMAKE_ARGS,
# BUILD_TYPE, ...) keep the Makefile's own values, as on a fresh machine.
MAKE_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")


def makefile_configure_command(root, build_dir):
    """`make run`'s cmake configure line, as the Makefile prints it for BUILD=build_dir."""
    env = {k: os.environ[k] for k in MAKE_ENVIRONMENT if k in os.environ}
    dry = subprocess.run(["make", "--no-print-directory", "-n", "run", f"BUILD={build_dir}"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, f"make -n run failed:\n{dry.stderr}"
    commands = [shlex.split(line) for line in dry.stdout.splitlines()
                if line.startswith("cmake ")]
    configures = [c for c in commands if "--build" not in c]
    assert len(configures) == 1, f"expected one cmake configure in make -n run:\n{dry.stdout}"
    command = configures[0]
    # Never the developer's build directory: the Makefile must honour BUILD.
    assert "-B" in command and command[command.index("-B") + 1] == build_dir, command
    return command


def test_make_run_configures_without_doctest(root):
    build_dir = tempfile.mkdtemp(prefix="callisto-make-run-")
    try:
        command = makefile_configure_command(root, build_dir)
        command.append("-DCMAKE_DISABLE_FIND_PACKAGE_doctest=ON")
        print("$", shlex.join(command), flush=True)
        configure = subprocess.run(command, cwd=root, capture_output=True, text=True,
                                   timeout=300)
        assert configure.returncode == 0, (
            "make run's configure needs a test package (doctest):\n"
            + (configure.stdout + configure.stderr)[-3000:])
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)


def dockerfile_stages(root):
    """The Dockerfile's instructions as (INSTRUCTION, arguments), one list per stage."""
    lines = [line for line in (root / "Dockerfile").read_text().splitlines()
             if not line.lstrip().startswith("#")]
    text = re.sub(r"\\\n", " ", "\n".join(lines))
    stages = []
    for line in text.splitlines():
        if not line.strip():
            continue
        instruction, _, arguments = line.strip().partition(" ")
        if instruction.upper() == "FROM":
            stages.append([])
        elif stages:
            stages[-1].append((instruction.upper(), arguments.strip()))
    return stages


def shell_commands(script):
    """A RUN line's simple commands (split at &&, ||, ; and |), leading VAR=value dropped."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars="&|;")
    lexer.whitespace_split = True
    commands, current = [], []
    for token in list(lexer) + [";"]:
        if token and set(token) <= set("&|;"):
            while current and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", current[0]):
                current.pop(0)
            if current:
                commands.append(current)
            current = []
        else:
            current.append(token)
    return commands


def make_goals(argv):
    goals, skip = [], False
    for arg in argv[1:]:
        if skip:
            skip = False
        elif arg in ("-C", "-f"):
            skip = True
        elif not arg.startswith("-") and "=" not in arg:
            goals.append(arg)
    return goals


def test_dockerfile_installs_and_builds_through_the_makefile(root):
    stages = dockerfile_stages(root)
    assert len(stages) >= 2, "expected a build stage and a runtime stage"
    goals_per_stage = []
    for stage in stages:
        goals = []
        for instruction, arguments in stage:
            if instruction != "RUN":
                continue
            for argv in shell_commands(arguments):
                tool = os.path.basename(argv[0])
                if tool in ("apt-get", "apt") and "install" in argv:
                    named = [a for a in argv[argv.index("install") + 1:] if not a.startswith("-")]
                    assert named == ["make"], (
                        f"the Dockerfile installs {named}: packages belong in the Makefile's "
                        "lists (make deps-build, make deps-image)")
                assert tool not in ("cmake", "dpkg"), f"the Dockerfile runs {shlex.join(argv)}"
                if tool == "make":
                    goals += make_goals(argv)
        goals_per_stage.append(goals)
    assert any({"deps-build", "build"} <= set(g) for g in goals_per_stage), goals_per_stage
    last = set(goals_per_stage[-1])
    assert "deps-image" in last, goals_per_stage
    # The image's last stage gets no compiler nor -dev packages.
    assert not last & {"deps", "deps-build", "deps-test", "build", "run"}, goals_per_stage


def dockerignored(patterns, path):
    """Whether .dockerignore's patterns keep `path` (or a folder holding it) out of the context."""
    parts = path.split("/")
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        candidates = {pattern, pattern[3:] if pattern.startswith("**/") else pattern}
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            if any(fnmatch.fnmatchcase(prefix, p) for p in candidates):
                ignored = not negated
    return ignored


def test_the_build_context_holds_what_the_dockerfile_copies(root):
    ignore = root / ".dockerignore"
    patterns = [line.strip() for line in (ignore.read_text().splitlines() if ignore.exists()
                                          else []) if line.strip() and not line.startswith("#")]
    copied = []
    for stage in dockerfile_stages(root):
        for instruction, arguments in stage:
            argv = shlex.split(arguments)
            if instruction in ("COPY", "ADD") and not any(a.startswith("--from") for a in argv):
                copied += [a for a in argv[:-1] if not a.startswith("--")]
    assert "Makefile" in copied, copied
    for source in copied:
        assert (root / source).exists(), f"the Dockerfile copies {source}, which is missing"
        assert not dockerignored(patterns, source), f".dockerignore leaves out {source}"


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parents[2]).resolve()
    tests = [test_make_run_configures_without_doctest,
             test_dockerfile_installs_and_builds_through_the_makefile,
             test_the_build_context_holds_what_the_dockerfile_copies]
    failed = 0
    for test in tests:
        try:
            test(root)
            print("ok  ", test.__name__, flush=True)
        except AssertionError as e:
            failed += 1
            print("FAIL", test.__name__, "\n", e, flush=True)
    print(f"{len(tests) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
