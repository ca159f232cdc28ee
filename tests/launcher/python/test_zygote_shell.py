#!/usr/bin/python3
"""The zygote's prebuilt IPython shell (launcher/zygote/zygote_helpers.py), without the sandbox.

This process plays the zygote: it defines the helpers as callisto-zygote does, preloads, and
forks kernels that run `_callisto_run_kernel` as a fork of the zygote does. A jupyter_client
then checks that a kernel which took the prebuilt shell behaves as one that built its own:
its own history (in memory), In/Out, `__main__`, its home and environment; that two kernels share
nothing of it; that a kernel configured differently (here an argument for the shell) builds
its own, configured; and that a kernel of another application class builds its own application.
It also checks what the zygote's rehearsed start reports (the pages each fork faults in first).

  /usr/bin/python3 test_zygote_shell.py SOURCE_DIR
"""

import json
import mmap
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

from checks import (SOURCE_DIR, check, failures, ports_written, ready_client, summary,
                    write_connection_file)


def define_helpers():
    for name in ("launcher/kernelspec/ipykernel_bootstrap.py", "launcher/zygote/zygote_helpers.py"):
        with open(os.path.join(SOURCE_DIR, name)) as f:
            exec(compile(f.read(), name, "exec"), globals())


def fork_kernel(root, name, extra_args=(), module="ipykernel_launcher", module_source=None):
    """A kernel forked from this process, in its own directory and home; its connection file.
    With module_source, `module` is that file in the kernel's directory."""
    work = os.path.join(root, name)
    home = os.path.join(work, "home")
    os.makedirs(home)
    os.makedirs(os.path.join(work, "tmp"))
    if module_source is not None:
        with open(os.path.join(work, module + ".py"), "w") as f:
            f.write(module_source)
    connection = os.path.join(work, "kernel.json")
    write_connection_file(connection)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
           "TMPDIR": os.path.join(work, "tmp"),
           "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    argv = [sys.executable, "-m", module, "-f", connection, *extra_args]
    pid = os.fork()
    if pid == 0:
        code = 1  # if anything below raises: the child must never return into the test
        try:
            os.chdir(work)
            log = os.open(os.path.join(work, "kernel.log"), os.O_WRONLY | os.O_CREAT, 0o600)
            os.dup2(log, 1)
            os.dup2(log, 2)
            code = _callisto_run_kernel(argv, env)  # noqa: F821 - defined by define_helpers
        finally:
            os._exit(code)
    return pid, connection, work


