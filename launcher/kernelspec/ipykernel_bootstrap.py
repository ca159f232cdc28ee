# What every ipykernel Callisto starts runs before the kernel's own code. Compiled into the
# launcher: a kernel started as its own process runs it from a file in its runtime directory
# (`python -c LOADER FILE module args`, the file ending with the call of _callisto_run_module),
# and the zygote defines it once and calls
# _callisto_try_iopub_holds_bursts(), _callisto_try_history_in_memory(),
# _callisto_try_error_fields_fit(), _callisto_try_e2b_result_formats() and
# _callisto_let_the_control_thread_finish() in each fork.
# See launcher/kernelspec/ipykernel_bootstrap.hpp.
import sys


def _callisto_try(patch, unpatched):
    """Applies `patch`. An ipykernel it does not fit (renamed internals) still starts, with
    what `unpatched` names left as ipykernel has it, and says so on stderr."""
    try:
        patch()
    except Exception as e:
        print(f"callisto: {unpatched} ({type(e).__name__}: {e})", file=sys.stderr)


def _callisto_iopub_holds_bursts():
    """ZeroMQ's PUB socket drops what passes its high-water mark (1,000 messages by default).
    Output printed faster than the gateway reads it (a loop of flushed prints on a loaded host)
    lost the rest of the burst, and with it the execution's idle status, which clients wait for.
    Without a mark the burst waits in the kernel's own memory, under the kernel's limits, until
    the gateway reads on."""
    import zmq
    from ipykernel.kernelapp import IPKernelApp

    original = IPKernelApp.init_iopub
    if getattr(original, "_callisto", False):
        return

    def init_iopub(self, context):
        # The default of every socket made from this context from here on: iopub and the
        # kernel's later ones. The context is the kernel's own.
        context.setsockopt(zmq.SNDHWM, 0)
        original(self, context)

    init_iopub._callisto = True
    IPKernelApp.init_iopub = init_iopub


def _callisto_try_iopub_holds_bursts():
    _callisto_try(_callisto_iopub_holds_bursts, "the kernel's iopub keeps its send mark")


def _callisto_history_in_memory():
    """IPython keeps its input history in an SQLite file in the profile, under the workdir (the
    sandbox's HOME), written by a thread of its own. When code filled the disk quota, that
    thread's write failed and it printed its notice ("The history saving thread hit an
    unexpected error ... History will not be written") into whatever cell ran next. History
    across kernel restarts is no feature here (a restart, a reset or a fresh kernel starts
    afresh), so the history is kept in memory: no file, no thread. A hist_file the kernel's own
    configuration names is still used."""
    from IPython.core.history import HistoryManager

    HistoryManager._get_hist_file_name = lambda self, profile=None: ":memory:"


def _callisto_try_history_in_memory():
    _callisto_try(_callisto_history_in_memory, "IPython's history stays in its file")


# What an error's fields may weigh, JSON-encoded, in any message the kernel sends (the
# execute_reply of a failed execution, the iopub `error`, any reply with "status": "error").
# The gateway takes a reply part of at most 16 MiB (transport/detail/kernel_link.cpp,
# max_reply_part_bytes): ZeroMQ drops a larger one, and with it the connection, so a
# `raise ValueError("x" * 40_000_000)` left the client waiting for its deadline. The value and
# the traceback (which repeats the value) each within 7.5 MiB, the name within 1 KiB: the
# reply's content stays under 15.1 MiB. The gateway cuts them further for its clients
# (gateway/kernels/output/output_fields.hpp), with the same marker.
_CALLISTO_ERROR_NAME_BYTES = 1 << 10
_CALLISTO_ERROR_TEXT_BYTES = 15 << 19


def _callisto_utf8_bytes(text):
    try:
        return len(text.encode())  # the fast path; surrogatepass alone is 15 times slower
    except UnicodeEncodeError:
        return len(text.encode("utf-8", "surrogatepass"))


def _callisto_json_bytes(text):
    """The bytes `text` takes in a message part: JSON-escaped, UTF-8 (jupyter_client's packer)."""
    import json
    return _callisto_utf8_bytes(json.dumps(text, ensure_ascii=False)) - 2


