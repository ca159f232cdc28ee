# The zygote's Python (see python_runtime.hpp): defined in __main__ once, after
# launcher/kernelspec/ipykernel_bootstrap.py; python_runtime.cpp calls _callisto_preload in the zygote and
# _callisto_run_kernel in each fork.
import array, gc, importlib, mmap, os, select, shutil, signal, struct, sys, tempfile, time


def _callisto_preload(modules):
    # The inline backend, as ipykernel would set it, before matplotlib reads its rcParams.
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    started = time.monotonic()
    loaded, failed = [], {}
    for name in ["ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell"] + list(modules):
        try:
            importlib.import_module(name)
            loaded.append(name)
        except BaseException as e:  # a bad preload must not stop the zygote
            failed[name] = f"{type(e).__name__}: {e}"
    if "ipykernel.zmqshell" in loaded:
        try:
            _callisto_prebuild_shell()
            loaded.append(_CALLISTO_SHELL)
        except BaseException as e:  # the kernels build their own, as without a zygote
            failed[_CALLISTO_SHELL] = f"{type(e).__name__}: {e}"
    if _callisto_shell is not None:
        try:
            _callisto_warm_up_shell(_callisto_shell)
            loaded.append(_CALLISTO_WARM_UP)
        except BaseException as e:  # only slower first executions
            failed[_CALLISTO_WARM_UP] = f"{type(e).__name__}: {e}"
    if "ipykernel.kernelapp" in loaded:  # last: nothing in the zygote may see an application
        try:
            _callisto_prebuild_application()
            loaded.append(_CALLISTO_APPLICATION)
        except BaseException as e:  # the kernels build their own
            failed[_CALLISTO_APPLICATION] = f"{type(e).__name__}: {e}"
    _callisto_pack_module_names()
    gc.collect()
    gc.freeze()
    if "ipykernel.kernelapp" in loaded:  # after the freeze: the pages as every fork finds them
        try:
            _callisto_rehearse_start()
            loaded.append(_CALLISTO_START_WRITES)
        except BaseException as e:  # the kernels fault their pages in one by one
            failed[_CALLISTO_START_WRITES] = f"{type(e).__name__}: {e}"
    return loaded, failed, time.monotonic() - started, sys.version.split()[0]


