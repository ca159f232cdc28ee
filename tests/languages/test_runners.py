"""The runners behind "language": "bash" and "sql" (gateway/languages/runners), run as the
gateway runs them in a kernel: loaded as modules, run() called in the working directory. No
kernel: IPython's publish_display_data is replaced by a recorder.

  /usr/bin/python3 tests/languages/test_runners.py gateway/languages/runners
"""

import contextlib
import io
import os
import signal
import sys
import tempfile
import threading
import time
import types

RUNNERS = sys.argv[1] if len(sys.argv) > 1 else "gateway/languages/runners"
FAILURES = []
shown = []  # display data the SQL runner published

import IPython.display  # noqa: E402

IPython.display.publish_display_data = lambda data, metadata=None, **kw: shown.append(data)


def load(name):
    module = types.ModuleType("_callisto_" + name)
    path = os.path.join(RUNNERS, name + "_runner.py")
    exec(compile(open(path).read(), path, "exec"), module.__dict__)
    return module


shell = load("shell")
sql = load("sql")


def check(cond, what, detail=""):
    if not cond:
        FAILURES.append(f"{what}: {detail!r}")
        print(f"  FAIL {what}: {detail!r}", flush=True)


def captured(fn, *args):
    """(stdout, stderr, exception) of fn(*args)."""
    out, err = io.StringIO(), io.StringIO()
    error = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - the test looks at it
            error = e
    return out.getvalue(), err.getvalue(), error


def interrupt_after(seconds):
    pid = os.getpid()
    timer = threading.Timer(seconds, lambda: os.kill(pid, signal.SIGINT))
    timer.start()
    return timer


# ---- shell ----------------------------------------------------------------------------------


def test_shell_output_and_status():
    out, err, e = captured(shell.run, "echo one; echo two >&2; printf 'no newline'")
    check(out == "one\nno newline", "stdout copied as is", out)
    check(err == "two\n", "stderr copied", err)
    check(e is None, "status 0 is no error", e)


def test_shell_failure_shows_status_and_stderr_tail():
    script = "for i in $(seq 1 30); do echo line$i >&2; done; exit 3"
    out, err, e = captured(shell.run, script)
    check(isinstance(e, shell.ShellError), "non-zero exit raises ShellError", e)
    check("status 3" in str(e), "the status is named", str(e))
    tb = e._render_traceback_()
    check(tb[0].startswith("ShellError: "), "traceback starts with the error", tb)
    check(tb[-1].strip() == "line30" and "line10" not in "\n".join(tb),
          "the last 20 lines of stderr, not more", tb)
    _, _, e = captured(shell.run, "kill -9 $$")
    check(isinstance(e, shell.ShellError) and "SIGKILL" in str(e), "a kill names the signal", e)


def test_shell_runs_in_the_working_directory_with_the_environment():
    with tempfile.TemporaryDirectory() as d:
        cwd = os.getcwd()
        os.chdir(d)
        os.environ["CALLISTO_TEST_VAR"] = "from-env"
        try:
            out, _, e = captured(shell.run, 'pwd; echo "$CALLISTO_TEST_VAR" > f.txt; cat f.txt')
        finally:
            os.chdir(cwd)
            del os.environ["CALLISTO_TEST_VAR"]
        check(out == os.path.realpath(d) + "\nfrom-env\n", "cwd and env are the kernel's", out)


def test_shell_long_script_goes_through_a_file():
    script = "x=1\n" + "# padding\n" * 20000 + "echo done $x"
    out, _, e = captured(shell.run, script)
    check(out == "done 1\n" and e is None, "a 200 KB script runs", (out[-50:], e))


def test_shell_background_processes_end_with_the_script():
    with tempfile.TemporaryDirectory() as d:
        marker = os.path.join(d, "still-running")
        started = time.monotonic()
        out, _, e = captured(shell.run, f"(sleep 3; touch {marker}) & echo started")
        took = time.monotonic() - started
        time.sleep(3.5)
        check(out == "started\n" and e is None, "the script's own output", (out, e))
        check(took < 2.5, "bash's exit is not held up by its background child", took)
        check(not os.path.exists(marker), "the background child was killed", marker)


