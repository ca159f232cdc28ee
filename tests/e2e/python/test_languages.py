"""End-to-end tests of executions that name their language: GET /v1/languages; SQL (SQLite
over the workdir's CSV and JSON-lines files, callisto.db) and bash in a Python context;
R in an R context; the refusals of a language a context does not run; the events WebSocket;
one-shot runs; and the MCP tools' "language" argument (run_code sql/bash in the session's
Python kernel, r in an R kernel of its own with its own files).

Standard library and websocket-client. Run against a server (CALLISTO_URL, CALLISTO_TOKEN)
that has the python3 and ir kernelspecs."""

import http.client
import json
import sys
import time
import urllib.parse

import websocket  # websocket-client

from e2e_client import (BASE_URL, HTTP_TIMEOUT, TOKEN, api, callisto_only, check,
                        check_documented, check_eq, check_schema, delete_context, run_tests)
from mcp_client import Session

# A deadline's interrupt, its grace and a restart on a loaded machine.
LADDER_TIMEOUT = 90
C, CI = "/v1/contexts", "/v1/contexts/{context_id}"
E = CI + "/executions"
X = "/v1/executions"
FP = CI + "/files/{path}"


def new_context(body=None):
    r = check_documented("POST", C, api("POST", C, body if body is not None else {},
                                        timeout=LADDER_TIMEOUT))
    check_eq(r.status, 201, f"create context {body!r}: {r.body[:300]!r}")
    return r.json()


class context:
    """A context for the with-block, deleted after it."""

    def __init__(self, body=None):
        self.body = body

    def __enter__(self):
        self.ctx = new_context(self.body)
        return self.ctx

    def __exit__(self, *exc):
        check_eq(delete_context(self.ctx["id"]), 204, "delete context")
        return False


def post_execution(ctx, code, **fields):
    body = {"code": code}
    body.update(fields)
    r = api("POST", f"{C}/{ctx['id']}/executions", body, timeout=LADDER_TIMEOUT + 30)
    return check_documented("POST", E, r)


def run(ctx, code, **fields):
    r = post_execution(ctx, code, **fields)
    check_eq(r.status, 200, f"execution of {code[:60]!r}: {r.body[:300]!r}")
    return r.json()


def run_ok(ctx, code, **fields):
    ex = run(ctx, code, **fields)
    check_eq(ex["status"], "ok", f"status of {code[:60]!r} ({json.dumps(ex)[:800]})")
    return ex


def sql(ctx, query, **fields):
    return run(ctx, query, language="sql", **fields)


def tables(ex):
    """The application/json of each result: {columns, rows, row_count}."""
    return [r["data"]["application/json"] for r in ex["results"]]


def put_file(ctx, path, data):
    r = check_documented("PUT", FP, api("PUT", f"{C}/{ctx['id']}/files/{urllib.parse.quote(path)}",
                                        data))
    check_eq(r.status, 201, f"upload {path}: {r.body[:200]!r}")


def file_status(ctx, path):
    return api("GET", f"{C}/{ctx['id']}/files/{path}").status


def executions_of(ctx):
    r = api("GET", f"{C}/{ctx['id']}/executions")
    check_eq(r.status, 200, "list executions")
    check_documented("GET", E, r)
    return r.json()


class Stream:
    """An execution posted with Accept: application/x-ndjson, read event by event with the
    time each arrived."""

    def __init__(self, path, body):
        url = urllib.parse.urlsplit(BASE_URL)
        self.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=HTTP_TIMEOUT)
        self.conn.request("POST", path, body=json.dumps(body).encode(),
                          headers={"Authorization": f"token {TOKEN}",
                                   "Content-Type": "application/json",
                                   "Accept": "application/x-ndjson"})
        self.resp = self.conn.getresponse()

    def events(self):
        """[(seconds since the request, event)] until the stream ends."""
        out, start = [], time.monotonic()
        while True:
            line = self.resp.readline()
            if not line:
                return out
            event = json.loads(line)
            check_schema(event, "ExecutionEvent", "a streamed event")
            out.append((time.monotonic() - start, event))

    def close(self):
        self.conn.close()


# --------------------------------------------------------------------------
# GET /v1/languages, contexts by language

@callisto_only
def test_languages_lists_each_language_and_the_kernel_that_runs_it():
    r = check_documented("GET", "/v1/languages", api("GET", "/v1/languages"))
    check_eq(r.status, 200, "GET /v1/languages")
    body = r.json()
    check_eq([lang["name"] for lang in body["languages"]], ["python", "r", "bash", "sql"],
             "the four languages in order")
    kernel_of = {lang["name"]: lang["kernel"] for lang in body["languages"]}
    check_eq(kernel_of, {"python": "python3", "r": "ir", "bash": "python3", "sql": "python3"},
             "which kernel runs each")
    for lang in body["languages"]:
        check(lang["kernel"] in lang["kernels"], "the chosen kernel is one that runs it", lang)
    kernels = {k["name"]: k for k in body["kernels"]}
    check_eq(kernels["python3"]["languages"], ["python", "bash", "sql"], "python3 runs")
    check_eq(kernels["ir"]["languages"], ["r"], "ir runs")
    check_eq(kernels["ir"]["language"].lower(), "r", "ir's own language field")
    check_eq(body["default_kernel"], "python3", "default kernel")
    names = sorted(k["name"] for k in body["kernels"])
    specs = api("GET", "/api/kernelspecs").json()["kernelspecs"]
    check_eq(names, sorted(specs), "every installed kernelspec is listed")
    r = check_documented("GET", "/v1/languages", api("GET", "/v1/languages", auth=None))
    check_eq(r.status, 401, "no token")