def exits_within(pid, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return True
        time.sleep(0.02)
    return False


class Client:
    def __init__(self, connection):
        deadline = time.monotonic() + 60
        while not ports_written(connection):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{connection}: the kernel wrote no ports")
            time.sleep(0.05)
        self.kc = ready_client(connection)

    def run(self, code):
        """(text of stdout + results, error name or None)"""
        msg_id = self.kc.execute(code)
        out, error = [], None
        while True:
            m = self.kc.get_iopub_msg(timeout=60)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = m["msg_type"], m["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                out.append(content["data"].get("text/plain", "") + "\n")
            elif kind == "error":
                error = content["ename"]
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out).strip(), error

    def value(self, expression):
        text, error = self.run(f"import json as _j; print(_j.dumps({expression}))")
        if error:
            raise RuntimeError(f"{expression}: {error}")
        return json.loads(text)

    def close(self):
        self.kc.shutdown()
        self.kc.stop_channels()


def main():
    define_helpers()
    # A temporary directory of this test's own, for the rehearsal's.
    own_tmp = tempfile.mkdtemp(prefix="callisto-zygote-shell-tmp-")
    os.environ["TMPDIR"], tempfile.tempdir = own_tmp, None
    loaded, failed, _, _ = _callisto_preload(["numpy"])  # noqa: F821
    check(os.listdir(own_tmp) == [], "the rehearsal left nothing in the temporary directory",
          os.listdir(own_tmp))
    del os.environ["TMPDIR"]
    tempfile.tempdir = None  # as the preload's imports cached it
    os.rmdir(own_tmp)
    check(_CALLISTO_SHELL in loaded, "the zygote built the shell", failed)  # noqa: F821
    check(_CALLISTO_WARM_UP in loaded, "the zygote warmed its shell up", failed)  # noqa: F821
    check(_CALLISTO_APPLICATION in loaded, "the zygote built the application", failed)  # noqa
    check(_CALLISTO_START_WRITES in loaded, "the zygote rehearsed a start", failed)  # noqa
    pairs, page = _callisto_start_writes or [], mmap.PAGESIZE  # noqa: F821
    regions = []  # adjacent ones joined: a range may go on from one mapping into the next
    for low, high in _callisto_private_writable_regions():  # noqa: F821
        if regions and regions[-1][1] == low:
            regions[-1][1] = high
        else:
            regions.append([low, high])
    ranges = list(zip(pairs[::2], pairs[1::2]))
    check(sum(length for _, length in ranges) // page > 500,
          "the rehearsed start wrote hundreds of the zygote's pages", len(ranges))
    check(all(address % page == 0 and length % page == 0 and length > 0 and
              any(low <= address and address + length <= high for low, high in regions)
              for address, length in ranges),
          "each range it reports is whole pages of the zygote's private writable memory")
    check(threading.active_count() == 1, "the zygote runs one thread after building it",
          [t.name for t in threading.enumerate()])
    check(sys.modules["__main__"].__dict__.get("_callisto_run_kernel") is not None,
          "the zygote's __main__ is still its own")
    before = list(sys.modules.items())
    _callisto_pack_module_names()  # noqa: F821 - as the preload did
    after = list(sys.modules.items())
    check([n for n, _ in after] == [n for n, _ in before] and
          all(a is b for (_, a), (_, b) in zip(after, before)),
          "packing sys.modules' names keeps every name, its module and their order")
    check(all(a is not b for (a, _), (b, _) in zip(after, before) if isinstance(a, str)),
          "and makes new name objects")

    root = tempfile.mkdtemp(prefix="callisto-zygote-shell-")
    pids = []
    try:
        a_pid, a_conn, a_work = fork_kernel(root, "a")
        b_pid, b_conn, b_work = fork_kernel(root, "b")
        c_pid, c_conn, _ = fork_kernel(root, "c", ["--InteractiveShell.ast_node_interactivity=all"])
        # An application of its own class, as a kernelspec naming another module may run: the
        # built IPKernelApp, a singleton, must not stand in its way.
        d_pid, d_conn, _ = fork_kernel(root, "d", module="own_kernel", module_source=(
            "from ipykernel.kernelapp import IPKernelApp\n"
            "class OwnKernelApp(IPKernelApp):\n    pass\n"
            "if __name__ == '__main__':\n    OwnKernelApp.launch_instance()\n"))
        pids = [a_pid, b_pid, c_pid, d_pid]
        a, b, c, d = Client(a_conn), Client(b_conn), Client(c_conn), Client(d_conn)

        # Nothing of the zygote's warm-up cells: the first execution is the first.
        first = a.value("[get_ipython().execution_count, len(In), "
                        "[n for n in ('x', 'numpy') if n in dir()]]")
        check(first == [1, 2, []], "a fresh kernel's first execution is its first", first)
        prebuilt = "getattr(get_ipython(), '_callisto_prebuilt', False)"
        check(a.value(prebuilt) and b.value(prebuilt), "kernels A and B took the prebuilt shell")
        check(not c.value(prebuilt), "kernel C, configured for the shell, built its own")
        app = "get_ipython().kernel.parent"
        check(a.value(f"getattr({app}, '_callisto_prebuilt', False)") and
              c.value(f"getattr({app}, '_callisto_prebuilt', False)"),
              "kernels A and C took the prebuilt application")
        check(c.value(f"{app}.config.InteractiveShell.ast_node_interactivity") == "all",
              "kernel C's application read its arguments")
        check(d.value(f"[type({app}).__name__, hasattr({app}, '_callisto_prebuilt')]") ==
              ["OwnKernelApp", False], "kernel D runs an application of its own class")
        # launcher/kernelspec/ipykernel_bootstrap.py: E2B's data and chart, in the prebuilt
        # shell and in one a kernel built (not in kernel D: no ipykernel module, no patches).
        formats = ("[m in get_ipython().display_formatter.formatters for m in ("
                   "'application/vnd.callisto.dataframe+json', "
                   "'application/vnd.callisto.chart+json')]")
        described = [k.value(formats) for k in (a, c)]
        check(described == [[True, True]] * 2,
              "kernels A and C describe DataFrames and figures", described)
        check(a.value("[type(s).flush.__qualname__ for s in (__import__('sys').stdout, "
                      "__import__('sys').stderr)]") == ["OutStream.flush"] * 2,
              "after the start, flushing is ipykernel's own")
        text, _ = a.run("import sys\nprint('one', end='')\nsys.stdout.flush()\nprint('two')")
        check(text == "onetwo", "output flushed by hand arrives", text)
        # -f FILE read without traitlets' parser, to the same configuration.
        from ipykernel.kernelapp import IPKernelApp
        from traitlets.config.application import Application
        parsed = IPKernelApp()
        Application.parse_command_line(parsed, ["-f", a_conn])
        check(a.value(f"type({app}).parse_command_line.__name__") ==
              "parse_connection_file_argument", "kernel A read -f FILE directly")
        check(a.value(f"[{app}.cli_config, {app}.extra_args, {app}.connection_file]") ==
              [json.loads(json.dumps(parsed.cli_config)), parsed.extra_args, a_conn],
              "to what traitlets' parser reads", a.value(f"{app}.cli_config"))
        check(a.value("__import__('tempfile').gettempdir()") == os.path.join(a_work, "tmp"),
              "kernel A's temporary directory is its TMPDIR, not the one the zygote chose",
              a.value("__import__('tempfile').gettempdir()"))
        a.run("x = 6 * 7")
        check(a.run("x")[0] == "42", "kernel A computes")
        check(b.run("'x' in dir()")[0] == "False", "kernel B does not see A's variable")
        shell = ("get_ipython().home_dir, get_ipython().profile_dir.location, "
                 "str(get_ipython().history_manager.hist_file), get_ipython().ipython_dir")
        for name, kernel, work in (("A", a, a_work), ("B", b, b_work)):
            home, profile, history, ipython_dir = kernel.value(f"[{shell}]")
            home_expected = os.path.join(work, "home")
            check(home == home_expected, f"kernel {name}'s shell has its home", home)
            check(profile == os.path.join(home_expected, ".ipython", "profile_default"),
                  f"kernel {name}'s profile is in its home", profile)
            # Kept in memory (launcher/kernelspec/ipykernel_bootstrap.py): no file, no saving thread.
            check(history == ":memory:", f"kernel {name}'s history is its own, in memory", history)
            check(ipython_dir == os.path.join(home_expected, ".ipython"),
                  f"kernel {name}'s IPython directory is in its home", ipython_dir)
            check(not os.path.exists(os.path.join(ipython_dir, "extensions")),
                  f"kernel {name} has no extensions directory a normal start would not make")
        check(a.value("get_ipython().kernel.ident") != b.value("get_ipython().kernel.ident"),
              "each shell serves its own kernel")
        check(a.value("get_ipython().parent is get_ipython().kernel"),
              "the shell's parent is its kernel")
        check(a.value("__import__('os').environ.get('PAGER')") == "cat",
              "the shell set its variables in the kernel's environment")

        a.run("y = 1")
        text, _ = a.run("%history -n")
        check("x = 6 * 7" in text and "y = 1" in text, "%history lists A's cells", text)
        text, _ = b.run("%history -n")
        check("x = 6 * 7" not in text, "B's history holds nothing of A's", text)
        check(a.value("'x = 6 * 7' in In and 42 in Out.values()"), "In and Out")
        check(a.value("__import__('__main__').__dict__ is get_ipython().user_ns"),
              "__main__ is the user's namespace")
        text, error = a.run("import pickle\nclass Point: pass\n"
                            "type(pickle.loads(pickle.dumps(Point()))).__name__")
        check(error is None and "Point" in text, "a class defined in a cell pickles", error)
        text, error = b.run("import wave\n%reset -f --aggressive\nimport sys\n"
                            "print('wave' in sys.modules, 'numpy' in sys.modules)")
        check(error is None and text.endswith("False True"),  # after "culling sys module..."
              "%reset --aggressive drops what was imported since the start, not the zygote's",
              repr(f"{text} {error}"))
        text, error = a.run("1 / 0")
        check(error == "ZeroDivisionError", "an error is an error", error)

        text, _ = c.run("1 + 1\n2 + 2")
        check(text.split() == ["2", "4"],
              "a kernel configured for the shell builds its own, configured", text)
        check(c.value("get_ipython().home_dir") == os.path.join(root, "c", "home"),
              "the configured kernel's shell has its home")

        for client in (a, b, c, d):
            client.close()
        for pid in pids:
            _, status = os.waitpid(pid, 0)
            check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
                  f"kernel {pid} exits cleanly", status)
        pids = []
        check(not os.path.exists(os.path.join(a_work, "home", ".ipython", "profile_default",
                                              "history.sqlite")),
              "A left no history file in its profile")

        # At exit the shell must save its history before the application closes its sockets,
        # as when it is built after them: the other order raced the control thread's reply to
        # shutdown_request, and about 1 exit in 5 waited out ipykernel's 10 s flush timeout.
        slow = []
        for i in range(20):
            pid, connection, _ = fork_kernel(root, f"exit{i}")
            pids = [pid]
            client = Client(connection)
            client.close()
            if not exits_within(pid, 8):
                slow.append(i)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            pids = []
        check(not slow, "20 kernels in a row exit promptly after shutdown_request",
              f"kernels {slow} still ran 8 s after it")
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        if failures:
            for name in ("a", "b", "c", "d"):
                log = os.path.join(root, name, "kernel.log")
                if os.path.exists(log):
                    print(f"--- kernel {name}'s log\n" + open(log).read())
        shutil.rmtree(root, ignore_errors=True)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