def test_shell_processes_that_left_the_group_end_with_the_script_too():
    with tempfile.TemporaryDirectory() as d:
        marker = os.path.join(d, "escaped")
        before = shell._children()
        out, _, e = captured(
            shell.run,
            f"setsid sh -c 'sleep 2; touch {marker}' >/dev/null 2>&1 </dev/null & "
            f"(sh -c 'sleep 2; touch {marker}.2' &) ; sleep 0.5; echo ok")
        time.sleep(2.5)
        check(out == "ok\n" and e is None, "the script's own output", (out, e))
        check(not os.path.exists(marker), "a setsid child was killed", marker)
        check(not os.path.exists(marker + ".2"), "a double-forked child was killed", marker)
        check(shell._children() == before, "and reaped: no zombie, no child left",
              shell._children() - before)


def test_shell_interrupt_stops_the_group():
    with tempfile.TemporaryDirectory() as d:
        marker = os.path.join(d, "after")
        timer = interrupt_after(1.0)
        started = time.monotonic()
        try:
            out, _, e = captured(shell.run, f"echo before; trap '' INT; sleep 30; touch {marker}")
            interrupted = False
        except KeyboardInterrupt as stopped:
            interrupted = True
            check(type(stopped).__name__ == "KeyboardInterrupt", "named as any interrupt")
            check(stopped._render_traceback_() ==
                  ["KeyboardInterrupt: the script was killed by SIGTERM after an interrupt"],
                  "one line says how it ended", stopped._render_traceback_())
        finally:
            timer.cancel()
        took = time.monotonic() - started
        check(interrupted, "the interrupt reaches the caller as KeyboardInterrupt")
        check(took < 6, "a script that ignores SIGINT is stopped by SIGTERM", took)
        time.sleep(0.5)
        check(not os.path.exists(marker), "nothing of the script runs afterwards", marker)


def test_shell_undecodable_output_is_replaced():
    out, _, e = captured(shell.run, r"printf 'a\377b\n'")
    check(out == "a\ufffdb\n", "bytes that are not UTF-8 become U+FFFD", out)


# ---- sql ------------------------------------------------------------------------------------


@contextlib.contextmanager
def workdir(files):
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as d:
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        os.chdir(d)
        try:
            shown.clear()
            yield d
        finally:
            os.chdir(cwd)


SALES = "city,amount,zip\nParis,10.5,75001\nLyon,3,69001\nParis,4,75002\nNice,,06000\n"


def test_sql_over_a_csv_file():
    with workdir({"sales.csv": SALES}):
        _, _, e = captured(sql.run, "SELECT city, SUM(amount) FROM sales GROUP BY city "
                                    "ORDER BY 2 DESC LIMIT 5")
        check(e is None, "the query runs", e)
        check(len(shown) == 1, "one table shown", shown)
        data = shown[0]
        check(data["application/json"]["columns"] == ["city", "SUM(amount)"], "columns", data)
        check(data["application/json"]["rows"] == [["Paris", 14.5], ["Lyon", 3.0], ["Nice", None]],
              "rows, numbers as numbers, empty as NULL", data["application/json"])
        check(data["application/json"]["row_count"] == 3, "row count", data)
        check("<table" in data["text/html"] and "<th>city</th>" in data["text/html"], "HTML", data)
        check("Paris | 14.5" in data["text/plain"] and "(3 rows)" in data["text/plain"],
              "text table with the count", data["text/plain"])


def test_sql_column_types():
    with workdir({"t.csv": "i,r,s,z\n1,1.5,x,007\n-2,2,y,010\n"}):
        captured(sql.run, "SELECT typeof(i), typeof(r), typeof(s), typeof(z), z FROM t LIMIT 1")
        check(shown[-1]["application/json"]["rows"] == [["integer", "real", "text", "text", "007"]],
              "INTEGER, REAL, TEXT, and leading zeros kept as text", shown[-1])