@callisto_only
def test_a_context_named_by_language_gets_the_kernel_that_runs_it():
    with context({"language": "sql"}) as ctx:
        check_eq(ctx["kernel"], "python3", "sql -> python3")
        check_eq(ctx["languages"], ["python", "bash", "sql"], "what it runs")
        got = check_documented("GET", CI, api("GET", f"{C}/{ctx['id']}")).json()
        check_eq(got["languages"], ["python", "bash", "sql"], "GET says the same")
    with context({}) as ctx:
        check_eq(ctx["languages"], ["python", "bash", "sql"], "the default kernel's languages")
    for body in ({"language": "sql", "kernel": "ir"}, {"language": "python", "kernel": "ir"},
                 {"language": "r", "kernel": "python3"}, {"language": "cobol"},
                 {"language": 7}, {"language": ""}):
        r = check_documented("POST", C, api("POST", C, body))
        check_eq(r.status, 400, f"create context {body}")
        check(r.json().get("message"), "a message says why", r.body)


@callisto_only
def test_r_context_runs_r_and_refuses_the_others():
    with context({"language": "R"}) as ctx:
        check_eq(ctx["kernel"], "ir", "language R -> ir")
        check_eq(ctx["languages"], ["r"], "an R context runs r only")
        put_file(ctx, "data.csv", b"x\n1\n2\n39\n")
        ex = run_ok(ctx, "d <- read.csv('data.csv')\ncat(sum(d$x))", language="r")
        check_eq(ex["stdout"], "42", "R read the upload")
        check_eq(ex["language"], "r", "the execution says its language")
        ex = run_ok(ctx, "cat(nrow(d))")  # no language: the kernel's own
        check_eq(ex["stdout"], "3", "state kept, language absent")
        check("language" not in ex, "no language when the request named none", ex)
        for lang in ("python", "bash", "sql"):
            r = post_execution(ctx, "1", language=lang)
            check_eq(r.status, 400, f"{lang} on an R context")
            msg = r.json()["message"]
            check(f"does not run {lang}" in msg and "it runs r" in msg,
                  "the message names what it runs", msg)


# --------------------------------------------------------------------------
# SQL

SALES = (b"city,amount,day\n"
         b"Oslo,120,2026-01-01\nRome,80.5,2026-01-01\nCairo,40,2026-01-02\n"
         b"Oslo,30,2026-01-02\nLima,300,2026-01-03\nRome,19.5,2026-01-03\n"
         b"Kyiv,5,2026-01-04\nPerth,1,2026-01-04\nCairo,65,2026-01-05\nLima,,2026-01-05\n")


@callisto_only
def test_sql_over_an_uploaded_csv_in_one_call():
    with context() as ctx:
        put_file(ctx, "sales.csv", SALES)
        ex = run_ok(ctx, "SELECT city, SUM(amount) FROM sales GROUP BY city ORDER BY 2 DESC LIMIT 5",
                    language="sql")
        check_eq(ex["language"], "sql", "language")
        check_eq(len(ex["results"]), 1, "one result")
        data = ex["results"][0]["data"]
        check_eq(set(data), {"text/plain", "text/html", "application/json"}, "three forms")
        # amount holds 80.5: a REAL column, so the sums are REAL; Lima's empty amount is NULL.
        check_eq(data["application/json"],
                 {"columns": ["city", "SUM(amount)"],
                  "rows": [["Lima", 300.0], ["Oslo", 150.0], ["Cairo", 105.0], ["Rome", 100.0],
                           ["Kyiv", 5.0]],
                  "row_count": 5}, "the exact rows")
        check(data["text/html"].startswith('<table class="callisto-sql">'), "an HTML table",
              data["text/html"][:100])
        check("<th>city</th>" in data["text/html"] and "<td>Lima</td>" in data["text/html"],
              "HTML has the cells", data["text/html"][:400])
        text = data["text/plain"]
        check(text.splitlines()[0].split() == ["city", "|", "SUM(amount)"], "text header", text)
        check(text.endswith("(5 rows)"), "text row count", text)
        check_eq(ex["stdout"], "", "nothing on stdout")

        # Integers stay integers; a code with a leading zero stays text; an empty field is NULL.
        put_file(ctx, "codes.csv", b"zip,n,note\n06000,1,\n10115,2,x\n")
        ex = run_ok(ctx, "SELECT zip, n, note, typeof(n) FROM codes ORDER BY n", language="sql")
        check_eq(tables(ex)[0]["rows"], [["06000", 1, None, "integer"], ["10115", 2, "x", "integer"]],
                 "types")
        # A file changed since it was read is read again.
        put_file(ctx, "codes.csv", b"zip,n,note\n09999,7,changed\n")
        ex = run_ok(ctx, "SELECT zip, n, note FROM codes", language="sql")
        check_eq(tables(ex)[0]["rows"], [["09999", 7, "changed"]], "the new content")
        # Names: non-word characters become _, a TSV is a table too; a file in a subdirectory
        # is not; several statements give several results.
        put_file(ctx, "Q1 sales-2026.tsv", b"k\tv\na\t1\nb\t2\n")
        put_file(ctx, "sub/inner.csv", b"a\n1\n")
        ex = run_ok(ctx, "SELECT SUM(v) AS total FROM Q1_sales_2026;\nSELECT count(*) FROM sales;",
                    language="Sql")
        check_eq([t["rows"] for t in tables(ex)], [[[3]], [[10]]], "two statements, two tables")
        err = sql(ctx, "SELECT * FROM inner")
        check_eq(err["status"], "error", "a file in a subdirectory is no table")
        check_eq(err["error"]["name"], "SQLError", "error name")
        check_eq(err["error"]["value"], "no such table: inner", "error value")
        tb = "\n".join(err["error"]["traceback"])
        for table, name in (("Q1_sales_2026", "Q1 sales-2026.tsv"), ("codes", "codes.csv"),
                            ("sales", "sales.csv")):
            check(f"{table} ({name})" in tb, "the traceback lists the tables from files", tb)
        check("inner" not in tb.split("tables from the files here:", 1)[1], "not the inner one", tb)
        # Queries of the files stored nothing: no empty callisto.db in the workdir's listing.
        check_eq(file_status(ctx, "callisto.db"), 404, "no callisto.db after queries alone")


