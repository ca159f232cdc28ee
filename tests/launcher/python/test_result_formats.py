#!/usr/bin/python3
"""The descriptions of DataFrames and matplotlib figures every ipykernel adds to its displays
for E2B's `data` and `chart` (launcher/kernelspec/ipykernel_bootstrap.py).

First the describing functions themselves, on frames and figures made here (matplotlib's Agg
backend): each chart type's members and elements, the bounds, and objects that are neither.
Then a kernel started as the launcher starts one without a zygote (`python -c LOADER FILE
ipykernel_launcher -f CONNECTION`, FILE the bootstrap with its call), driven by jupyter_client:
pandas and matplotlib not imported by the start, a DataFrame's and a plot's displays carrying
the descriptions beside their other types when the request's metadata asks (as the gateway's
for E2B do) and only then, and a describing function that raises leaving the display whole and
the output free of any traceback.

  /usr/bin/python3 test_result_formats.py SOURCE_DIR
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from checks import (SOURCE_DIR, check, ports_written, ready_client, summary,
                    write_connection_file)

BOOTSTRAP = os.path.join(SOURCE_DIR, "launcher/kernelspec/ipykernel_bootstrap.py")
DATAFRAME_MIME = "application/vnd.callisto.dataframe+json"
CHART_MIME = "application/vnd.callisto.chart+json"


def describing_functions():
    with open(BOOTSTRAP) as f:
        exec(compile(f.read(), BOOTSTRAP, "exec"), globals())
    # Nothing imported by defining them, nor by asking about other objects.
    check("pandas" not in sys.modules and "matplotlib" not in sys.modules,
          "defining the formatters imports neither pandas nor matplotlib")
    check(_callisto_describe_dataframe([1]) is None and  # noqa: F821
          _callisto_describe_figure("x") is None, "other objects are not described")  # noqa
    check("pandas" not in sys.modules and "matplotlib" not in sys.modules,
          "nor does describing other objects")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    describe_frame, describe_figure = _callisto_describe_dataframe, _callisto_describe_figure  # noqa
    frame = pd.DataFrame({"n": [1, 2], "x": [1.5, float("nan")], "s": ["a", None],
                          "t": pd.to_datetime(["2024-01-02", None]), 7: [True, False]})
    data = describe_frame(frame)
    check(data == [["n", [1, 2]], ["x", [1.5, None]], ["s", ["a", None]],
                   ["t", ["2024-01-02T00:00:00", None]], ["7", [True, False]]],
          "a DataFrame's data: its columns in order, as lists, JSON's values", data)
    repeated = pd.DataFrame([[1, 2, 3]], columns=["z", "a", "z"])
    check(describe_frame(repeated) == [["z", [3]], ["a", [2]]],
          "a repeated column keeps its first place and its last values, as a dict would",
          describe_frame(repeated))
    json.dumps(data, allow_nan=False)
    check(describe_frame(pd.DataFrame({"a": range(_CALLISTO_DESCRIBED_VALUES + 1)})) is None,  # noqa
          "a DataFrame past the cells bound is not described")

    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [1, 4, 9], label="squares")
    ax.plot([1, 3], [2, 2])
    ax.set_title("growth")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("length [m]")
    chart = describe_figure(fig)
    check(chart["type"] == "line" and chart["title"] == "growth", "a line chart", chart)
    check([chart["x_label"], chart["y_label"], chart["x_unit"], chart["y_unit"]] ==
          ["time (s)", "length [m]", "s", "m"], "its labels and their units", chart)
    check(chart["elements"] == [{"label": "squares", "points": [[1, 1], [2, 4], [3, 9]]},
                                {"label": "Line 1", "points": [[1, 2], [3, 2]]}],
          "its lines, an unlabelled one named", chart["elements"])
    check(chart["x_scale"] == "linear" and len(chart["x_ticks"]) == len(chart["x_tick_labels"])
          and "2.0" in "".join(chart["x_tick_labels"]) and chart["y_scale"] == "linear",
          "its ticks and scales", chart)
    ax.set_yscale("log")
    check(describe_figure(fig)["y_scale"] == "log", "a log scale")
    plt.close(fig)

    fig, ax = plt.subplots()
    ax.bar(["north", "south"], [3, 5], label="2024")
    ax.set_title("sales")
    ax.set_ylabel("units")
    chart = describe_figure(fig)
    check(chart["type"] == "bar" and chart["title"] == "sales" and chart["y_label"] == "units",
          "a bar chart", chart)
    check(chart["elements"] == [{"label": "north", "group": "2024", "value": 3},
                                {"label": "south", "group": "2024", "value": 5}],
          "its bars: category, group, value", chart["elements"])
    plt.close(fig)
    fig, ax = plt.subplots()
    x = np.arange(2)
    ax.bar(x - 0.2, [1, 2], 0.4)
    ax.bar(x + 0.2, [3, 4], 0.4)
    ax.set_xticks(x, ["p", "q"])
    check([(e["label"], e["group"], e["value"]) for e in describe_figure(fig)["elements"]] ==
          [("p", "Group 0", 1), ("q", "Group 0", 2), ("p", "Group 1", 3), ("q", "Group 1", 4)],
          "grouped bars, each at its category")
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.barh(["a", "b"], [2, 1])
    ax.set_xlabel("count")
    ax.set_ylabel("letter")
    chart = describe_figure(fig)
    check(chart["x_label"] == "letter" and chart["y_label"] == "count" and
          [e["label"] for e in chart["elements"]] == ["a", "b"],
          "horizontal bars: x names the categories", chart)
    plt.close(fig)

    fig, ax = plt.subplots()
    ax.pie([1, 3], labels=["one", "three"])
    chart = describe_figure(fig)
    check(chart == {"type": "pie", "title": None,
                    "elements": [{"label": "one", "angle": 90.0, "radius": 1.0},
                                 {"label": "three", "angle": 270.0, "radius": 1.0}]},
          "a pie chart", chart)
    plt.close(fig)

    fig, ax = plt.subplots()
    ax.scatter([1, 2], [3, 4], label="pairs")
    chart = describe_figure(fig)
    check(chart["type"] == "scatter" and
          chart["elements"] == [{"label": "pairs", "points": [[1.0, 3.0], [2.0, 4.0]]}],
          "a scatter chart", chart)
    plt.close(fig)

    fig, ax = plt.subplots()
    ax.boxplot([[1, 2, 3, 4, 5, 20], [2, 3, 4, 5, 6]], patch_artist=True, labels=["A", "B"])
    chart = describe_figure(fig)
    check(chart["type"] == "box_and_whisker" and chart["elements"] == [
        {"label": "A", "min": 1.0, "first_quartile": 2.25, "median": 3.5,
         "third_quartile": 4.75, "max": 5.0, "outliers": [20.0]},
        {"label": "B", "min": 2.0, "first_quartile": 3.0, "median": 4.0, "third_quartile": 5.0,
         "max": 6.0, "outliers": []}], "a box plot", chart)
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.boxplot([[1, 2, 3, 4, 5, 20], [2, 3, 4, 5, 6]], labels=["A", "B"])
    check(describe_figure(fig) == chart, "the same drawn without patch_artist, boxes as lines",
          describe_figure(fig))
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.plot([0, 1, 1, 0, 0], [0, 0, 1, 1, 0])
    ax.plot([0, 1], [2, 3])
    check(describe_figure(fig)["type"] == "line", "a rectangle among lines is a line")
    plt.close(fig)

    fig, (left, right) = plt.subplots(1, 2)
    left.plot([0, 1])
    right.imshow([[1, 2], [3, 4]])
    right.set_title("image")
    fig.suptitle("both")
    chart = describe_figure(fig)
    check(chart["type"] == "superchart" and chart["title"] == "both" and
          [c["type"] for c in chart["elements"]] == ["line", "unknown"] and
          chart["elements"][1]["title"] == "image",
          "several axes: a superchart of their charts, unknown for an image", chart)
    plt.close(fig)

    fig, ax = plt.subplots()
    ax.plot(pd.to_datetime(["2024-01-01", "2024-01-03"]), [1, 2])
    chart = describe_figure(fig)
    check(chart["x_scale"] == "datetime" and chart["elements"][0]["points"][0][0].startswith(
        "2024-01-01") and chart["x_ticks"][0].startswith("2024-01-0"),
          "dates in ISO 8601 on a datetime axis", chart)
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.plot(range(_CALLISTO_DESCRIBED_VALUES + 1))  # noqa: F821
    check(describe_figure(fig) is None, "a figure past the points bound is not described")
    plt.close(fig)
    check(describe_figure(plt.figure()) is None, "an empty figure is not described")


class Kernel:
    """An ipykernel started through the bootstrap file, as the launcher starts one."""

    def __init__(self, root):
        self.root = root
        bootstrap = os.path.join(root, "ipykernel_bootstrap.py")
        with open(BOOTSTRAP) as f, open(bootstrap, "w") as out:
            out.write(f.read() + "\n_callisto_run_module()\n")
        connection = os.path.join(root, "kernel.json")
        write_connection_file(connection)
        home = os.path.join(root, "home")
        os.mkdir(home)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
               "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
        # launcher/kernelspec/ipykernel_bootstrap.cpp's loader
        loader = "import sys; _p = sys.argv.pop(1); exec(compile(open(_p).read(), _p, 'exec'))"
        self.log = open(os.path.join(root, "kernel.log"), "w")
        self.process = subprocess.Popen(
            [sys.executable, "-c", loader, bootstrap, "ipykernel_launcher", "-f", connection],
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not ports_written(connection):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"the kernel wrote no ports (exit {self.process.poll()})")
            time.sleep(0.05)
        self.kc = ready_client(connection)

    def run(self, code, describe):
        """The execution's iopub messages up to its idle: (type, content) pairs. With
        `describe`, the request asks for descriptions as the gateway's for E2B do."""
        content = {"code": code, "silent": False, "store_history": True,
                   "user_expressions": {}, "allow_stdin": False}
        metadata = {"callisto_describe_results": True} if describe else {}
        msg = self.kc.session.msg("execute_request", content, metadata=metadata)
        self.kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        messages = []
        while True:
            m = self.kc.get_iopub_msg(timeout=60)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                return messages
            messages.append((m["msg_type"], m["content"]))

    def displays(self, code, describe=True):
        messages = self.run(code, describe)
        # Not every line on stderr (a fresh home has matplotlib build its font cache, and says
        # so): errors and tracebacks.
        errors = [c for t, c in messages if t == "error" or (
            t == "stream" and c["name"] == "stderr" and "Traceback" in c["text"])]
        return [c["data"] for t, c in messages if t in ("execute_result", "display_data")], errors

    def close(self):
        self.kc.shutdown()
        self.kc.stop_channels()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def in_a_kernel():
    root = tempfile.mkdtemp(prefix="callisto-result-formats-")
    kernel = None
    try:
        kernel = Kernel(root)
        loaded, _ = kernel.displays("import sys\n"
                                    "[m in sys.modules for m in ('pandas', 'matplotlib')]")
        check(loaded and loaded[0].get("text/plain") == "[False, False]",
              "the kernel's start imported neither pandas nor matplotlib", loaded)

        displays, errors = kernel.displays(
            "import pandas as pd\npd.DataFrame({'b': [1, 2], 'a': ['x', 'y']})")
        check(len(displays) == 1 and displays[0].get(DATAFRAME_MIME) ==
              [["b", [1, 2]], ["a", ["x", "y"]]],
              "a DataFrame's result has its columns, in its order", displays)
        check(displays and "text/html" in displays[0] and "text/plain" in displays[0] and
              CHART_MIME not in displays[0], "beside its text and html", displays)
        displays, _ = kernel.displays("pd.DataFrame({'a': [1]})", describe=False)
        check(len(displays) == 1 and sorted(displays[0]) == ["text/html", "text/plain"],
              "not for a request that does not ask: text and html only", displays)

        displays, errors = kernel.displays(
            "import matplotlib.pyplot as plt\n"
            "plt.plot([1, 2, 3], [2, 4, 8], label='doubling')\nplt.title('powers')\nplt.show()")
        charts = [d for d in displays if "image/png" in d]
        check(len(charts) == 1 and charts[0].get(CHART_MIME, {}).get("type") == "line" and
              charts[0][CHART_MIME]["title"] == "powers" and
              charts[0][CHART_MIME]["elements"][0]["label"] == "doubling",
              "a plot's display has its png and its chart", displays)
        check(not errors, "and no error", errors)
        displays, _ = kernel.displays("plt.plot([1, 2])\nplt.show()", describe=False)
        check(len(displays) == 1 and sorted(displays[0]) == ["image/png", "text/plain"],
              "a plot for a request that does not ask: png and text only", displays)

        displays, errors = kernel.displays(
            "f = get_ipython().display_formatter.formatters['" + CHART_MIME + "']\n"
            "f.describe = lambda obj: 1 / 0\n"
            "plt.bar(['a'], [1])\nplt.show()")
        check(len(displays) == 1 and "image/png" in displays[0] and
              CHART_MIME not in displays[0], "a describing function that fails: the png alone",
              displays)
        check(not errors, "and no traceback", errors)
    finally:
        if kernel is not None:
            kernel.close()
        shutil.rmtree(root, ignore_errors=True)


def main():
    describing_functions()
    in_a_kernel()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