def test_sql_jsonl_and_names():
    files = {"events-2024 Q1.jsonl": '{"a": 1, "b": {"x": 2}}\n\n{"a": 2, "c": true}\n',
             "9lives.csv": "n\n1\n"}
    with workdir(files):
        _, _, e = captured(sql.run, "SELECT a, b, c FROM events_2024_Q1 ORDER BY a")
        check(e is None, "the JSON-lines table", e)
        check(shown[-1]["application/json"]["rows"] == [[1, '{"x": 2}', None], [2, None, 1]],
              "nested values as JSON text, booleans as 0/1", shown[-1])
        _, _, e = captured(sql.run, "SELECT n FROM _9lives")
        check(e is None and shown[-1]["application/json"]["rows"] == [[1]],
              "a name starting with a digit gets a leading _", e)


def test_sql_persistent_database_and_statement_results():
    with workdir({}) as d:
        out, _, e = captured(sql.run, "CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1), (2);\n"
                                      "SELECT SUM(x) AS s FROM t")
        check(e is None, "three statements run", e)
        check(out == "2 rows changed\n", "the insert says how many rows", out)
        check(shown[-1]["application/json"]["rows"] == [[3]], "the select's table", shown[-1])
        check(os.path.exists(os.path.join(d, "callisto.db")), "callisto.db in the workdir")
        captured(sql.run, "SELECT COUNT(*) FROM t")
        check(shown[-1]["application/json"]["rows"] == [[2]], "the table persists", shown[-1])


def test_sql_queries_of_files_leave_no_database_until_something_is_stored():
    with workdir({"sales.csv": SALES}) as d:
        db = os.path.join(d, "callisto.db")
        for query in ("SELECT COUNT(*) FROM sales", "SELECT 1", "SELECT * FROM nope",
                      "BEGIN; SELECT city FROM sales; COMMIT"):
            captured(sql.run, query)
            check(not os.path.exists(db), f"no callisto.db after {query!r}", os.listdir(d))
        check(shown[-1]["application/json"]["row_count"] == 4, "the files are read", shown[-1])
        # The first statement that stores something makes it, in an open transaction too.
        out, _, e = captured(sql.run, "BEGIN; CREATE TABLE kept AS SELECT * FROM sales;\n"
                                      "INSERT INTO kept(city) VALUES ('Metz'); COMMIT")
        check(e is None, "stored", e)
        check(out == "1 row changed\n", "the insert after the switch says so", out)
        check(os.path.exists(db), "callisto.db made by the first store")
        captured(sql.run, "SELECT COUNT(*) FROM kept")
        check(shown[-1]["application/json"]["rows"] == [[5]], "what was stored is there", shown[-1])
        import sqlite3
        with sqlite3.connect(db) as other:
            check(other.execute("SELECT COUNT(*) FROM kept").fetchone() == (5,),
                  "another connection reads it from the file")
    with workdir({}) as d:
        _, _, e = captured(sql.run, "PRAGMA user_version = 7")
        check(e is None, "a PRAGMA that sets a value", e)
        captured(sql.run, "PRAGMA user_version")
        check(shown[-1]["application/json"]["rows"] == [[7]], "is kept in callisto.db", shown[-1])
        check(os.path.exists(os.path.join(d, "callisto.db")), "which it made")


def test_sql_file_changes_and_shadowing():
    with workdir({"s.csv": "v\n1\n"}):
        captured(sql.run, "SELECT SUM(v) FROM s")
        check(shown[-1]["application/json"]["rows"] == [[1]], "first version", shown[-1])
        time.sleep(0.01)
        with open("s.csv", "w") as f:
            f.write("v\n1\n2\n")
        captured(sql.run, "SELECT SUM(v) FROM s")
        check(shown[-1]["application/json"]["rows"] == [[3]], "a changed file is read again",
              shown[-1])
        os.unlink("s.csv")
        _, _, e = captured(sql.run, "SELECT SUM(v) FROM s")
        check(isinstance(e, sql.SQLError) and "no such table" in str(e),
              "a deleted file's table is gone", e)


