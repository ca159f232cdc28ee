"""Callisto's SQL runner: "language": "sql" executions.

The gateway loads this module into the context's Python kernel and calls run(sql). It runs in
the kernel's sandbox, over the kernel's working directory:

- every CSV file (.csv, .tsv) and JSON-lines file (.jsonl, .ndjson) at the top of the working
  directory is a table named after the file: "sales.csv" is `sales`, "Q1 sales-2024.csv" is
  `Q1_sales_2024`. A file is read when a statement names its table, and read again only once
  it changed. CSV columns holding only whole numbers are INTEGER, only numbers REAL, anything
  else TEXT (numbers with a leading zero too: "06000" is a code); an empty field is NULL.
- `callisto.db` in the working directory is a SQLite database that persists between
  executions: CREATE TABLE, INSERT and the rest write there. It is made by the first statement
  that stores something (or sets a PRAGMA): queries of the files alone leave no empty database
  in the working directory. A file's table shadows a stored table of the same name (it is a
  TEMP table).

Statements run one after another. Each one that returns rows is shown as a table (text/plain,
text/html, and application/json with the columns, the rows and the row count), at most
MAX_ROWS rows; the count is of all of them. A statement that changes rows prints how many.
An error stops there and raises SQLError, which names the statement, and for a syntax error
the line and column, with a caret under the place.
"""

import csv
import html
import io
import json
import math
import os
import re
import sqlite3
import sys

