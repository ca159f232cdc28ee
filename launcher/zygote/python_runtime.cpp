// Python.h first, before any standard header: it sets feature macros they read.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "launcher/zygote/python_runtime.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "launcher/kernelspec/ipykernel_bootstrap.hpp"
#include "launcher/zygote/zygote_helpers.hpp"

namespace callisto::launcher::zygote {

namespace {

PyObject* main_dict() { return PyModule_GetDict(PyImport_AddModule("__main__")); }

std::string error_text() {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    std::string out = "unknown Python error";
    if (value) {
        if (PyObject* s = PyObject_Str(value)) {
            if (const char* c = PyUnicode_AsUTF8(s)) out = c;
            Py_DECREF(s);
        }
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    PyErr_Clear();
    return out;
}

PyObject* string_list(const std::vector<std::string>& items) {
    PyObject* list = PyList_New(0);
    for (const auto& item : items) {
        PyObject* s =
            PyUnicode_DecodeFSDefaultAndSize(item.data(), static_cast<Py_ssize_t>(item.size()));
        PyList_Append(list, s);
        Py_DECREF(s);
    }
    return list;
}

std::vector<std::string> strings_of(PyObject* list) {
    std::vector<std::string> out;
    for (Py_ssize_t i = 0; i < PyList_Size(list); ++i)
        if (const char* c = PyUnicode_AsUTF8(PyList_GetItem(list, i))) out.emplace_back(c);
    return out;
}

}  // namespace

python_runtime::python_runtime(const std::string& program) {
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.parse_argv = 0;
    // sys.executable, sys.prefix and sys.path as `program` itself computes them.
    PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, program.c_str());
    if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status))
        throw std::runtime_error(std::string("Python did not start: ") +
                                 (status.err_msg ? status.err_msg : "unknown error"));
    if (PyRun_SimpleString(std::string(ipykernel_bootstrap_source()).c_str()) != 0 ||
        PyRun_SimpleString(std::string(zygote_helpers_source()).c_str()) != 0)
        throw std::runtime_error("the zygote's Python helpers did not load");
}

zygote_protocol::ready_event python_runtime::preload(const std::vector<std::string>& modules) {
    zygote_protocol::ready_event ready;
    PyObject* fn = PyDict_GetItemString(main_dict(), "_callisto_preload");  // borrowed
    PyObject* args = string_list(modules);
    PyObject* result = fn ? PyObject_CallOneArg(fn, args) : nullptr;
    Py_DECREF(args);
    if (!result) throw std::runtime_error("preload failed: " + error_text());
    PyObject* failed = PyTuple_GetItem(result, 1);
    ready.preloaded = strings_of(PyTuple_GetItem(result, 0));
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(failed, &pos, &key, &value)) {
        const char* k = PyUnicode_AsUTF8(key);
        const char* v = PyUnicode_AsUTF8(value);
        if (k && v) ready.failed[k] = v;
    }
    ready.seconds = PyFloat_AsDouble(PyTuple_GetItem(result, 2));
    if (const char* v = PyUnicode_AsUTF8(PyTuple_GetItem(result, 3))) ready.python = v;
    Py_DECREF(result);
    return ready;
}

std::vector<page_prefault::range> python_runtime::start_writes() const {
    std::vector<page_prefault::range> ranges;
    PyObject* pairs = PyDict_GetItemString(main_dict(), "_callisto_start_writes");  // borrowed
    Py_buffer view;
    if (!pairs || pairs == Py_None || PyObject_GetBuffer(pairs, &view, PyBUF_FORMAT) != 0) {
        PyErr_Clear();
        return ranges;
    }
    // An array('Q') of address, length pairs (zygote_helpers.py).
    if (view.itemsize == sizeof(std::uint64_t) && view.format && std::string(view.format) == "Q") {
        const auto* numbers = static_cast<const std::uint64_t*>(view.buf);
        const auto count = static_cast<std::size_t>(view.len) / sizeof(std::uint64_t);
        for (std::size_t i = 0; i + 1 < count; i += 2)
            ranges.emplace_back(static_cast<std::uintptr_t>(numbers[i]),
                                static_cast<std::size_t>(numbers[i + 1]));
    }
    PyBuffer_Release(&view);
    return ranges;
}

void python_runtime::before_fork() { PyOS_BeforeFork(); }
void python_runtime::after_fork_in_parent() { PyOS_AfterFork_Parent(); }

int python_runtime::run_kernel(const std::vector<std::string>& argv,
                               const std::map<std::string, std::string>& env) {
    PyOS_AfterFork_Child();
    PyObject* fn = PyDict_GetItemString(main_dict(), "_callisto_run_kernel");
    PyObject* py_env = PyDict_New();
    for (const auto& [key, value] : env) {
        PyObject* k = PyUnicode_DecodeFSDefault(key.c_str());
        PyObject* v = PyUnicode_DecodeFSDefault(value.c_str());
        PyDict_SetItem(py_env, k, v);
        Py_DECREF(k);
        Py_DECREF(v);
    }
    PyObject* py_argv = string_list(argv);
    PyObject* result = fn ? PyObject_CallFunctionObjArgs(fn, py_argv, py_env, nullptr) : nullptr;
    Py_DECREF(py_argv);
    Py_DECREF(py_env);
    if (!result) {  // only if the helper itself failed
        PyErr_Print();
        return 1;
    }
    const long code = PyLong_AsLong(result);
    Py_DECREF(result);
    return code == -1 && PyErr_Occurred() ? 1 : static_cast<int>(code);
}

}  // namespace callisto::launcher::zygote