def test_sql_row_cap_counts_all_rows():
    with workdir({}):
        captured(sql.run, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                          "WHERE i < 2500) SELECT i FROM n")
        data = shown[-1]
        check(len(data["application/json"]["rows"]) == sql.MAX_ROWS, "rows capped", len(data))
        check(data["application/json"]["row_count"] == 2500, "count of all rows", data["application/json"]["row_count"])
        check("2500 rows, the first 1000 shown" in data["text/plain"], "the cap is said",
              data["text/plain"][-80:])


def test_sql_syntax_error_points_at_the_position():
    with workdir({"sales.csv": SALES}):
        _, _, e = captured(sql.run, "SELECT 1;\nSELECT city,\n  SUM(amount FROM sales")
        check(isinstance(e, sql.SQLError), "a syntax error raises SQLError", e)
        check("line 3, column 14" in str(e), "line and column of the whole text", str(e))
        tb = e._render_traceback_()
        check(tb[1] == "    SUM(amount FROM sales" and tb[2] == "  " + " " * 13 + "^",
              "the line and a caret under the place", tb)
        _, _, e = captured(sql.run, "SELECT * FROM nope")
        check("sales (sales.csv)" in "\n".join(e._render_traceback_()),
              "an unknown table lists the files' tables", e._render_traceback_())
        _, _, e = captured(sql.run, "SELECT (1 +")
        check("incomplete input" in str(e) and "column 12" in str(e),
              "incomplete input points at the end", str(e))


def test_sql_bad_files_are_clear_errors():
    with workdir({"bad.jsonl": '{"a": 1}\nnot json\n', "empty.csv": ""}):
        _, _, e = captured(sql.run, "SELECT * FROM bad")
        check(isinstance(e, sql.SQLError) and "bad.jsonl, line 2" in str(e), "bad JSON line", e)
        _, _, e = captured(sql.run, "SELECT * FROM empty")
        check(isinstance(e, sql.SQLError) and "empty.csv is empty" in str(e), "empty CSV", e)


def test_sql_interrupt_stops_a_long_query():
    with workdir({}):
        timer = interrupt_after(1.0)
        started = time.monotonic()
        try:
            captured(sql.run, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
                              "SELECT COUNT(*) FROM n")
            interrupted = False
        except KeyboardInterrupt as stopped:
            interrupted = True
            check(stopped._render_traceback_()[0].startswith(
                "KeyboardInterrupt: the statement was stopped: WITH RECURSIVE"),
                "one line names the statement", stopped._render_traceback_())
        finally:
            timer.cancel()
        check(interrupted, "an endless query ends with KeyboardInterrupt")
        check(time.monotonic() - started < 5, "soon after the interrupt")
        _, _, e = captured(sql.run, "SELECT 1")
        check(e is None, "the connection still works", e)


def test_sql_reset_workdir_reconnects():
    with workdir({}) as d:
        captured(sql.run, "CREATE TABLE keep(x)")
        os.unlink(os.path.join(d, "callisto.db"))  # a context reset empties the workdir
        _, _, e = captured(sql.run, "CREATE TABLE keep(x)")
        check(e is None, "a new database where the old one was deleted", e)
        check(os.path.exists(os.path.join(d, "callisto.db")), "written where it can be seen")


def main():
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_")]
    for name, fn in tests:
        before = len(FAILURES)
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            FAILURES.append(f"{name}: {e!r}")
            print(f"  FAIL {name}: raised {e!r}", flush=True)
        print(("ok   " if len(FAILURES) == before else "FAIL ") + name, flush=True)
    print(f"{len(tests) - len({f.split(':')[0] for f in FAILURES})} passed, "
          f"{len(FAILURES)} failed checks")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