DATABASE = "callisto.db"
MAX_ROWS = 1000
CELL_CHARS = 60  # of a value in the text/plain table
TABLE_FILES = {".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}

_INTEGER = re.compile(r"[+-]?\d+")
_REAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_LEADING_ZERO = re.compile(r"[+-]?0\d")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_state = {"connection": None, "where": None, "loaded": {}, "wants_disk": False}


class SQLError(Exception):
    """IPython shows _render_traceback_() instead of this module's frames."""

    def __init__(self, message, lines):
        super().__init__(message)
        self.lines = lines

    def _render_traceback_(self):
        return [f"SQLError: {self}"] + self.lines


class Interrupted(KeyboardInterrupt):
    """A statement stopped by an interrupt; named KeyboardInterrupt, as any interrupted code."""

    def _render_traceback_(self):
        return [f"KeyboardInterrupt: {self}"]


Interrupted.__name__ = Interrupted.__qualname__ = "KeyboardInterrupt"


# ---- the connection ------------------------------------------------------------------------


def _connection():
    """The connection to ./callisto.db, opened again when the directory or the file changed
    (a context's reset empties the workdir: a connection to the deleted file would write where
    no one can see). While there is no such file, a database in memory stands in for it until
    a statement would store something (_stays_in_memory)."""
    path = os.path.abspath(DATABASE)
    try:
        identity = (path, os.stat(path).st_ino)
    except FileNotFoundError:
        identity = (path, None)
    if _state["connection"] is None or identity != _state["where"]:
        _open(path, on_disk=identity[1] is not None)
    return _state["connection"]


def _open(path, on_disk):
    if _state["connection"] is not None:
        _state["connection"].close()
    if on_disk:
        connection = sqlite3.connect(path, isolation_level=None)  # autocommit; BEGIN works
        where = (path, os.stat(path).st_ino)
    else:
        connection = sqlite3.connect(":memory:", isolation_level=None)
        connection.set_authorizer(_stays_in_memory)
        where = (path, None)
    _interruptible(connection)
    _state.update(connection=connection, where=where, loaded={}, wants_disk=False)


# What stores something in the main database (the TEMP tables of the files are in "temp").
_STORES = {getattr(sqlite3, "SQLITE_" + name, None) for name in (
    "CREATE_INDEX", "CREATE_TABLE", "CREATE_TRIGGER", "CREATE_VIEW", "CREATE_VTABLE", "DELETE",
    "DROP_INDEX", "DROP_TABLE", "DROP_TRIGGER", "DROP_VIEW", "DROP_VTABLE", "INSERT", "UPDATE",
    "ALTER_TABLE", "REINDEX", "ANALYZE")} - {None}


def _stays_in_memory(action, arg1, arg2, database, trigger):
    """The authorizer of the database in memory: a statement that would store something there,
    or set a PRAGMA (which a connection to the file must then have too), is refused before it
    runs, and run again on ./callisto.db (_execute)."""
    if (action in _STORES and database == "main") or (action == sqlite3.SQLITE_PRAGMA and
                                                      arg2 is not None):
        _state["wants_disk"] = True
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _execute(statement):
    connection = _connection()
    _load_named(connection, statement)
    _state["wants_disk"] = False
    try:
        return connection.execute(statement)
    except sqlite3.DatabaseError:
        if not _state["wants_disk"]:
            raise
    # The statement stores something: from here on the database is ./callisto.db. A transaction
    # the user began in memory (it stored nothing yet) goes on there.
    began = connection.in_transaction
    _open(os.path.abspath(DATABASE), on_disk=True)
    connection = _state["connection"]
    if began:
        connection.execute("BEGIN")
    _load_named(connection, statement)
    return connection.execute(statement)


# ---- files as tables -------------------------------------------------------------------------


def table_name(file_name):
    stem = os.path.splitext(file_name)[0]
    name = re.sub(r"\W", "_", stem, flags=re.ASCII)
    return "_" + name if name[:1].isdigit() else name


def _table_files():
    """{lower-case table name: (table name, file name, kind)} for the files here."""
    tables = {}
    with os.scandir(".") as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            kind = TABLE_FILES.get(os.path.splitext(entry.name)[1].lower())
            if kind and not entry.name.startswith(".") and entry.is_file():
                name = table_name(entry.name)
                tables.setdefault(name.lower(), (name, entry.name, kind))
    return tables


def _quote(identifier):
    return '"' + identifier.replace('"', '""') + '"'


def _column_names(header):
    names, seen = [], set()
    for i, raw in enumerate(header):
        base = raw.strip() or f"column_{i + 1}"
        name, n = base, 2
        while name.lower() in seen:
            name, n = f"{base}_{n}", n + 1
        seen.add(name.lower())
        names.append(name)
    return names


def _column_type(values):
    kind = "INTEGER"
    for v in values:
        if v == "":
            continue
        if _LEADING_ZERO.match(v):
            return "TEXT"  # a code ("06000", "007"), not a number
        if kind == "INTEGER" and not (_INTEGER.fullmatch(v) and -2**63 <= int(v) < 2**63):
            kind = "REAL"
        if kind == "REAL" and not _REAL.fullmatch(v):
            return "TEXT"
    return kind


def _convert(value, kind):
    if value == "":
        return None
    if kind == "INTEGER":
        return int(value)
    if kind == "REAL":
        return float(value)
    return value


def _read_csv(file_name):
    with open(file_name, newline="", encoding="utf-8-sig", errors="replace") as f:
        sample = f.read(65536)
        f.seek(0)
        delimiter = "\t" if file_name.lower().endswith(".tsv") else ","
        if not file_name.lower().endswith(".tsv"):
            try:
                delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
            except csv.Error:
                pass
        rows = list(csv.reader(f, delimiter=delimiter))
    if not rows:
        raise SQLError(f"{file_name} is empty: a CSV file needs a header line", [])
    columns = _column_names(rows[0])
    width = len(columns)
    body = [(row + [""] * width)[:width] for row in rows[1:]]
    kinds = [_column_type(row[i] for row in body) for i in range(width)]
    converted = [[_convert(v, k) for v, k in zip(row, kinds)] for row in body]
    return columns, kinds, converted


def _read_jsonl(file_name):
    records = []
    with open(file_name, encoding="utf-8-sig", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as e:
                raise SQLError(f"{file_name}, line {number}: not JSON ({e})", []) from None
            if not isinstance(record, dict):
                raise SQLError(f"{file_name}, line {number}: not a JSON object", [])
            records.append(record)
    columns = list(dict.fromkeys(key for record in records for key in record))
    if not columns:
        raise SQLError(f"{file_name} has no JSON objects with fields", [])

    def value(v):
        if isinstance(v, (dict, list)):
            return json.dumps(v, ensure_ascii=False)
        if isinstance(v, bool):
            return int(v)
        return v

    rows = [[value(record.get(c)) for c in columns] for record in records]
    return _column_names(columns), [""] * len(columns), rows


def _load(connection, name, file_name, kind):
    stat = os.stat(file_name)
    version = (file_name, stat.st_size, stat.st_mtime_ns)
    if _state["loaded"].get(name.lower()) == version:
        return
    columns, kinds, rows = (_read_csv if kind == "csv" else _read_jsonl)(file_name)
    definition = ", ".join(f"{_quote(c)} {k}".rstrip() for c, k in zip(columns, kinds))
    marks = ", ".join("?" * len(columns))
    # A savepoint, not BEGIN: the user may have a transaction open.
    connection.execute("SAVEPOINT callisto_load")
    try:
        connection.execute(f"DROP TABLE IF EXISTS temp.{_quote(name)}")
        connection.execute(f"CREATE TEMP TABLE {_quote(name)} ({definition})")
        connection.executemany(f"INSERT INTO temp.{_quote(name)} VALUES ({marks})", rows)
        connection.execute("RELEASE callisto_load")
    except BaseException:
        connection.execute("ROLLBACK TO callisto_load")
        connection.execute("RELEASE callisto_load")
        raise
    _state["loaded"][name.lower()] = version


def _load_named(connection, statement):
    """Loads the files whose tables the statement names (any word that matches one)."""
    files = _table_files()
    for word in {w.lower() for w in _WORD.findall(statement)}:
        if word in files:
            _load(connection, *files[word])
    # A file deleted since it was loaded: its table goes too.
    for gone in [n for n in _state["loaded"] if n not in files]:
        connection.execute(f"DROP TABLE IF EXISTS temp.{_quote(gone)}")
        del _state["loaded"][gone]


# ---- statements ------------------------------------------------------------------------------


def statements(sql):
    """(offset, text) of each statement, split where SQLite itself sees one end."""
    start = 0
    for i, ch in enumerate(sql):
        if ch == ";" and sqlite3.complete_statement(sql[start:i + 1]):
            yield start, sql[start:i + 1]
            start = i + 1
    if sql[start:].strip():
        yield start, sql[start:]


def _syntax_error_offset(statement):
    """Where SQLite's parser stops in `statement` (a character offset), or None: prepared
    again through the C library, whose sqlite3_error_offset Python's module does not expose.
    The statement is only parsed, against an empty in-memory database."""
    try:
        import ctypes

        lib = ctypes.CDLL("libsqlite3.so.0")
        lib.sqlite3_error_offset.restype = ctypes.c_int
        db = ctypes.c_void_p()
        if lib.sqlite3_open_v2(b":memory:", ctypes.byref(db), 0x06, None) != 0:
            return None
        try:
            raw = statement.encode("utf-8", "surrogatepass")
            stmt = ctypes.c_void_p()
            if lib.sqlite3_prepare_v2(db, raw, len(raw), ctypes.byref(stmt), None) == 0:
                lib.sqlite3_finalize(stmt)
                return None
            offset = lib.sqlite3_error_offset(db)
        finally:
            lib.sqlite3_close(db)
    except (OSError, AttributeError):
        return None
    if offset < 0:
        return None
    return len(raw[:offset].decode("utf-8", "replace"))


def _error(error, sql, offset, statement):
    message = str(error)
    lines = []
    if any(s in message for s in ("syntax error", "incomplete input", "unrecognized token")):
        at = _syntax_error_offset(statement)
        if at is None and "incomplete input" in message:
            at = len(statement.rstrip())
        if at is not None:
            position = offset + at
            line_number = sql.count("\n", 0, position) + 1
            line_start = sql.rfind("\n", 0, position) + 1
            line_end = sql.find("\n", position)
            line = sql[line_start:line_end if line_end >= 0 else len(sql)]
            column = position - line_start + 1
            message += f" (line {line_number}, column {column})"
            lines += [f"  {line}", "  " + " " * (column - 1) + "^"]
    elif "no such table" in message:
        files = _table_files()
        known = ", ".join(f"{n} ({f})" for n, f, _ in files.values()) or "none"
        lines.append(f"  tables from the files here: {known}")
    if not lines:
        lines.append("  in: " + " ".join(statement.split())[:300])
    return SQLError(message, lines)


# ---- results -------------------------------------------------------------------------------


def _json_value(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, bytes):
        return f"<{len(v)} bytes>"
    return v


def _text_value(v):
    text = "NULL" if v is None else (f"<{len(v)} bytes>" if isinstance(v, bytes) else str(v))
    text = text.replace("\n", " ")
    return text if len(text) <= CELL_CHARS else text[:CELL_CHARS - 1] + "…"


def _count_line(count, shown):
    rows = "row" if count == 1 else "rows"
    return f"{count} {rows}" if shown == count else f"{count} {rows}, the first {shown} shown"


def _show(columns, rows, count):
    from IPython.display import publish_display_data

    cells = [[_text_value(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    out = io.StringIO()
    out.write(" | ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip() + "\n")
    out.write("-+-".join("-" * w for w in widths) + "\n")
    for r in cells:
        out.write(" | ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() + "\n")
    out.write(f"({_count_line(count, len(rows))})")

    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(
        f"<td>{'<i>NULL</i>' if v is None else html.escape(_text_value(v))}</td>"
        for v in row) + "</tr>" for row in rows)
    table = (f'<table class="callisto-sql"><thead><tr>{head}</tr></thead>'
             f"<tbody>{body}</tbody></table><p>{_count_line(count, len(rows))}</p>")
    publish_display_data({
        "text/plain": out.getvalue(),
        "text/html": table,
        "application/json": {"columns": columns,
                             "rows": [[_json_value(v) for v in row] for row in rows],
                             "row_count": count},
    })


def _interruptible(connection):
    # SQLite calls back every so many steps; a pending KeyboardInterrupt is raised there,
    # which aborts the statement ("interrupted") instead of waiting for it to finish.
    connection.set_progress_handler(lambda: 0, 100_000)


def run(sql):
    for offset, statement in statements(sql):
        try:
            cursor = _execute(statement)
            if cursor.description is None:
                if cursor.rowcount >= 0:  # INSERT, UPDATE, DELETE (not DDL: -1)
                    n = cursor.rowcount
                    print(f"{n} {'row' if n == 1 else 'rows'} changed")
                continue
            columns = [d[0] for d in cursor.description]
            rows = cursor.fetchmany(MAX_ROWS)
            count = len(rows) + sum(1 for _ in cursor)
        except sqlite3.Error as e:
            connection = _state["connection"]
            if connection.in_transaction and "interrupted" in str(e):
                connection.execute("ROLLBACK")
            if isinstance(e, sqlite3.OperationalError) and str(e) == "interrupted":
                raise Interrupted("the statement was stopped: " +
                                  " ".join(statement.split())[:200]) from None
            raise _error(e, sql, offset, statement) from None
        _show(columns, rows, count)