@callisto_only
def test_sql_reads_json_lines_files():
    with context() as ctx:
        put_file(ctx, "events.jsonl",
                 b'{"user": "ana", "n": 3, "ok": true, "tags": ["x", "y"]}\n'
                 b'\n'
                 b'{"user": "bob", "n": 4, "ok": false, "extra": {"k": 1}}\n'
                 b'{"user": "ana", "n": 5, "ok": true}\n')
        put_file(ctx, "web-log.ndjson", b'{"path": "/a", "ms": 12.5}\n{"path": "/b", "ms": 7}\n')
        ex = run_ok(ctx, "SELECT user, SUM(n) AS n, SUM(ok) AS oks FROM events "
                         "GROUP BY user ORDER BY user", language="sql")
        check_eq(tables(ex)[0], {"columns": ["user", "n", "oks"],
                                 "rows": [["ana", 8, 2], ["bob", 4, 0]], "row_count": 2},
                 "aggregated JSON lines")
        ex = run_ok(ctx, "SELECT tags, json_extract(extra, '$.k') FROM events ORDER BY n",
                    language="sql")
        check_eq(tables(ex)[0]["rows"], [['["x", "y"]', None], [None, 1], [None, None]],
                 "nested values are JSON text, missing keys NULL")
        ex = run_ok(ctx, "SELECT path FROM web_log WHERE ms > 10", language="sql")
        check_eq(tables(ex)[0]["rows"], [["/a"]], ".ndjson, named with _")
        put_file(ctx, "broken.jsonl", b'{"a": 1}\nnot json\n')
        err = sql(ctx, "SELECT * FROM broken")
        check_eq(err["status"], "error", "a bad line is an error")
        check_eq(err["error"]["name"], "SQLError", "error name")
        check("broken.jsonl, line 2" in err["error"]["value"], "names the line", err["error"])


@callisto_only
def test_sql_tables_persist_in_callisto_db_and_python_sees_them():
    with context() as ctx:
        ex = run_ok(ctx, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);\n"
                         "INSERT INTO notes (body) VALUES ('alpha'), ('beta');", language="sql")
        check_eq(ex["stdout"], "2 rows changed\n", "INSERT says how many")
        check_eq(ex["results"], [], "no table for statements without rows")
        ex = run_ok(ctx, "UPDATE notes SET body = upper(body) WHERE id = 1;\n"
                         "SELECT id, body FROM notes ORDER BY id;", language="sql")
        check_eq(ex["stdout"], "1 row changed\n", "UPDATE says how many")
        check_eq(tables(ex)[0]["rows"], [[1, "ALPHA"], [2, "beta"]], "the second execution sees it")
        ex = run_ok(ctx, "import sqlite3\ncon = sqlite3.connect('callisto.db')\n"
                         "print(con.execute('SELECT body FROM notes ORDER BY id').fetchall())\n"
                         "con.execute(\"INSERT INTO notes (body) VALUES ('from python')\")\n"
                         "con.commit()\ncon.close()")
        check_eq(ex["stdout"], "[('ALPHA',), ('beta',)]\n", "Python reads callisto.db")
        ex = run_ok(ctx, "SELECT body FROM notes WHERE id = 3", language="sql")
        check_eq(tables(ex)[0]["rows"], [["from python"]], "SQL sees Python's row")
        check_eq(file_status(ctx, "callisto.db"), 200, "callisto.db is a workdir file")
        # The database is a file: it outlives a kernel restart.
        r = check_documented("POST", CI + "/restart", api("POST", f"{C}/{ctx['id']}/restart",
                                                          timeout=LADDER_TIMEOUT))
        check_eq(r.status, 200, "restart")
        ex = run_ok(ctx, "DELETE FROM notes WHERE id > 1; SELECT count(*) AS n FROM notes",
                    language="sql")
        check_eq(ex["stdout"], "2 rows changed\n", "DELETE after the restart")
        check_eq(tables(ex)[0]["rows"], [[1]], "kept over the restart")


