# The zygote's Python (see python_runtime.hpp): defined in __main__ once, after
# launcher/ipykernel_bootstrap.py; python_runtime.cpp calls _callisto_preload in the zygote and
# _callisto_run_kernel in each fork.
import gc, importlib, os, sys, time

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
    gc.collect()
    gc.freeze()
    return loaded, failed, time.monotonic() - started, sys.version.split()[0]

def _callisto_run_kernel(argv, env):
    os.environ.clear()
    os.environ.update(env)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()  # numpy has no at-fork reseed; `random` and `uuid` need none
    # As `python -m module args`: the module's file as argv[0], the cwd first on sys.path.
    module = argv[2]
    if module.startswith("ipykernel"):
        _callisto_try_iopub_holds_bursts()  # launcher/ipykernel_bootstrap.py
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
