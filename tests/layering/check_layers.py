#!/usr/bin/python3
"""Fails when an #include points up the layers (docs/architecture.md, "Layers"), or when that
document's table of layers says other than the rules below.

Arrows only point down: kernelproto is pure (no sockets, threads or Asio), transport owns
ZeroMQ but knows no HTTP, launcher knows neither, and only gateway sees everything. Inside the
gateway, the kernels layer knows no HTTP and the APIs do not reach into the composition root.
Each rule names the folder, what of ours it may include, and the outside headers it must not.

  /usr/bin/python3 tests/layering/check_layers.py [SOURCE_DIR]
"""

import pathlib
import re
import sys

LOWER = ("launcher/", "transport/", "kernelproto/", "common/")
RULES = {
    # folder: (what of ours it may include, as path prefixes; include prefixes it must not use,
    # outside ones or a subfolder of its own). A file follows the most specific folder that
    # holds it.
    "common": (("common/",), ("boost/", "zmq", "nlohmann/")),
    "kernelproto": (("kernelproto/",), ("boost/", "zmq")),  # pure: nothing else of ours
    "transport": (("transport/", "kernelproto/", "common/"), ("boost/beast", "boost/asio")),
    "launcher": (("launcher/", "kernelproto/", "common/"), ("boost/", "zmq")),
    "gateway": (("gateway/",) + LOWER, ()),
    # The kernels' lifecycle knows Asio but no HTTP: the APIs sit on top of it.
    "gateway/kernels": (("gateway/kernels/", "gateway/user.hpp") + LOWER, ("boost/beast",)),
    # The HTTP server knows routes, tokens and users, never the APIs: the composition root
    # registers their handlers with the request dispatcher (gateway/routes.cpp).
    "gateway/http": (("gateway/http/", "gateway/user.hpp", "gateway/token_auth.hpp",
                      "gateway/user_directory.hpp") + LOWER, ()),
    # The languages of executions: code for kernels, pure (no Asio, no HTTP, no kernels).
    "gateway/languages": (("gateway/languages/",) + LOWER, ("boost/",)),
    # The egress proxy: its policy (address classifier, allowlist) and its I/O on Asio; no
    # HTTP server, no kernels, no API. The composition root hands it connections.
    "gateway/egress": (("gateway/egress/",) + LOWER, ()),
    # The audit log: files and hashes, told what ran by the APIs.
    "gateway/audit": (("gateway/audit/",) + LOWER, ("boost/",)),
    "gateway/jupyter_api": (("gateway/jupyter_api/", "gateway/audit/", "gateway/http/", "gateway/kernels/",
                             "gateway/user.hpp", "gateway/server_config.hpp") + LOWER, ()),
    # The interpreter's model (contexts, executions, files, snapshots) knows no HTTP and never
    # its own HTTP adapters (api/); those answer the kernels layer's refusals as the Jupyter
    # API does.
    "gateway/interpreter": (("gateway/interpreter/", "gateway/audit/", "gateway/kernels/",
                             "gateway/languages/", "gateway/egress/egress_allowlist.hpp",
                             "gateway/user.hpp") + LOWER,
                            ("boost/beast", "gateway/interpreter/api/", "gateway/http/")),
    "gateway/interpreter/api": (("gateway/interpreter/", "gateway/audit/", "gateway/http/",
                                 "gateway/kernels/", "gateway/languages/",
                                 "gateway/jupyter_api/kernel_error_answer.hpp",
                                 "gateway/egress/egress_allowlist.hpp",
                                 "gateway/user.hpp", "gateway/server_config.hpp") + LOWER, ()),
    # The admin console's own answers: read-only views of the kernels, the audit log, activity.
    "gateway/admin": (("gateway/admin/", "gateway/audit/", "gateway/http/", "gateway/kernels/",
                       "gateway/user.hpp") + LOWER, ()),
    "gateway/mcp": (("gateway/mcp/", "gateway/interpreter/", "gateway/http/",
                     "gateway/languages/",
                     "gateway/user.hpp") + LOWER, ()),
    # The E2B-compatible facade: an adapter beside mcp/, on the interpreter's contexts,
    # executions and files, never on the kernels layer directly.
    "gateway/e2b": (("gateway/e2b/", "gateway/interpreter/", "gateway/languages/", "gateway/http/",
                     "gateway/egress/egress_allowlist.hpp",
                     "gateway/user.hpp") + LOWER, ()),
}
# Public headers of transport keep ZeroMQ out (design: zmq.hpp is a private dependency);
# transport/detail/ holds the reactor's private parts, which nothing outside includes.
PRIVATE_IN_HEADERS = {"transport": ("zmq",)}
PRIVATE_FOLDERS = ("transport/detail/",)
# The zygote embeds Python in one file; nothing else sees the interpreter's C API.
ONLY_HERE = {"Python.h": "launcher/zygote/python_runtime.cpp"}
TOP = {"common", "kernelproto", "transport", "launcher", "gateway"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)