@callisto_only
def test_sql_syntax_error_points_at_line_and_column():
    with context() as ctx:
        query = "SELECT 1 AS one;\nSELECT *\n  FROM nowhere WHERE )"
        ex = sql(ctx, query)
        check_eq(ex["status"], "error", "status")
        check_eq(ex["error"]["name"], "SQLError", "error name")
        value = ex["error"]["value"]
        check(value.startswith('near ")": syntax error'), "SQLite's message", value)
        check(value.endswith("(line 3, column 22)"), "line and column", value)
        tb = ex["error"]["traceback"]
        check_eq(tb[0], "SQLError: " + value, "first traceback line")
        line = [t for t in tb if t.strip() == "FROM nowhere WHERE )"]
        check_eq(len(line), 1, "the offending line is shown: " + json.dumps(tb))
        caret = tb[tb.index(line[0]) + 1]
        check_eq(caret.strip(), "^", "a caret line follows")
        check_eq(caret.index("^"), line[0].index(")"), "the caret is under the place")
        check_eq(tables(ex), [{"columns": ["one"], "rows": [[1]], "row_count": 1}],
                 "the statement before the error ran")
        check("\x1b" not in "".join(tb), "no ANSI codes")
        ex = sql(ctx, "SELECT (1 +")
        check_eq(ex["error"]["name"], "SQLError", "incomplete input")
        check("(line 1, column" in ex["error"]["value"], "incomplete input has a place",
              ex["error"]["value"])


@callisto_only
def test_sql_shows_at_most_1000_rows_and_counts_them_all():
    with context() as ctx:
        ex = run_ok(ctx, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                         "WHERE x < 2500) SELECT x, x * x AS sq FROM c", language="sql")
        t = tables(ex)[0]
        check_eq(t["row_count"], 2500, "row_count counts all")
        check_eq(len(t["rows"]), 1000, "1000 rows shown")
        check_eq((t["rows"][0], t["rows"][-1]), ([1, 1], [1000, 1000000]), "the first 1000")
        text = ex["results"][0]["data"]["text/plain"]
        check(text.endswith("(2500 rows, the first 1000 shown)"), "the text says so", text[-80:])
        check_eq(ex["results"][0]["data"]["text/html"].count("<tr>"), 1001, "HTML: header + 1000")


@callisto_only
def test_sql_endless_query_stops_at_the_deadline_and_the_context_answers():
    with context() as ctx:
        run_ok(ctx, "kept = 'yes'")
        start = time.monotonic()
        ex = sql(ctx, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                      "SELECT count(*) FROM c", timeout=2)
        check_eq(ex["status"], "timeout", "status " + json.dumps(ex)[:500])
        check_eq(ex["state_preserved"], True, "the interrupt stopped the statement")
        check_eq(ex["error"]["name"], "KeyboardInterrupt", "error name")
        check(time.monotonic() - start < 30, "ended near the deadline", time.monotonic() - start)
        check_eq(tables(sql_ok(ctx, "SELECT 6 * 7 AS x"))[0]["rows"], [[42]], "SQL still answers")
        check_eq(run_ok(ctx, "kept")["results"][0]["data"]["text/plain"], "'yes'", "state kept")


def sql_ok(ctx, query, **fields):
    return run_ok(ctx, query, language="sql", **fields)


@callisto_only
def test_sql_result_over_the_result_cap_becomes_a_file():
    # A 6 MB value: the text and HTML forms shorten each cell to 60 characters, the JSON form
    # keeps it whole and so exceeds --result-cap (5MiB by default): it is written to a file.
    with context() as ctx:
        ex = sql_ok(ctx, "SELECT replace(hex(zeroblob(3000000)), '0', 'x') AS big, 7 AS n")
        cut = ex["truncated"]["results"]
        check_eq(len(cut), 1, "one result cut: " + json.dumps(ex["truncated"]))
        check_eq(cut[0]["mime"], "application/json", "the JSON form")
        check(cut[0]["bytes"] > 6_000_000, "its size", cut[0])
        data = ex["results"][0]["data"]
        ref = data["application/json"]
        check(isinstance(ref, dict) and ref.get("file") == cut[0]["moved_to"],
              "a file reference in its place", ref)
        check(data["text/plain"].endswith("(1 row)") and len(data["text/plain"]) < 1000,
              "the text form stays inline and short", data["text/plain"][:200])
        r = api("GET", f"{C}/{ctx['id']}/files/{ref['file']}")
        check_eq(r.status, 200, "the file can be downloaded")
        whole = json.loads(r.body)
        check_eq((whole["row_count"], len(whole["rows"][0][0]), whole["rows"][0][1]),
                 (1, 6_000_000, 7), "the whole table is in the file")


# --------------------------------------------------------------------------
# bash