def _callisto_cap_text(text, max_bytes):
    """`text` when it takes at most max_bytes, else its head and tail around a marker saying
    how many bytes were left out, within max_bytes; and how many bytes were left out."""
    if len(text) <= max_bytes and _callisto_json_bytes(text) <= max_bytes:
        return text, 0
    keep = min(len(text), max_bytes)  # characters: each takes at least one byte
    while True:
        keep = max(0, keep - 64)  # room for the marker
        head, tail = text[:keep // 2], text[len(text) - (keep - keep // 2):] if keep > 1 else ""
        cut = _callisto_utf8_bytes(text[len(head):len(text) - len(tail)])
        out = f"{head}\n[... {cut} bytes truncated ...]\n{tail}"
        size = _callisto_json_bytes(out)
        if size <= max_bytes or keep == 0:
            return out, cut
        # Escapes (control characters, ANSI colours) take more than a byte: keep less.
        keep = keep * max_bytes // size


def _callisto_cap_lines(lines, max_bytes):
    """A traceback's lines within max_bytes together: each line within half of it, then the
    first lines and the last ones, each side within half, around a marker line."""
    sizes = [_callisto_json_bytes(line) + 3 for line in lines]  # quotes and separator
    if sum(sizes) <= max_bytes:
        return lines, 0
    half, cut = max_bytes // 2, 0
    lines = list(lines)
    for i, line in enumerate(lines):
        if sizes[i] > half:
            lines[i], line_cut = _callisto_cap_text(line, half - 3)
            sizes[i] = _callisto_json_bytes(lines[i]) + 3
            cut += line_cut
    if sum(sizes) <= max_bytes:
        return lines, cut
    first, used = 0, 0
    while first < len(lines) and used + sizes[first] <= half:
        used += sizes[first]
        first += 1
    last, used = len(lines), 0
    while last > first and used + sizes[last - 1] <= max_bytes - half - 64:
        last -= 1
        used += sizes[last]
    dropped = sum(_callisto_utf8_bytes(line) for line in lines[first:last])
    return lines[:first] + [f"\n[... {dropped} bytes truncated ...]\n"] + lines[last:], \
        cut + dropped


def _callisto_cap_error_content(content):
    """`content` itself when its error fields fit, else a copy with them cut."""
    capped = None
    for name, cap in (("ename", _CALLISTO_ERROR_NAME_BYTES), ("evalue", _CALLISTO_ERROR_TEXT_BYTES)):
        value = content.get(name)
        if isinstance(value, str):
            text, cut = _callisto_cap_text(value, cap)
            if cut:
                capped = capped or dict(content)
                capped[name] = text
    traceback = content.get("traceback")
    if isinstance(traceback, list):
        lines = [line if isinstance(line, str) else str(line) for line in traceback]
        lines, cut = _callisto_cap_lines(lines, _CALLISTO_ERROR_TEXT_BYTES)
        if cut:
            capped = capped or dict(content)
            capped["traceback"] = lines
    return content if capped is None else capped


def _callisto_error_fields_fit():
    """Every message the kernel's session sends goes through Session.serialize: an error's
    fields are cut there, whichever part of ipykernel or IPython made them."""
    from jupyter_client.session import Session

    original = Session.serialize
    if getattr(original, "_callisto", False):
        return

    def serialize(self, msg, ident=None):
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, dict) and ("evalue" in content or "traceback" in content):
            capped = _callisto_cap_error_content(content)
            if capped is not content:
                msg = dict(msg, content=capped)  # the caller's dicts stay as they are
        return original(self, msg, ident)

    serialize._callisto = True
    Session.serialize = serialize


def _callisto_try_error_fields_fit():
    _callisto_try(_callisto_error_fields_fit, "the kernel's errors are sent uncut")


# E2B's results carry, beside the MIME types, `data` for a pandas DataFrame (its columns, as
# `to_dict(orient="list")` gives them) and `chart` for a matplotlib figure (what it plots, in
# E2B's Chart shape: type, title, axis labels, ticks, elements). Two formatters of the shell
# add them to a display under MIME types of Callisto's own, gateway/e2b/execution_lines.cpp
# names them `data` and `chart`. Only for a request whose metadata asks (the gateway's for E2B's
# executions): a notebook's outputs and /v1's results stay as they were, and cost nothing more.
# Neither imports anything: each looks in sys.modules. A formatter that fails, or whose JSON
# would be larger than _CALLISTO_DESCRIBED_BYTES, adds nothing: the display keeps its other
# types.
_CALLISTO_DATAFRAME_MIME = "application/vnd.callisto.dataframe+json"
_CALLISTO_CHART_MIME = "application/vnd.callisto.chart+json"
# gateway/interpreter/result_descriptions.hpp
_CALLISTO_DESCRIBE_RESULTS_METADATA = "callisto_describe_results"
# The JSON a description may take, and the cells of a DataFrame or the points of a figure past
# which none is tried: 32,768 floats take 0.65 MiB, and 28 ms to describe and measure (130,000
# took 93 ms, for a description then too large to send).
_CALLISTO_DESCRIBED_BYTES = 1 << 20
_CALLISTO_DESCRIBED_VALUES = 1 << 15


