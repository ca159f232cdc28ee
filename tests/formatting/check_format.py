#!/usr/bin/python3
"""Fails when a C++ source is not formatted as the committed .clang-format says.

Pinned to clang-format 14 (Debian 12's): other versions break lines differently, and a check
that moves with the tool on the machine would fail for reasons nobody changed. Fix with

  clang-format-14 -i $(git ls-files '*.cpp' '*.hpp')

  /usr/bin/python3 tests/formatting/check_format.py [SOURCE_DIR]
"""

import pathlib
import shutil
import subprocess
import sys

FOLDERS = ("common", "kernelproto", "transport", "launcher", "gateway", "bench", "tests")
TOOL = "clang-format-14"


def sources(root):
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".cpp", ".hpp", ".h") and path.is_file():
                yield path


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parents[2])
    tool = shutil.which(TOOL)
    if not tool:
        print(f"formatting: {TOOL} is not installed (Debian package clang-format-14)")
        return 1
    files = [str(p) for p in sources(root)]
    run = subprocess.run([tool, "--dry-run", "--Werror", f"--style=file:{root}/.clang-format",
                          *files], capture_output=True, text=True, cwd=root)
    badly = sorted({line.split(":", 1)[0] for line in run.stderr.splitlines()
                    if ": error:" in line})
    for path in badly:
        print(f"formatting: {pathlib.Path(path).relative_to(root)} differs from .clang-format")
    if run.returncode != 0 and not badly:
        print(run.stderr.strip())
    print(f"{len(files)} files checked; {len(badly)} not formatted")
    return 0 if run.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