@callisto_only
def test_bash_output_is_streamed_as_it_comes():
    with context() as ctx:
        s = Stream(f"{C}/{ctx['id']}/executions",
                   {"code": "echo a; echo oops >&2; sleep 1.5; echo b", "language": "bash"})
        try:
            check_eq(s.resp.status, 200, "stream status")
            check_eq(s.resp.getheader("Content-Type"), "application/x-ndjson", "NDJSON")
            events = s.events()
        finally:
            s.close()
        types = [e["type"] for _, e in events]
        check_eq(types[:2], ["queued", "start"], "first events")
        check_eq(types[-1], "end", "last event")
        end_at, end = events[-1]
        out = [(t, e["text"]) for t, e in events if e["type"] == "stdout"]
        err = [(t, e["text"]) for t, e in events if e["type"] == "stderr"]
        check(out and out[0][1].startswith("a\n") and "b" not in out[0][1],
              "the first stdout event is a alone", out)
        check(end_at - out[0][0] >= 1.0, "a arrived before the sleep ended",
              [(round(t, 2), x) for t, x in out], round(end_at, 2))
        check(err and err[0][1] == "oops\n" and end_at - err[0][0] >= 1.0,
              "stderr streamed before the end too", err)
        check_eq("".join(x for _, x in out), "a\nb\n", "all of stdout")
        execution = end["execution"]
        check_eq((execution["status"], execution["language"], execution["stdout"],
                  execution["stderr"]), ("ok", "bash", "a\nb\n", "oops\n"), "the end")


@callisto_only
def test_bash_non_zero_exit_is_a_shell_error_with_the_stderr_tail():
    with context() as ctx:
        ex = run(ctx, "echo before\nfor i in $(seq 1 30); do echo problem-$i >&2; done\nexit 3",
                 language="bash")
        check_eq(ex["status"], "error", "status")
        check_eq(ex["error"]["name"], "ShellError", "error name")
        check_eq(ex["error"]["value"], "the script exited with status 3", "error value")
        tb = ex["error"]["traceback"]
        check_eq(tb[0], "ShellError: the script exited with status 3", "first line")
        check("  problem-30" in tb and "  problem-11" in tb, "the last stderr lines", tb)
        check("  problem-10" not in tb, "only the tail", tb)
        check_eq(ex["stdout"], "before\n", "stdout kept")
        check(ex["stderr"].startswith("problem-1\n") and ex["stderr"].endswith("problem-30\n"),
              "all of stderr in stderr", ex["stderr"][:100])
        ex = run(ctx, "false", language="bash")
        check_eq((ex["status"], ex["error"]["value"]), ("error", "the script exited with status 1"),
                 "false")
        ex = run(ctx, "kill -TERM $$", language="bash")
        check_eq(ex["error"]["name"], "ShellError", "killed by a signal")
        check_eq(ex["error"]["value"], "the script was killed by SIGTERM", "the signal named")
        check_eq(run_ok(ctx, "true", language="bash")["error"], None, "exit 0 is ok")


@callisto_only
def test_bash_sees_the_execution_env_and_shares_files_with_python():
    with context() as ctx:
        ex = run_ok(ctx, 'echo "$GREETING from $(basename "$PWD")"; echo "$HOME" > home.txt',
                    language="bash", env={"GREETING": "hej"})
        check(ex["stdout"].startswith("hej from "), "env visible to the script", ex["stdout"])
        ex = run_ok(ctx, 'echo "[${GREETING-unset}]"', language="bash")
        check_eq(ex["stdout"], "[unset]\n", "env only for that execution")
        ex = run_ok(ctx, "pwd; echo from-bash > made-by-bash.txt", language="bash")
        bash_cwd = ex["stdout"].strip()
        ex = run_ok(ctx, "import os\nprint(os.getcwd())\nprint(open('made-by-bash.txt').read(), end='')\n"
                         "open('made-by-python.txt', 'w').write('from-python\\n')")
        check_eq(ex["stdout"], f"{bash_cwd}\nfrom-bash\n", "same directory, Python reads bash's file")
        ex = run_ok(ctx, "cat made-by-python.txt; wc -c < made-by-python.txt", language="bash")
        check_eq(ex["stdout"], "from-python\n12\n", "bash reads Python's file")
        check_eq(api("GET", f"{C}/{ctx['id']}/files/made-by-bash.txt").body, b"from-bash\n",
                 "bash's file downloads")
        # Python's own state is untouched by a script: no shared variables, same process.
        run_ok(ctx, "x = 41")
        run_ok(ctx, "x=0", language="bash")
        check_eq(run_ok(ctx, "x + 1")["results"][0]["data"]["text/plain"], "42", "Python's x")