def _callisto_plain(value):
    """A cell or a coordinate as JSON holds it: numbers (NaN and infinities as null), strings,
    booleans, dates and times in ISO 8601; anything else as its str()."""
    import math

    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    dtype = getattr(value, "dtype", None)
    if dtype is not None and getattr(value, "shape", None) == ():  # a numpy scalar
        if dtype.kind == "M":  # datetime64: item() of nanoseconds is an int
            text = str(value.astype("datetime64[us]"))
            return None if text == "NaT" else text
        if dtype.kind == "m":
            return None if str(value) == "NaT" else str(value)
        return _callisto_plain(value.item())
    try:
        if value != value:  # NaT, NaN of other kinds
            return None
    except Exception:  # pandas.NA has no truth value
        return None
    if hasattr(value, "isoformat"):  # datetime, date, time, pandas.Timestamp
        return value.isoformat()
    return str(value)


def _callisto_plain_list(values):
    """_callisto_plain of each of `values` (a column, an array), numbers in bulk."""
    import math

    kind = getattr(getattr(values, "dtype", None), "kind", "")
    if kind in ("i", "u", "b"):
        return values.tolist()
    if kind == "f":
        return [v if math.isfinite(v) else None for v in values.tolist()]
    return [_callisto_plain(v) for v in values]


def _callisto_dataframe_data(frame):
    """E2B's `data` of a DataFrame ({column: [values]}, the index left out, as E2B does) as
    [column, values] pairs in the frame's order: the gateway's JSON objects keep their members
    in name order, a list keeps its own. A repeated column name keeps its last values, as a
    dict would."""
    if frame.size > _CALLISTO_DESCRIBED_VALUES:
        return None
    columns = {}
    for name, column in frame.items():
        columns[name if isinstance(name, str) else str(name)] = _callisto_plain_list(column)
    return [[name, values] for name, values in columns.items()]


def _callisto_label_or_none(text):
    return text if text else None


def _callisto_unit(label):
    """The unit an axis label names: "Time (s)" or "Length [m]"."""
    import re

    match = re.search(r"\s\(([^)]*)\)|\[([^\]]*)\]", label or "")
    return (match.group(1) or match.group(2)) if match else None


def _callisto_axis_scale(axis, scale):
    """E2B's scale of an axis: datetime and categorical as their converters say, else
    matplotlib's own scale name (linear, log, symlog, logit, ...)."""
    converter = axis.get_converter() if hasattr(axis, "get_converter") else axis.converter
    module = type(converter).__module__ if converter is not None else ""
    if module == "matplotlib.dates":
        return "datetime"
    if module == "matplotlib.category":
        return "categorical"
    return scale


def _callisto_ticks(axis, scale):
    """(positions, labels) of an axis's major ticks; dates in ISO 8601 on a datetime axis."""
    labels = [label.get_text() for label in axis.get_majorticklabels()]
    positions = [float(tick) for tick in axis.get_majorticklocs()]
    if scale == "datetime":
        from matplotlib.dates import num2date
        positions = [num2date(tick).isoformat() for tick in positions]
    return positions, labels


def _callisto_nearest_tick_label(axis, position):
    """The label of the major tick nearest `position`: a bar's or a box's category."""
    ticks = [(abs(tick.get_loc() - position), tick.label1.get_text())
             for tick in axis.get_major_ticks()[:len(axis.get_majorticklocs())]]
    return min(ticks)[1] if ticks else str(position)


def _callisto_chart_2d(kind, ax, horizontal=False):
    """The members every 2D chart has; with `horizontal` the category axis (y) is named x."""
    x_label, y_label = ax.get_xlabel(), ax.get_ylabel()
    if horizontal:
        x_label, y_label = y_label, x_label
    return {"type": kind, "title": _callisto_label_or_none(ax.get_title()),
            "x_label": _callisto_label_or_none(x_label), "y_label": _callisto_label_or_none(y_label),
            "x_unit": _callisto_unit(x_label), "y_unit": _callisto_unit(y_label), "elements": []}


