#include "gateway/languages/python_snapshot.hpp"

#include "gateway/languages/kernel_dialect.hpp"

namespace callisto::gateway::languages::python_snapshot {

namespace {

// One function defined, called and deleted: nothing of it stays in the namespace. Values are
// tested one at a time (dill.dumps) so that one that fails is named with its reason, and
// stored as bytes, so that loading one that fails does not lose the others. Functions and
// classes of the user's are pickled by value, their globals by reference to __main__: loaded,
// they see the new kernel's namespace, as they saw the old one's.
const char* const save_body = R"PY(
def _callisto_snapshot_save(workdir, blob_name, report_name):
    import io, json, os, pickle, socket, sys, threading, types
    import dill
    ip = get_ipython()
    hidden = ip.user_ns_hidden
    skip = {'In', 'Out', 'get_ipython', 'exit', 'quit', 'open'}
    unsafe = (
        (types.GeneratorType, 'a generator is running code: it cannot be serialized'),
        (types.CoroutineType, 'a coroutine is running code: it cannot be serialized'),
        (types.AsyncGeneratorType, 'an async generator is running code: it cannot be serialized'),
        (socket.socket, 'an open socket belongs to this process'),
        (threading.Thread, 'a thread belongs to this process'),
        (io.IOBase, 'an open file belongs to this process'),
        (types.FrameType, 'a frame belongs to this process'),
    )
    modules, values, carried, not_carried = {}, {}, [], []
    for name, value in list(ip.user_ns.items()):
        if name.startswith('_') or name in skip:
            continue
        if name in hidden and hidden[name] is value:
            continue
        kind = type(value).__module__ + '.' + type(value).__qualname__
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
            carried.append(name)
            continue
        reason = next((why for t, why in unsafe if isinstance(value, t)), None)
        if reason is None:
            try:
                values[name] = dill.dumps(value)
                carried.append(name)
                continue
            except BaseException as e:
                reason = (type(e).__name__ + ': ' + str(e))[:300]
        not_carried.append({'name': name, 'type': kind, 'reason': reason})
    blob = os.path.join(workdir, blob_name)
    with open(blob + '.part', 'wb') as f:
        pickle.dump({'format': 1, 'python': list(sys.version_info[:2]), 'modules': modules,
                     'values': values}, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(blob + '.part', blob)
    with open(os.path.join(workdir, report_name), 'w') as f:
        json.dump({'carried': sorted(carried), 'not_carried': not_carried}, f)
)PY";

const char* const load_body = R"PY(
def _callisto_snapshot_load(workdir, blob_name, report_name):
    import importlib, json, os, pickle
    import dill
    ip = get_ipython()
    blob = os.path.join(workdir, blob_name)
    with open(blob, 'rb') as f:
        saved = pickle.load(f)
    os.unlink(blob)
    carried, not_carried = [], []
    for name, module in saved['modules'].items():
        try:
            ip.user_ns[name] = importlib.import_module(module)
            carried.append(name)
        except BaseException as e:
            not_carried.append({'name': name, 'type': 'module ' + module,
                                'reason': (type(e).__name__ + ': ' + str(e))[:300]})
    for name, data in saved['values'].items():
        try:
            ip.user_ns[name] = dill.loads(data)
            carried.append(name)
        except BaseException as e:
            not_carried.append({'name': name, 'type': 'unknown',
                                'reason': (type(e).__name__ + ': ' + str(e))[:300]})
    with open(os.path.join(workdir, report_name), 'w') as f:
        json.dump({'carried': sorted(carried), 'not_carried': not_carried}, f)
)PY";

std::string call(const char* body, const std::string& function, const std::string& workdir) {
    return std::string(body) + "try:\n    " + function + "(" + string_literal(workdir) + ", " +
           string_literal(blob_name) + ", " + string_literal(report_name) +
           ")\nfinally:\n    del " + function + "\n";
}

}  // namespace

std::string save_code(const std::string& workdir) {
    return call(save_body, "_callisto_snapshot_save", workdir);
}

std::string load_code(const std::string& workdir) {
    return call(load_body, "_callisto_snapshot_load", workdir);
}

}  // namespace callisto::gateway::languages::python_snapshot
