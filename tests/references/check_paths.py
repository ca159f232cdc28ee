#!/usr/bin/python3
"""Fails when a comment or a document names a file or folder of the repository that is not there.

Comments and docs say where a behaviour lives ("see gateway/http/router.cpp"); when a file moves,
the name in prose stays behind and sends the next reader to nothing. Every token that starts with
one of the repository's top-level folders and names a file (it has an extension) or a folder (it
ends with "/") must exist. Names with a placeholder (<x>, {x}, *, ...) are patterns, not paths,
and are skipped, as are paths that a test or build creates (build/...).

  /usr/bin/python3 tests/references/check_paths.py [SOURCE_DIR]
"""

import pathlib
import re
import subprocess
import sys

TOP_LEVEL = ("common", "kernelproto", "transport", "launcher", "gateway", "web", "tests", "bench",
             "docs", "examples", "deploy", ".ci")
TEXT_SUFFIXES = {".cpp", ".hpp", ".h", ".py", ".mjs", ".js", ".md", ".txt", ".cmake", ".yaml",
                 ".yml", ".json", ".html", ".css", ".sh", ".conf", ".toml"}
TEXT_NAMES = {"Makefile", "Dockerfile", "CMakeLists.txt", "run"}
# A path as prose writes it: a top-level folder, then names of letters, digits, _ - . and /.
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(t) for t in TOP_LEVEL) +
                  r")/[\w./-]*)")
PLACEHOLDER = re.compile(r"[<>{}*…]|\.\.\.")


def tracked_files(root):
    listed = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True)
    # Outside a git checkout (a source tarball), every file under the folders above.
    names = (listed.stdout.splitlines() if listed.returncode == 0 else
             [str(p.relative_to(root)) for p in root.rglob("*") if "build" not in p.parts])
    for name in names:
        path = root / name
        if (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES) and path.is_file():
            yield path


def named_paths(text):
    for match in PATH.finditer(text):
        name = match.group(1).rstrip(".,;:")
        end = match.end(1)
        if end < len(text) and PLACEHOLDER.match(text, end):
            continue  # the name goes on with a placeholder: gateway/<layer>/...
        if PLACEHOLDER.search(name):
            continue
        last = name.rsplit("/", 1)[-1]
        if name.endswith("/") or "." in last.lstrip("."):
            yield name, text.count("\n", 0, match.start()) + 1


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parents[2])
    missing = []
    for path in tracked_files(root):
        if "node_modules" in path.parts or path.suffix == ".json" and "package" in path.name:
            continue
        text = path.read_text(errors="replace")
        for name, line in named_paths(text):
            if not (root / name).exists():
                missing.append(f"{path.relative_to(root)}:{line}: {name}")
    for m in missing:
        print(m)
    if missing:
        print(f"{len(missing)} names of files or folders that do not exist (moved? say where)")
        return 1
    print("every file and folder named in comments and docs exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