def _callisto_point_chart(kind, ax):
    chart = _callisto_chart_2d(kind, ax)
    for name, axis, scale in (("x", ax.xaxis, ax.get_xscale()), ("y", ax.yaxis, ax.get_yscale())):
        scale = _callisto_axis_scale(axis, scale)
        chart[name + "_ticks"], chart[name + "_tick_labels"] = _callisto_ticks(axis, scale)
        chart[name + "_scale"] = scale
    return chart


def _callisto_series_label(label, kind, index):
    # matplotlib names an unlabelled artist "_child3", "_container0": not for the reader.
    return label if label and not label.startswith("_") else f"{kind} {index}"


def _callisto_line_chart(ax):
    chart = _callisto_point_chart("line", ax)
    for index, line in enumerate(ax.lines):
        xs = _callisto_plain_list(line.get_xdata())
        ys = _callisto_plain_list(line.get_ydata())
        chart["elements"].append({"label": _callisto_series_label(line.get_label(), "Line", index),
                                  "points": [[x, y] for x, y in zip(xs, ys)]})
    return chart


def _callisto_scatter_chart(ax):
    chart = _callisto_point_chart("scatter", ax)
    dates = chart["x_scale"] == "datetime"
    for index, collection in enumerate(ax.collections):
        offsets = collection.get_offsets()
        xs = _callisto_plain_list(offsets[:, 0])
        if dates:  # the offsets are matplotlib's date numbers
            from matplotlib.dates import num2date
            xs = [num2date(x).isoformat() if x is not None else None for x in xs]
        ys = _callisto_plain_list(offsets[:, 1])
        chart["elements"].append({
            "label": _callisto_series_label(collection.get_label(), "Series", index),
            "points": [[x, y] for x, y in zip(xs, ys)]})
    return chart


def _callisto_bar_chart(ax, bars):
    horizontal = all(getattr(c, "orientation", None) == "horizontal" for c in bars)
    chart = _callisto_chart_2d("bar", ax, horizontal)
    categories = ax.yaxis if horizontal else ax.xaxis
    categories.get_majorticklabels()  # the labels' texts, set as a draw would
    for group, container in enumerate(bars):
        name = _callisto_series_label(container.get_label(), "Group", group)
        for rect in container:
            if horizontal:
                center, value = rect.get_y() + rect.get_height() / 2, rect.get_width()
            else:
                center, value = rect.get_x() + rect.get_width() / 2, rect.get_height()
            chart["elements"].append({"label": _callisto_nearest_tick_label(categories, center),
                                      "group": name, "value": _callisto_plain(value)})
    return chart


def _callisto_pie_chart(ax):
    return {"type": "pie", "title": _callisto_label_or_none(ax.get_title()),
            "elements": [{"label": wedge.get_label(),
                          "angle": abs(round(float(wedge.theta2 - wedge.theta1), 4)),
                          "radius": float(wedge.r)} for wedge in ax.patches]}


def _callisto_rectangle_span(line):
    """(x0, x1, y0, y1) of a line drawn as a closed rectangle along the axes (a box of a box
    plot drawn without patch_artist), else None."""
    xs, ys = line.get_xdata(), line.get_ydata()
    if len(xs) != 5 or len(ys) != 5:
        return None
    try:
        xs, ys = [float(x) for x in xs], [float(y) for y in ys]
    except (TypeError, ValueError):  # dates, categories: no box plot's
        return None
    if xs[0] != xs[4] or ys[0] != ys[4] or len(set(xs)) != 2 or len(set(ys)) != 2:
        return None
    return min(xs), max(xs), min(ys), max(ys)