def rule_for(where):
    """The most specific rule whose folder holds the file at `where` (a relative path)."""
    folders = [f for f in RULES if where.as_posix().startswith(f + "/")]
    return max(folders, key=len) if folders else None


def check(root):
    problems = []
    for top in sorted(TOP):
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in (".hpp", ".cpp", ".h"):
                continue
            where = path.relative_to(root)
            folder = rule_for(where)
            allowed, forbidden = RULES[folder]
            for quote, target in INCLUDE.findall(path.read_text(errors="replace")):
                if quote == '"':
                    ours = "/" in target and target.split("/", 1)[0] in TOP
                    private = target.startswith(PRIVATE_FOLDERS)
                    if private and not where.as_posix().startswith(target.rsplit("/", 2)[0]):
                        problems.append(f"{where}: includes {target} (private to its folder)")
                    if ours and (not target.startswith(allowed) or
                                 any(target.startswith(p) for p in forbidden)):
                        problems.append(f"{where}: includes {target} ({folder} may not)")
                    continue
                if any(target.startswith(p) for p in forbidden):
                    problems.append(f"{where}: includes <{target}> ({folder} must not)")
                if target in ONLY_HERE and where.as_posix() != ONLY_HERE[target]:
                    problems.append(f"{where}: includes <{target}> (only {ONLY_HERE[target]} may)")
                if path.suffix == ".hpp" and not where.as_posix().startswith(
                        PRIVATE_FOLDERS) and any(
                        target.startswith(p) for p in PRIVATE_IN_HEADERS.get(folder, ())):
                    problems.append(f"{where}: a public header includes <{target}>")
    return problems


BACKTICKED = re.compile(r"`([^`]+)`")
PARENTHESES = re.compile(r"\([^()]*\)")


def documented_rules(text):
    """The "Layers" table of docs/architecture.md: {folder: (may include, must not include)},
    each a set of our path prefixes. In the "may" column, "itself" is the folder, "the four
    folders above" the lower layers, "everything" the gateway and those; what is in
    parentheses explains and is not read."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        folder = BACKTICKED.findall(cells[0])[0].rstrip("/")
        may_text = PARENTHESES.sub("", cells[1])
        may = {p for p in BACKTICKED.findall(may_text)}
        if "itself" in may_text:
            may.add(folder + "/")
        if "the four folders above" in may_text or "everything" in may_text:
            may.update(LOWER)
        if "everything" in may_text:
            may.add("gateway/")
        must_not = {p for p in BACKTICKED.findall(PARENTHESES.sub("", cells[2]))
                    if p.split("/", 1)[0] in TOP}
        rows[folder] = (may, must_not)
    return rows


def document_disagreements(root):
    """Where the document's table and RULES differ, in words."""
    doc = documented_rules((root / "docs" / "architecture.md").read_text())
    problems = []
    for folder in sorted(set(RULES) | set(doc)):
        if folder not in doc:
            problems.append(f"docs/architecture.md has no row for {folder}/")
            continue
        if folder not in RULES:
            problems.append(f"docs/architecture.md has a row for {folder}/, the checker no rule")
            continue
        allowed, forbidden = RULES[folder]
        ours_forbidden = {p for p in forbidden if p.split("/", 1)[0] in TOP}
        may, must_not = doc[folder]
        if may != set(allowed):
            problems.append(f"{folder}/ may include: the document says {sorted(may)}, the "
                            f"checker {sorted(allowed)}")
        if must_not != ours_forbidden:
            problems.append(f"{folder}/ must not include: the document says {sorted(must_not)},"
                            f" the checker {sorted(ours_forbidden)}")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parents[2])
    problems = check(root) + document_disagreements(root)
    for p in problems:
        print("layering: " + p)
    print(f"{0 if problems else 1} passed, {1 if problems else 0} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