# On the virtual machines Callisto is measured on, a page fault is dear: 13 us for a new page,
# 20-25 us for a copy of one of the zygote's, against 0.6 and 5-8 us for the same pages faulted
# in by madvise(MADV_POPULATE_WRITE) (docs/performance.md). A kernel's start and its first
# messages write some 3,900 of the zygote's pages, the same ones each time: reference counts,
# caches and the heap's free space, where ipykernel touches them. So the zygote rehearses one
# start: a fork runs ipykernel's start on sockets of its own in a private directory, handles the
# first messages a kernel gets, reads which of the zygote's pages it holds of its own
# (/proc/self/pagemap), reports them and exits. Each later ipykernel fork faults those pages in
# at once, before its Python runs (fork_server.cpp). A page it would not have written costs only
# its copy; one the rehearsal did not write is faulted in when written, as before.
_CALLISTO_START_WRITES = "the pages a start writes (rehearsed)"
# (address, length) pairs, flat, for python_runtime.cpp.
_callisto_start_writes = None
# What a client sends a new kernel first, as the rehearsal's kernel handles them: the gateway's
# kernel_info_request, then an execution (as one-shot executions and most sessions begin).
_CALLISTO_REHEARSED_MESSAGES = (
    ("kernel_info_request", {}),
    ("execute_request", {"code": "pass", "silent": False, "store_history": True,
                         "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}),
)


def _callisto_rehearse_start(timeout=60):
    global _callisto_start_writes
    regions = _callisto_private_writable_regions()
    cached = tempfile.tempdir
    try:
        directory = tempfile.mkdtemp(prefix="callisto-rehearsal-")
    finally:
        tempfile.tempdir = cached  # not chosen once for every fork: a kernel's TMPDIR counts
    try:
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except BaseException:
            os.close(read_end)
            os.close(write_end)
            raise
        if pid == 0:
            try:
                os.close(read_end)
                _callisto_rehearsal_kernel(directory, regions, write_end)
            finally:
                os._exit(1)  # never back into the zygote's code
        os.close(write_end)
        report, ended, deadline = bytearray(), False, time.monotonic() + timeout
        try:
            while not ended:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([read_end], [], [], left)[0]:
                    raise TimeoutError(f"the rehearsed start took more than {timeout} s")
                chunk = os.read(read_end, 1 << 16)
                report += chunk
                ended = not chunk
        finally:
            os.close(read_end)
            if not ended:  # timed out, or interrupted: the zygote must not wait for it
                os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        if status != 0 or not report.startswith(b"ok\n"):
            why = report.decode(errors="replace")
            if not why:
                try:
                    with open(os.path.join(directory, "output"), errors="replace") as f:
                        why = f.read()[-2000:]
                except OSError as e:
                    why = f"no report, no output ({e})"
            raise RuntimeError(f"the rehearsed start failed (wait status {status}): {why}")
        pairs = array.array("Q", (int(n) for n in report[3:].split()))
        if not pairs or len(pairs) % 2:
            raise RuntimeError(f"the rehearsed start reported {len(pairs)} numbers")
        _callisto_start_writes = pairs
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _callisto_rehearsal_kernel(directory, regions, report_fd):
    """The rehearsal's fork: ipykernel's start, on ipc sockets in `directory`, and its first
    messages (_CALLISTO_REHEARSED_MESSAGES); then the pages of `regions` it wrote, on
    `report_fd`. Never returns."""
    try:
        import ctypes, json

        # Gone with the zygote, and holding nothing of its but the report pipe (not its socket
        # to the gateway).
        parent = os.getppid()
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            return
        os.closerange(3, report_fd)
        os.closerange(report_fd + 1, os.sysconf("SC_OPEN_MAX"))
        output = os.open(os.path.join(directory, "output"), os.O_WRONLY | os.O_CREAT, 0o600)
        os.dup2(output, 1)
        os.dup2(output, 2)
        home = os.path.join(directory, "home")
        os.mkdir(home, 0o700)
        connection = os.path.join(directory, "kernel.json")
        with open(connection, "w") as f:
            json.dump({"transport": "ipc", "ip": os.path.join(directory, "s"),
                       "key": os.urandom(16).hex(), "signature_scheme": "hmac-sha256",
                       "shell_port": 0, "iopub_port": 0, "stdin_port": 0, "control_port": 0,
                       "hb_port": 0}, f)
        from ipykernel.kernelapp import IPKernelApp

        def report(text):
            data = memoryview(text.encode())
            while data:
                data = data[os.write(report_fd, data):]

        async def first_messages_then_report(app):
            try:
                # Handled as if they came in on the shell socket; the replies go to a peer
                # that is not there (a ROUTER socket drops them), the iopub messages likewise.
                import zmq
                for msg_type, content in _CALLISTO_REHEARSED_MESSAGES:
                    message = app.session.msg(msg_type, content)
                    frames = app.session.serialize(message, ident=b"rehearsal")
                    await app.kernel.dispatch_shell([zmq.Frame(frame) for frame in frames])
                ranges = _callisto_pages_written(regions)
                report("ok\n" + "".join(f"{address} {length}\n" for address, length in ranges))
                os._exit(0)  # no atexit: the sockets' files go with the directory
            except BaseException as e:
                report(f"the rehearsed messages failed: {type(e).__name__}: {e}")
                os._exit(1)

        def start_then_rehearse_messages(app):
            from tornado.ioloop import IOLoop
            IOLoop.current().add_callback(first_messages_then_report, app)
            start(app)

        start, IPKernelApp.start = IPKernelApp.start, start_then_rehearse_messages
        os.chdir(directory)
        env = dict(os.environ, HOME=home)
        _callisto_run_kernel([sys.executable, "-m", "ipykernel_launcher", "-f", connection], env)
    except BaseException as e:
        try:
            os.write(report_fd, f"{type(e).__name__}: {e}".encode())
        except OSError:
            pass
    finally:
        os._exit(1)  # a rehearsal that went well exited 0 once it reported


def _callisto_private_writable_regions():
    """The (low, high) address ranges of this process's private writable mappings."""
    regions = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if fields[1].startswith("rw") and fields[1][3] == "p":
                low, high = (int(x, 16) for x in fields[0].split("-"))
                regions.append((low, high))
    return regions


def _callisto_pages_written(regions):
    """(address, length) of each run of pages in `regions` that this process holds of its own,
    present and mapped by it alone: copied from its parent's, or new."""
    page, runs = mmap.PAGESIZE, []
    with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
        for low, high in regions:
            pagemap.seek(low // page * 8)
            entries = bytearray()
            while len(entries) < (high - low) // page * 8:
                chunk = pagemap.read((high - low) // page * 8 - len(entries))
                if not chunk:
                    break
                entries += chunk
            for index, (entry,) in enumerate(struct.iter_unpack("<Q", entries)):
                # present (bit 63), mapped exclusively (56), anonymous (61 clear)
                if entry >> 63 & 1 and entry >> 56 & 1 and not entry >> 61 & 1:
                    address = low + index * page
                    if runs and runs[-1][0] + runs[-1][1] == address:
                        runs[-1][1] += page
                    else:
                        runs.append([address, page])
    return runs


# IPython's start takes a set of sys.modules' keys (init_code: for `%reset` to tell the modules
# imported since). Those keys are the names of some 1,500 modules, each string allocated beside
# its module's other objects when that module was imported: the set's reference counts wrote
# to some 900 pages, each then copied by each fork (2.4 ms). Copies made here, one after
# another, share about 150 pages: a start copies 550 pages fewer, of 3,600
# (bench/zygote_fork_start.py). Same names, same order, same module objects: only the key
# objects are new.
def _callisto_pack_module_names():
    modules = list(sys.modules.items())
    packed = []
    for name, module in modules:
        try:
            packed.append((name.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass"),
                           module))
        except Exception:  # not a str: kept as it is
            packed.append((name, module))
    sys.modules.clear()
    sys.modules.update(packed)


# IPython's shell is half of an ipykernel's start after the fork (35 ms of 75 measured, most
# of it traitlets and the magics' argument parsers) and depends on nothing of one kernel's: not
# its sockets, key, directory or environment. So the zygote builds it once; the kernel
# application in each fork takes it over (_callisto_adopt_prebuilt_shell) where a normal start
# would build it, and sets what is the kernel's own: kernel, profile, history, home, __main__.
_CALLISTO_SHELL = "ipykernel's shell (built once)"
_callisto_shell = None


def _callisto_prebuild_shell():
    global _callisto_shell
    from IPython.core.history import HistoryManager
    from IPython.core.profiledir import ProfileDir
    from IPython.paths import get_ipython_dir
    from ipykernel.compiler import XCachingCompiler
    from ipykernel.zmqshell import ZMQInteractiveShell

    def history_in_memory(shell):
        # No database and no saving thread in the zygote (a thread would not survive the
        # fork): each kernel opens its own at adoption.
        shell.history_manager = HistoryManager(shell=shell, parent=shell, enabled=False)
        shell.configurables.append(shell.history_manager)

    main, init_history = sys.modules["__main__"], ZMQInteractiveShell.init_history
    ZMQInteractiveShell.init_history = history_in_memory
    try:
        # In the zygote's home; each kernel's own profile replaces it.
        profile = ProfileDir.create_profile_dir_by_name(get_ipython_dir(), "default")
        _callisto_shell = ZMQInteractiveShell.instance(profile_dir=profile,
                                                       compiler_class=XCachingCompiler)
    finally:
        ZMQInteractiveShell.init_history = init_history
        sys.modules["__main__"] = main  # the shell made its namespace __main__; not here
    # E2B's descriptions of DataFrames and figures (ipykernel_bootstrap.py): added here once,
    # not in every fork (a formatter class and two instances; a fork finds them in place).
    _callisto_try(lambda: _callisto_add_result_formatters(_callisto_shell),
                  "E2B's results get no data or chart")


# A fresh kernel's first execution took twice as long as its next ones (18 against 8.5 ms,
# p50 of 12): Python 3.11 specializes a function's bytecode only after it ran a few times, and
# IPython builds parts of its execution path on first use. Run in the zygote, silently and
# without history, a few cells make both happen once, in pages every fork shares (first
# execution 11 ms). The shell keeps nothing of them: no execution count, no history, no name.
_CALLISTO_WARM_UP = "IPython's execution path (warmed up)"


def _callisto_warm_up_shell(shell):
    import importlib.util

    names = set(shell.user_ns)
    cells = ["pass", "x = 1\ndel x", "len([1])"]
    # numpy's import too, where the environment has it: an isolated venv's zygote may not.
    if importlib.util.find_spec("numpy") is not None:
        cells.insert(2, "import numpy")
    for cell in cells:
        for _ in range(10):
            result = shell.run_cell(cell, store_history=False, silent=True)
            if not result.success:
                raise RuntimeError(f"warm-up cell {cell!r} failed: {result.error_in_exec!r}")
    for name in set(shell.user_ns) - names:
        del shell.user_ns[name]


# The kernel application's object, built once as well: 3-4 ms of each fork's start, most of it
# copying the pages its construction writes to. Built, it holds nothing but an empty
# configuration, as after `IPKernelApp.instance()` in any start: every trait that depends on the
# kernel (its arguments, configuration, profile, connection file) is read or computed later, in
# the fork, by `initialize`.
_CALLISTO_APPLICATION = "ipykernel's application (built once)"


def _callisto_prebuild_application():
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    computed = set(app._trait_values) - {"config", "parent"}
    if computed or app.config:
        IPKernelApp.clear_instance()
        raise RuntimeError(f"the application holds more than an empty configuration: "
                           f"{sorted(computed) or dict(app.config)}")
    app._callisto_prebuilt = True  # for tests and whoever debugs a kernel


def _callisto_drop_prebuilt_application():
    """For a kernel that is not ipykernel's own: its application class may be a subclass, which
    a built IPKernelApp, as a singleton, would refuse."""
    kernelapp = sys.modules.get("ipykernel.kernelapp")
    if kernelapp is not None:
        kernelapp.IPKernelApp.clear_instance()


def _callisto_drop_prebuilt_shell():
    """For a kernel that builds its own shell: ZMQInteractiveShell.instance() must not return
    the zygote's, which no kernel took over."""
    import atexit

    if _callisto_shell is not None:
        type(_callisto_shell).clear_instance()
        atexit.unregister(_callisto_shell.atexit_operations)  # the zygote's registration


# ipykernel's start flushes stdout and stderr four times (twice in init_code, twice at the end
# of initialize). Each flush waits for a round trip through the iopub thread, the first one for
# that thread to come up at all: 1-6 ms of a start, with nothing to send unless startup code
# printed. During initialize, a flush of a stream that holds nothing returns at once; one with
# output flushes as always. Kernel code after the start never meets this: flush is ipykernel's
# own again once initialize returns.
def _callisto_skip_empty_flushes_while_initializing():
    from ipykernel.iostream import OutStream
    from ipykernel.kernelapp import IPKernelApp

    initialize, flush = IPKernelApp.initialize, OutStream.flush

    def flush_unless_empty(stream):
        if stream.echo is None and not stream._flush_pending and \
                not stream._subprocess_flush_pending:
            with stream._buffer_lock:
                if stream._buffer.tell() == 0:
                    return
        flush(stream)

    def initialize_skipping_empty_flushes(app, *args, **kwargs):
        OutStream.flush = flush_unless_empty
        try:
            return initialize(app, *args, **kwargs)
        finally:
            OutStream.flush = flush
            IPKernelApp.initialize = initialize

    IPKernelApp.initialize = initialize_skipping_empty_flushes


def _callisto_adopt_prebuilt_shell():
    """In a fork: the kernel application takes the prebuilt shell, unless its configuration
    (arguments, config files) says anything the shell was not built with, or its kernel is not
    ipykernel's own. Then it builds its own, exactly as without a zygote."""
    from ipykernel.ipkernel import IPythonKernel
    from ipykernel.kernelapp import IPKernelApp

    shell, init_kernel = _callisto_shell, IPKernelApp.init_kernel

    def init_kernel_with_prebuilt_shell(app):
        if app.kernel_class is not IPythonKernel or set(app.config) - {"IPKernelApp"}:
            _callisto_drop_prebuilt_shell()
            return init_kernel(app)
        init_kernel(app)  # ZMQInteractiveShell.instance() returns the prebuilt shell
        if app.kernel.shell is not shell:
            raise RuntimeError("the kernel did not take the zygote's shell")
        _callisto_make_shell_the_kernels(shell, app.kernel)

    IPKernelApp.init_kernel = init_kernel_with_prebuilt_shell


def _callisto_read_connection_file_argument():
    """A kernelspec's usual arguments, `-f FILE`, read as traitlets would read them, without
    building its argument parser for every trait of every class (10 ms of a start after the
    shell). Any other command line goes through the parser."""
    from copy import deepcopy
    from ipykernel.kernelapp import IPKernelApp
    from traitlets.config import Config

    parse_command_line = IPKernelApp.parse_command_line

    def parse_connection_file_argument(app, argv=None):
        argv = sys.argv[1:] if argv is None else argv
        if len(argv) != 2 or argv[0] != "-f" or argv[1].startswith("-"):
            return parse_command_line(app, argv)
        app.argv = list(argv)
        app.cli_config = deepcopy(Config({"IPKernelApp": {"connection_file": argv[1]}}))
        app.update_config(app.cli_config)
        app.extra_args = []

    IPKernelApp.parse_command_line = parse_connection_file_argument


def _callisto_make_shell_the_kernels(shell, kernel):
    """What InteractiveShell.__init__ takes from its kernel, its process and its environment."""
    import atexit
    from IPython.core.history import HistoryManager
    from IPython.paths import get_ipython_dir
    from IPython.utils.path import get_home_dir

    shell.parent = kernel
    shell.kernel = kernel
    shell.profile_dir = kernel.profile_dir
    # Set quietly: the extension manager would create <ipython_dir>/extensions, which a
    # kernel's own start does not.
    extensions = shell.extension_manager._on_ipython_dir_changed
    shell.unobserve(extensions, names="ipython_dir")
    shell.ipython_dir = get_ipython_dir()
    shell.observe(extensions, names="ipython_dir")
    shell.home_dir = get_home_dir()
    shell.init_environment()  # TERM, PAGER and the like, in this kernel's environment
    shell.save_sys_module_state()  # this process's streams, restored at exit
    shell.init_sys_modules()  # the user's namespace as __main__ (pickle finds its classes)
    shell.db = type(shell.db)(os.path.join(shell.profile_dir.location, "db"))
    in_memory = shell.history_manager
    shell.history_manager = HistoryManager(shell=shell, parent=shell)
    shell.configurables[shell.configurables.index(in_memory)] = shell.history_manager
    shell.init_user_ns()  # In, Out, _ih, _oh, _dh: the new history's
    # Registered again, so that at exit it runs before the application closes its sockets (as
    # when the shell is built after them). Run after instead, the close raced ipykernel's
    # control thread, still flushing its reply to shutdown_request: 1 exit in 5 waited 10 s.
    atexit.unregister(shell.atexit_operations)
    atexit.register(shell.atexit_operations)
    shell._callisto_prebuilt = True  # for tests and whoever debugs a kernel


def _callisto_run_kernel(argv, env):
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # chosen by the zygote's imports: the kernel's own TMPDIR counts
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()  # numpy has no at-fork reseed; `random` and `uuid` need none
    # As `python -m module args`: the module's file as argv[0], the cwd first on sys.path.
    module = argv[2]
    if module.startswith("ipykernel"):
        _callisto_try_iopub_holds_bursts()  # launcher/kernelspec/ipykernel_bootstrap.py
        _callisto_try_history_in_memory()  # likewise
        _callisto_try_error_fields_fit()  # likewise
        _callisto_try_e2b_result_formats()  # likewise
        _callisto_read_connection_file_argument()
        _callisto_skip_empty_flushes_while_initializing()
        if _callisto_shell is not None:
            _callisto_adopt_prebuilt_shell()
    else:  # another kernel, perhaps built on ipykernel's classes: it builds its own objects
        _callisto_drop_prebuilt_shell()
    # Narrower than the shell's test: the shell checks at adoption that the kernel is ipykernel's
    # own, the application is taken as is, so only the two modules known to run IPKernelApp keep it.
    if module not in ("ipykernel_launcher", "ipykernel"):
        _callisto_drop_prebuilt_application()
    sys.argv = [argv[0]] + list(argv[3:])
    sys.path.insert(0, os.getcwd())
    import atexit, runpy, traceback
    code = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.__stderr__)
            code = 1
    except BaseException:
        traceback.print_exc(file=sys.__stderr__)
        code = 1
    if module.startswith("ipykernel"):
        _callisto_let_the_control_thread_finish()  # launcher/kernelspec/ipykernel_bootstrap.py
    # What the interpreter's own exit runs (IPython saves its history here), but not its
    # finalization, which would touch every object shared with the zygote and copy its
    # pages only to free them.
    atexit._run_exitfuncs()
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:
            pass
    return code