def _callisto_box_chart(ax, spans):
    """A box plot: each box, spans[i] = (x0, x1, y0, y1), from the first to the third quartile
    (a PathPatch with patch_artist=True, else a rectangle of a line), its median a line across
    it, its whiskers lines from it to the minimum and the maximum, its fliers a line of markers
    only. None when a box lacks any of them."""
    import math

    widths = {round(x1 - x0, 9) for x0, x1, _, _ in spans}
    heights = {round(y1 - y0, 9) for _, _, y0, y1 in spans}
    horizontal = len(widths) > 1 and len(heights) == 1
    chart = _callisto_chart_2d("box_and_whisker", ax, horizontal)
    if horizontal:  # positions along y, values along x
        spans = [(y0, y1, x0, x1) for x0, x1, y0, y1 in spans]
    boxes = [{"low": p0, "high": p1, "first_quartile": q1, "third_quartile": q3,
              "min": None, "median": None, "max": None, "outliers": []}
             for p0, p1, q1, q3 in spans]
    close = lambda a, b: math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)  # noqa: E731
    for line in ax.lines:
        try:
            positions = [float(p) for p in (line.get_ydata() if horizontal else line.get_xdata())]
            values = [float(v) for v in (line.get_xdata() if horizontal else line.get_ydata())]
        except (TypeError, ValueError):  # dates, categories: no box plot's line
            return None
        if not positions:
            continue
        box = next((b for b in boxes if b["low"] <= positions[0] <= b["high"]), None)
        if box is None:
            continue
        if line.get_linestyle() in ("None", "none", "", " "):  # fliers
            box["outliers"] += values
        elif len(values) == 2 and close(values[0], values[1]):
            if box["first_quartile"] <= values[0] <= box["third_quartile"] and \
                    close(positions[0], box["low"]) and close(positions[1], box["high"]):
                box["median"] = values[0]
        elif len(values) == 2 and close(positions[0], positions[1]):  # a whisker
            if close(max(values), box["first_quartile"]):
                box["min"] = min(values)
            elif close(min(values), box["third_quartile"]):
                box["max"] = max(values)
    categories = ax.yaxis if horizontal else ax.xaxis
    categories.get_majorticklabels()
    for box in boxes:
        if box["min"] is None or box["median"] is None or box["max"] is None:
            return None
        chart["elements"].append({
            "label": _callisto_nearest_tick_label(categories, (box["low"] + box["high"]) / 2),
            "min": box["min"], "first_quartile": box["first_quartile"], "median": box["median"],
            "third_quartile": box["third_quartile"], "max": box["max"],
            "outliers": box["outliers"]})
    return chart


def _callisto_axes_chart(ax):
    """The chart one Axes draws: line, scatter, bar, pie or box_and_whisker when it draws that
    and nothing else, else unknown (its title only)."""
    from matplotlib.collections import PathCollection
    from matplotlib.container import BarContainer
    from matplotlib.patches import PathPatch, Wedge

    lines, collections, patches = list(ax.lines), list(ax.collections), list(ax.patches)
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    in_bars = {id(rect) for c in bars for rect in c}
    chart = None
    if ax.images or ax.tables or list(ax.artists):
        pass
    elif lines and not collections and not patches:
        # A box plot drawn without patch_artist is lines only: its boxes are rectangles.
        boxes = [span for span in map(_callisto_rectangle_span, lines) if span is not None]
        chart = (_callisto_box_chart(ax, boxes) if boxes else None) or _callisto_line_chart(ax)
    elif collections and not lines and not patches and \
            all(isinstance(c, PathCollection) for c in collections):
        chart = _callisto_scatter_chart(ax)
    elif patches and not lines and not collections and all(isinstance(p, Wedge) for p in patches):
        chart = _callisto_pie_chart(ax)
    elif bars and not lines and not collections and all(id(p) in in_bars for p in patches):
        chart = _callisto_bar_chart(ax, bars)
    elif patches and lines and not collections and all(isinstance(p, PathPatch) for p in patches):
        spans = [(float(v[:, 0].min()), float(v[:, 0].max()), float(v[:, 1].min()),
                  float(v[:, 1].max())) for v in (p.get_path().vertices for p in patches)]
        chart = _callisto_box_chart(ax, spans)
    return chart or {"type": "unknown", "title": _callisto_label_or_none(ax.get_title()),
                     "elements": []}


def _callisto_figure_chart(figure):
    """E2B's `chart` of a figure: its one Axes' chart, or a superchart of each Axes' chart."""
    axes = [ax for ax in figure.get_axes() if ax.get_visible()]
    points = 0
    for ax in axes:
        points += sum(len(line.get_xdata()) for line in ax.lines)
        points += sum(len(c.get_offsets()) for c in ax.collections)
    if not axes or points > _CALLISTO_DESCRIBED_VALUES:
        return None
    if len(axes) == 1:
        return _callisto_axes_chart(axes[0])
    suptitle = getattr(figure, "_suptitle", None)
    return {"type": "superchart",
            "title": _callisto_label_or_none(suptitle.get_text() if suptitle else ""),
            "elements": [_callisto_axes_chart(ax) for ax in axes]}


def _callisto_describe_dataframe(obj):
    pandas = sys.modules.get("pandas")
    if pandas is None or not isinstance(obj, getattr(pandas, "DataFrame", ())):
        return None
    return _callisto_dataframe_data(obj)