@callisto_only
def test_bash_deadline_stops_the_script_group_and_keeps_python_state():
    with context() as ctx:
        run_ok(ctx, "kept = 'yes'")
        start = time.monotonic()
        ex = run(ctx, "sleep 30 & sleep 31; wait", language="bash", timeout=2)
        took = time.monotonic() - start
        check_eq(ex["status"], "timeout", "status " + json.dumps(ex)[:500])
        check_eq(ex["state_preserved"], True, "an interrupt sufficed")
        check_eq(ex["error"]["name"], "KeyboardInterrupt", "error name")
        check(took < 15, "stopped soon after the deadline", took)
        check_eq(run_ok(ctx, "kept")["results"][0]["data"]["text/plain"], "'yes'",
                 "the Python variable is still there")
        ex = run_ok(ctx, "import os\nleft = []\nfor p in os.listdir('/proc'):\n"
                         "    try:\n        cmd = open(f'/proc/{p}/cmdline', 'rb').read()\n"
                         "    except OSError:\n        continue\n"
                         "    if cmd.startswith(b'sleep\\x0030') or cmd.startswith(b'sleep\\x0031'):\n"
                         "        left.append(cmd)\nprint(left)")
        check_eq(ex["stdout"], "[]\n", "neither sleep is left running")
        # DELETE interrupts a running script the same way.
        s = Stream(f"{C}/{ctx['id']}/executions",
                   {"code": "echo go; sleep 30", "language": "bash"})
        try:
            queued = json.loads(s.resp.readline())
            check_eq(queued["type"], "queued", "first event")
            eid = queued["id"]
            for _ in range(10):  # until the script has begun
                if json.loads(s.resp.readline())["type"] == "stdout":
                    break
            r = api("DELETE", f"{C}/{ctx['id']}/executions/{eid}")
            check_eq(r.status, 202, "DELETE of the running script")
            rest = s.events()
        finally:
            s.close()
        end = rest[-1][1]["execution"]
        check_eq((end["status"], end["state_preserved"], end["error"]["name"]),
                 ("interrupted", True, "KeyboardInterrupt"), "interrupted")


@callisto_only
def test_bash_huge_output_is_capped():
    with context() as ctx:
        ex = run_ok(ctx, "yes | head -c 50000000", language="bash")
        cut = ex["truncated"]["stdout_bytes"]
        check(cut > 40_000_000, "most was cut", ex["truncated"])
        out = ex["stdout"]
        check(out.startswith("y\ny\n") and out.endswith("y\ny\n"), "head and tail kept",
              out[:10], out[-10:])
        check(f"[... {cut} bytes truncated ...]" in out, "an explicit marker")
        check(len(out) < 2 * 1024 * 1024, "the answer stays small", len(out))
        check_eq(run_ok(ctx, "echo still-here", language="bash")["stdout"], "still-here\n",
                 "the context answers after")


@callisto_only
def test_bash_background_processes_end_with_the_script():
    with context() as ctx:
        start = time.monotonic()
        ex = run_ok(ctx, "(sleep 3; touch late.txt) & echo started", language="bash")
        check_eq(ex["stdout"], "started\n", "stdout")
        check(time.monotonic() - start < 3, "the execution did not wait for the background job",
              time.monotonic() - start)
        time.sleep(4)
        check_eq(file_status(ctx, "late.txt"), 404, "late.txt was never written")
        ex = run_ok(ctx, "test -e late.txt && echo exists || echo absent", language="bash")
        check_eq(ex["stdout"], "absent\n", "bash agrees")
        ex = run_ok(ctx, "nohup sh -c 'sleep 3; touch later.txt' >/dev/null 2>&1 & echo ok",
                    language="bash")
        time.sleep(4)
        check_eq(file_status(ctx, "later.txt"), 404, "nohup does not escape the group kill")
        # Out of the group: setsid, and a double fork (orphaned to the sandbox's init, were
        # the kernel not a subreaper while the script runs).
        ex = run_ok(ctx, "setsid sh -c 'sleep 3; touch escaped.txt' >/dev/null 2>&1 </dev/null & "
                         "(sh -c 'sleep 3; touch forked.txt' >/dev/null 2>&1 &); sleep 0.5; "
                         "echo ok", language="bash")
        check_eq(ex["stdout"], "ok\n", "stdout")
        time.sleep(4)
        check_eq(file_status(ctx, "escaped.txt"), 404, "a setsid child ends with the script")
        check_eq(file_status(ctx, "forked.txt"), 404, "a double-forked child ends with it too")
        ex = run_ok(ctx, "import os; print(len(open('/proc/self/task/%d/children' % os.getpid())"
                         ".read().split()))")
        check_eq(ex["stdout"], "0\n", "the kernel is left with no child, not even a zombie")


@callisto_only
def test_bash_and_sql_work_again_after_the_kernel_process_died():
    # The gateway loads each runner once per kernel process: a new process needs it again.
    with context() as ctx:
        check_eq(run_ok(ctx, "echo one", language="bash")["stdout"], "one\n", "bash before")
        run_ok(ctx, "SELECT 1", language="sql")
        died = api("POST", f"/v1/contexts/{ctx['id']}/executions",
                   {"code": "import os; os.kill(os.getpid(), 9)"}).json()
        check_eq(died["error"]["name"], "KernelRestarted", "the kernel died and restarted")
        check_eq(run_ok(ctx, "echo two", language="bash")["stdout"], "two\n", "bash after")
        rows = run_ok(ctx, "SELECT 2 AS n", language="sql")["results"][0]["data"]
        check_eq(rows["application/json"]["rows"], [[2]], "sql after")

