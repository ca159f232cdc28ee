#!/usr/bin/python3
"""Fails when an #include points up the layers (docs/architecture.md, "Layers").

Arrows only point down: kernelproto is pure (no sockets, threads or Asio), transport owns
ZeroMQ but knows no HTTP, launcher knows neither, and only gateway sees everything. Each rule
names the folder, the project folders it may include, and the outside headers it must not.

  /usr/bin/python3 tests/layering/check_layers.py [SOURCE_DIR]
"""

import pathlib
import re
import sys

RULES = {
    # folder: (project folders it may include, forbidden outside include prefixes)
    "common": ({"common"}, ("boost/", "zmq", "nlohmann/")),
    "kernelproto": ({"kernelproto", "common"}, ("boost/", "zmq")),
    "transport": ({"transport", "kernelproto", "common"}, ("boost/beast", "boost/asio")),
    "launcher": ({"launcher", "kernelproto", "common"}, ("boost/", "zmq")),
    "gateway": ({"gateway", "launcher", "transport", "kernelproto", "common"}, ()),
}
# Public headers of transport keep ZeroMQ out (design: zmq.hpp is a private dependency).
PRIVATE_IN_HEADERS = {"transport": ("zmq",)}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)


def check(root):
    problems = []
    for folder, (allowed, forbidden) in RULES.items():
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".hpp", ".cpp", ".h"):
                continue
            for quote, target in INCLUDE.findall(path.read_text(errors="replace")):
                where = path.relative_to(root)
                if quote == '"':
                    top = target.split("/", 1)[0]
                    if "/" in target and top in RULES and top not in allowed:
                        problems.append(f"{where}: includes {target} ({folder} may not use {top})")
                    continue
                if any(target.startswith(p) for p in forbidden):
                    problems.append(f"{where}: includes <{target}> ({folder} must not)")
                if path.suffix == ".hpp" and any(
                        target.startswith(p) for p in PRIVATE_IN_HEADERS.get(folder, ())):
                    problems.append(f"{where}: a public header includes <{target}>")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parents[2])
    problems = check(root)
    for p in problems:
        print("layering: " + p)
    print(f"{0 if problems else 1} passed, {1 if problems else 0} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