def _callisto_describe_figure(obj):
    figure = sys.modules.get("matplotlib.figure")
    if figure is None or not isinstance(obj, getattr(figure, "Figure", ())):
        return None
    return _callisto_figure_chart(obj)


def _callisto_descriptions_asked(shell):
    """Whether the request the kernel is running asked for descriptions in its metadata."""
    get_parent = getattr(getattr(shell, "kernel", None), "get_parent", None)  # ipykernel >= 6
    if get_parent is None:
        return False
    metadata = get_parent("shell").get("metadata")
    return isinstance(metadata, dict) and metadata.get(_CALLISTO_DESCRIBE_RESULTS_METADATA) is True


def _callisto_add_result_formatters(shell):
    """Adds the DataFrame and the figure formatters to `shell`'s display formatter, once."""
    import json
    from IPython.core.formatters import BaseFormatter
    from traitlets import ObjectName

    formatters = shell.display_formatter.formatters
    if _CALLISTO_CHART_MIME in formatters:
        return

    class DescribingFormatter(BaseFormatter):
        # BaseFormatter would call an object's method of this name; __call__ below never does.
        print_method = ObjectName("_repr_callisto_description_")

        def __call__(self, obj):
            # Not BaseFormatter's: its errors show a traceback in the cell's output, and its
            # type printers are emptied of Figure by IPython's pylab setup.
            if not self.enabled:
                return None
            try:
                if not _callisto_descriptions_asked(self.shell):
                    return None
                described = self.describe(obj)
                if described is None:
                    return None
                text = json.dumps(described, ensure_ascii=False, allow_nan=False)
                return described if _callisto_utf8_bytes(text) <= _CALLISTO_DESCRIBED_BYTES \
                    else None
            except Exception:
                return None

    for mime, describe in ((_CALLISTO_DATAFRAME_MIME, _callisto_describe_dataframe),
                           (_CALLISTO_CHART_MIME, _callisto_describe_figure)):
        formatter = DescribingFormatter(parent=shell.display_formatter, format_type=mime)
        formatter.shell, formatter.describe = shell, describe
        formatters[mime] = formatter


def _callisto_e2b_result_formats():
    """Each kernel's shell gets the formatters once the kernel has built (or adopted) it."""
    from ipykernel.kernelapp import IPKernelApp

    original = IPKernelApp.init_kernel
    if getattr(original, "_callisto_formats", False):
        return

    def init_kernel(self):
        original(self)
        shell = getattr(self.kernel, "shell", None)
        if shell is not None:
            _callisto_try(lambda: _callisto_add_result_formatters(shell),
                          "E2B's results get no data or chart")

    init_kernel._callisto_formats = True
    IPKernelApp.init_kernel = init_kernel


def _callisto_try_e2b_result_formats():
    _callisto_try(_callisto_e2b_result_formats, "E2B's results get no data or chart")


def _callisto_let_the_control_thread_finish(seconds=2.0):
    """After shutdown_request the main loop ends while ipykernel's control thread still
    flushes the output and publishes `idle` through the iopub thread. If the exit's
    IPKernelApp.close stops the iopub thread first, that flush waits out its 10 s timeout and
    close waits for it: the gateway saw about 1 exit in 20 take 5 s and be SIGTERMed. The
    control thread ends by itself once its reply is out (shutdown_request stopped its loop);
    wait for that, within a bound, before the exit handlers run."""
    try:
        from ipykernel.kernelapp import IPKernelApp
        if not IPKernelApp.initialized():
            return
        control = getattr(IPKernelApp.instance(), "control_thread", None)
        if control is not None and control.is_alive():
            control.join(seconds)
    except Exception as e:
        print(f"callisto: did not wait for the control thread ({type(e).__name__}: {e})",
              file=sys.__stderr__)


def _callisto_run_module():
    """`python -c THIS module args...` as `python -m module args...`."""
    import os
    import runpy

    sys.path.pop(0)  # '': the user's files must not stand in for what is imported here
    module = sys.argv.pop(1)
    _callisto_try_iopub_holds_bursts()
    if module.startswith("ipykernel"):
        _callisto_try_history_in_memory()
        _callisto_try_error_fields_fit()
        _callisto_try_e2b_result_formats()
    sys.path.insert(0, os.getcwd())  # where -m puts it
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        if module.startswith("ipykernel"):
            _callisto_let_the_control_thread_finish()