@callisto_only
def test_bash_runs_inside_the_sandbox():
    port = urllib.parse.urlsplit(BASE_URL).port
    script = (
        "if curl -sS -m 5 -o /dev/null http://192.0.2.1/ 2>/dev/null; then echo curl:connected;"
        " else echo curl:failed; fi\n"
        "if (echo > /dev/tcp/192.0.2.1/80) 2>/dev/null; then echo tcp:connected;"
        " else echo tcp:failed; fi\n"
        f"if (echo > /dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo gateway:connected;"
        " else echo gateway:failed; fi\n"
        "if (echo x > /etc/callisto-e2e) 2>/dev/null; then echo etc:written; else echo etc:refused; fi\n"
        "if (echo x > /usr/callisto-e2e) 2>/dev/null; then echo usr:written; else echo usr:refused; fi\n"
        "echo uid:$(id -u)\n")
    with context() as ctx:
        ex = run_ok(ctx, script, language="bash", timeout=30)
        lines = ex["stdout"].split()
        check_eq(lines[:5], ["curl:failed", "tcp:failed", "gateway:failed", "etc:refused",
                             "usr:refused"], "no network, read-only system")
        check(lines[5].startswith("uid:") and lines[5] != "uid:0", "not root", lines)
        ex = run(ctx, "echo x > /etc/passwd", language="bash")
        check_eq((ex["status"], ex["error"]["name"]), ("error", "ShellError"), "write to /etc")
        check(any("/etc/passwd" in line for line in ex["error"]["traceback"]),
              "the reason is in the stderr tail", ex["error"]["traceback"])


# --------------------------------------------------------------------------
# Refusals and one-shot runs

@callisto_only
def test_a_language_the_context_does_not_run_is_refused_and_nothing_runs():
    with context() as ctx:
        run_ok(ctx, "count = 0")
        before = len(executions_of(ctx))
        r = post_execution(ctx, "count += 1", language="r")
        check_eq(r.status, 400, "r on a Python context")
        msg = r.json()["message"]
        check("does not run r" in msg and "python, bash, sql" in msg,
              "the message names what it runs", msg)
        for bad in ("cobol", "", 3, ["sql"], "python3", "sql "):
            r = post_execution(ctx, "count += 1", language=bad)
            check_eq(r.status, 400, f"language {bad!r}")
            check(r.json().get("message"), "a message", r.body)
        r = post_execution(ctx, "count += 1", language=None)
        check_eq(r.status, 200, "language null is the kernel's own")
        check_eq(len(executions_of(ctx)), before + 1, "only the null one ran")
        ex = run_ok(ctx, "count", language="PYTHON")
        check_eq((ex["language"], ex["results"][0]["data"]["text/plain"]), ("python", "1"),
                 "the refused ones never ran; case-insensitive")
        summaries = {e["id"]: e for e in executions_of(ctx)}  # listed in no documented order
        check_eq(summaries[ex["id"]].get("language"), "python", "the summary names it too")
        check(all("language" not in e for i, e in summaries.items() if i != ex["id"]),
              "and only where the request named one", summaries)


@callisto_only
def test_one_shot_runs_pick_the_kernel_of_their_language():
    r = check_documented("POST", X, api("POST", X, {"language": "sql", "kernel": "ir",
                                                    "code": "SELECT 1"}))
    check_eq(r.status, 400, "sql on ir")
    check_eq(r.json()["message"],
             "the kernel 'ir' does not run sql; GET /v1/languages lists which kernel does",
             "says why")
    for body, message in (
            ({"language": "cobol", "code": "1"},
             "'language' must be one of 'python', 'r', 'bash' or 'sql'"),
            ({"language": "r", "kernel": "python3", "code": "1"},
             "the kernel 'python3' does not run r; GET /v1/languages lists which kernel does")):
        r = check_documented("POST", X, api("POST", X, body))
        check_eq(r.status, 400, f"one-shot {body}")
        check_eq(r.json()["message"], message, f"why one-shot {body} is refused")
    r = check_documented("POST", X, api("POST", X, {"language": "sql", "code":
                                                    "SELECT 6 * 7 AS answer"},
                                        timeout=LADDER_TIMEOUT))
    check_eq(r.status, 200, "one-shot sql: " + repr(r.body[:300]))
    ex = r.json()
    check_eq((ex["status"], ex["language"]), ("ok", "sql"), "status and language")
    check_eq(tables(ex), [{"columns": ["answer"], "rows": [[42]], "row_count": 1}], "the table")
    r = check_documented("POST", X, api("POST", X, {"language": "bash", "code": "echo $((6 * 7))",
                                                    "stream": True}, timeout=LADDER_TIMEOUT))
    end = json.loads(r.body.decode().splitlines()[-1])
    check_eq((end["type"], end["execution"]["stdout"]), ("end", "42\n"), "one-shot bash streamed")
    r = check_documented("POST", X, api("POST", X, {"language": "r", "code": "cat(6 * 7)"},
                                        timeout=LADDER_TIMEOUT))
    check_eq(r.status, 200, "one-shot r: " + repr(r.body[:300]))
    check_eq((r.json()["status"], r.json()["stdout"]), ("ok", "42"), "one-shot r ran in ir")


# --------------------------------------------------------------------------
# The events WebSocket

def events_ws(ctx):
    url = urllib.parse.urlsplit(BASE_URL)
    return websocket.create_connection(f"ws://{url.netloc}{C}/{ctx['id']}/events",
                                       header=[f"Authorization: token {TOKEN}"],
                                       timeout=HTTP_TIMEOUT)


def receive(ws):
    opcode, data = ws.recv_data()
    check_eq(opcode, websocket.ABNF.OPCODE_TEXT, "a JSON text message")
    message = json.loads(data)
    check_schema(message, "EventsServerMessage", "events message")
    return message


@callisto_only
def test_events_websocket_runs_bash_and_sql():
    with context() as ctx:
        put_file(ctx, "t.csv", b"a,b\n1,2\n3,4\n")
        ws = events_ws(ctx)
        try:
            ws.send(json.dumps({"type": "execute", "request_id": "sh-1", "code": "echo hi",
                                "language": "bash"}))
            queued = receive(ws)
            check_eq((queued["type"], queued["request_id"]), ("queued", "sh-1"), "queued")
            eid = queued["execution_id"]
            events = []
            while not events or events[-1]["type"] != "end":
                events.append(receive(ws))
                check_eq(events[-1].get("execution_id"), eid, "events of that execution")
            check_eq([e["type"] for e in events], ["start", "stdout", "end"], "events")
            check_eq(events[1]["text"], "hi\n", "stdout")
            end = events[-1]["execution"]
            check_eq((end["status"], end["language"]), ("ok", "bash"), "the end")

            ws.send(json.dumps({"type": "execute", "request_id": "r-1", "code": "1",
                                "language": "r"}))
            refused = receive(ws)
            check_eq((refused["type"], refused.get("request_id")), ("error", "r-1"), "refused")
            check("does not run r" in refused["message"], "says why", refused)

            ws.send(json.dumps({"type": "execute", "code": "SELECT SUM(b) AS s FROM t",
                                "language": "SQL"}))
            eid = receive(ws)["execution_id"]
            events = []
            while not events or events[-1]["type"] != "end":
                events.append(receive(ws))
            result = [e for e in events if e["type"] == "result"]
            check_eq(len(result), 1, "one result event")
            check_eq(result[0]["data"]["application/json"]["rows"], [[6]], "the sum")
            check_eq(events[-1]["execution"]["language"], "sql", "language")
        finally:
            ws.close()


# --------------------------------------------------------------------------
# MCP

@callisto_only
def test_mcp_run_code_in_sql_bash_and_r():
    s = Session(TOKEN)
    try:
        text, err = s.tool("upload_file", path="sales.csv", content=SALES.decode())
        check(not err, "upload", text)
        text, err = s.tool("run_code", language="sql",
                           code="SELECT city, SUM(amount) AS total FROM sales GROUP BY city "
                                "ORDER BY total DESC LIMIT 2")
        check(not err, "sql ran", text)
        lines = text.splitlines()
        check("status: ok" in lines[0], "status", text)
        check(any(line.split() == ["Lima", "|", "300.0"] for line in lines)
              and any(line.split() == ["Oslo", "|", "150.0"] for line in lines)
              and "(2 rows)" in text, "the table reaches the model", text)
        text, err = s.tool("run_code", language="bash", code="wc -l < sales.csv; echo oops >&2")
        check(not err and "11" in text.split() and "oops" in text, "bash ran in the same files",
              text)
        text, err = s.tool("run_code", language="bash", code="exit 4")
        check(err and "ShellError" in text and "status 4" in text, "a failing script is a tool error",
              text)
        text, err = s.tool("run_code", language="sql", code="SELEC 1")
        check(err and "SQLError" in text and "(line 1, column 1)" in text, "a SQL error", text)

        text, err = s.tool("upload_file", path="r-data.csv", content="x\n1\n2\n39\n", language="r")
        check(not err, "upload for R", text)
        text, err = s.tool("run_code", language="r",
                           code="d <- read.csv('r-data.csv'); cat(sum(d$x), file.exists('sales.csv'))")
        check(not err and "42 FALSE" in text, "R reads its own upload, not Python's files", text)
        text, err = s.tool("list_files", language="R")
        check(not err and "r-data.csv" in text and "sales.csv" not in text, "R's files", text)
        text, err = s.tool("list_files")
        check(not err and "sales.csv" in text and "r-data.csv" not in text, "Python's files", text)
        text, err = s.tool("read_file", path="r-data.csv", language="r")
        check(not err and text == "x\n1\n2\n39\n", "read_file from R's directory", text)
        text, err = s.tool("run_code", code="kept <- 'r-state'", language="r")
        check(not err, "R assignment", text)
        text, err = s.tool("run_code", code="kept = 'py-state'")
        check(not err, "Python assignment", text)
        text, err = s.tool("restart_context", language="r")
        check(not err and "restarted" in text, "restart R", text)
        text, err = s.tool("run_code", code="cat(exists('kept'))", language="r")
        check(not err and "FALSE" in text, "R's state is gone after its restart", text)
        text, err = s.tool("run_code", code="print(kept)")
        check(not err and "py-state" in text, "Python's kernel was not restarted", text)

        for bad in ("cobol", 5):
            r = s.post({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
                        "params": {"name": "run_code", "arguments": {"code": "1", "language": bad}}})
            check_eq(r.status, 200, "a JSON-RPC answer")
            body = r.json()
            check("error" in body and body["error"]["code"] == -32602,
                  f"language {bad!r} is invalid params (docs/agents.md)", body)
            check('"language"' in body["error"]["message"], "names the argument", body)
        r = s.post({"jsonrpc": "2.0", "id": 901, "method": "tools/call",
                    "params": {"name": "list_files", "arguments": {"language": "klingon"}}})
        check_eq(r.json().get("error", {}).get("code"), -32602, "list_files too")
    finally:
        check_eq(s.end().status, 204, "end the session")


if __name__ == "__main__":
    sys.exit(run_tests())
