"""End-to-end test of the agent loop in examples/agent_loop.py (the one docs/agents.md
shows) against a running Callisto, with a scripted stand-in for the model: it writes buggy
code, must find the traceback in the tool result, writes the fix (which relies on the
state the failed call left), and answers. Every step checks what the model was shown, so
a tool result without the traceback, the output or the chart fails the test. The example's
own scripted model, its OpenAI-shaped loop, its real API clients (against a stand-in API
on loopback) and its command line are run too; -k https, against a TLS server with
CALLISTO_CA, runs it over HTTPS.

Standard library only. Run against a server (CALLISTO_URL, CALLISTO_TOKEN)."""

import base64
import http.server
import json
import os
import re
import subprocess
import sys
import threading

from e2e_client import BASE_URL, TOKEN, SkipTest, api, callisto_only, check, check_eq, run_tests

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EXAMPLE = os.path.join(ROOT, "examples", "agent_loop.py")
sys.path.insert(0, os.path.join(ROOT, "examples"))
import agent_loop  # noqa: E402

CA = os.environ.get("CALLISTO_CA") or None  # with an https:// CALLISTO_URL


class ScriptedModel:
    """Plays the model: each step reads the conversation so far and returns the next
    assistant message. Raises AssertionError when the conversation is not what a real
    model would need to go on."""

    def __init__(self, steps):
        self.steps = list(steps)
        self.calls = 0

    def __call__(self, messages, tools):
        check([t["name"] for t in tools] == ["run_code"], "the model is offered run_code", tools)
        check("input_schema" in tools[0] and tools[0]["input_schema"]["required"] == ["code"],
              "with its schema", tools[0])
        check_eq(tools[0]["input_schema"]["properties"]["language"]["enum"],
                 ["python", "bash", "sql"], "the languages it may name")
        check(self.steps, "the loop asked the model once more than scripted")
        self.calls += 1
        return self.steps.pop(0)(messages)


def tool_use(call_id, code, language=None):
    tool_input = {"code": code}
    if language is not None:
        tool_input["language"] = language
    return {"role": "assistant", "content": [
        {"type": "text", "text": "Let me compute that."},
        {"type": "tool_use", "id": call_id, "name": "run_code", "input": tool_input}]}


def final(text):
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def last_tool_result(messages, call_id):
    """The tool_result the loop sent back for call_id, as (text, images, is_error)."""
    last = messages[-1]
    check(last["role"] == "user" and isinstance(last["content"], list), "a tool result turn", last)
    results = [b for b in last["content"] if b.get("tool_use_id") == call_id]
    check(len(results) == 1 and results[0]["type"] == "tool_result",
          "one tool_result for " + call_id, last["content"])
    content = results[0]["content"]
    text = "\n".join(b["text"] for b in content if b["type"] == "text")
    images = [b for b in content if b["type"] == "image"]
    return text, images, results[0]["is_error"]


def contexts():
    r = api("GET", "/v1/contexts")
    check_eq(r.status, 200, "list contexts")
    return {c["id"] for c in r.json()}


def callisto():
    return agent_loop.Callisto(BASE_URL, TOKEN, ca_file=CA)


# --------------------------------------------------------------------------

@callisto_only
def test_the_model_fixes_its_bug_from_the_traceback():
    before = contexts()
    seen = {}

    def buggy(messages):
        check_eq(messages[0], {"role": "user", "content": "What is the mean of 3, 5 and 10?"},
                 "the task")
        seen["context"] = contexts() - before
        check(len(seen["context"]) == 1, "the loop made one context", seen)
        return tool_use("call-1", "values = [3, 5, 10]\n"
                                  "def mean(xs):\n    return sum(xs) / len(valuez)\n"
                                  "print(mean(values))")

    def fix(messages):
        text, _, is_error = last_tool_result(messages, "call-1")
        check(is_error, "the failed run is flagged is_error", text)
        check("status: error" in text, "status", text)
        check("NameError" in text and "name 'valuez' is not defined" in text,
              "the exception", text)
        check("Traceback" in text and "return sum(xs) / len(valuez)" in text,
              "the traceback shows the failing line", text)
        check("\x1b[" not in text, "no terminal colour codes", text)
        # `values` was assigned before the error: the fix relies on the kept state.
        return tool_use("call-2", "def mean(xs):\n    return sum(xs) / len(xs)\n"
                                  "print(mean(values))")

    def answer(messages):
        text, _, is_error = last_tool_result(messages, "call-2")
        check(not is_error, "the fixed run is not an error", text)
        check("stdout:\n6.0" in text, "the fixed run printed 6.0", text)
        check("error" not in text.split("status: ok", 1)[1], "no error section", text)
        return final("The mean is 6.0.")

    model = ScriptedModel([buggy, fix, answer])
    text, messages = agent_loop.agent_loop(model, callisto(), "What is the mean of 3, 5 and 10?")
    check_eq(text, "The mean is 6.0.", "final answer")
    check_eq(model.calls, 3, "model turns")
    check_eq([m["role"] for m in messages], ["user", "assistant", "user", "assistant", "user",
                                              "assistant"], "transcript")
    check(seen["context"].isdisjoint(contexts()), "the context is deleted afterwards")


@callisto_only
def test_a_chart_reaches_the_model_as_an_image_block():
    def plot(messages):
        return tool_use("plot", "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()")

    def look(messages):
        text, images, is_error = last_tool_result(messages, "plot")
        check(not is_error and "status: ok" in text, "plot ran", text)
        check(len(images) == 1, "one image block", images)
        source = images[0]["source"]
        check_eq((source["type"], source["media_type"]), ("base64", "image/png"), "image source")
        check(base64.b64decode(source["data"])[:4] == b"\x89PNG", "a PNG", source["data"][:20])
        return final("A rising curve.")

    text, _ = agent_loop.agent_loop(ScriptedModel([plot, look]), callisto(), "Plot squares.")
    check_eq(text, "A rising curve.", "final answer")


def upload(context_id, path, data):
    """What a user attaching a file does: PUT it into the conversation's context."""
    r = api("PUT", f"/v1/contexts/{context_id}/files/{path}", data)
    check_eq(r.status, 201, f"upload {path}: {r.body[:200]!r}")


SALES_CSV = (b"city,amount\nOslo,120\nRome,80\nCairo,40\nOslo,30\nLima,90\n"
             b"Rome,95\nCairo,20\n")


@callisto_only
def test_the_model_answers_from_an_sql_query_over_an_uploaded_csv():
    before = contexts()

    def query(messages):
        new = contexts() - before
        check(len(new) == 1, "the loop made one context", new)
        upload(next(iter(new)), "sales.csv", SALES_CSV)
        return tool_use("sql-1", "SELECT city, SUM(amount) AS total FROM sales\n"
                                 "GROUP BY city ORDER BY total DESC LIMIT 1", language="sql")

    def answer(messages):
        text, images, is_error = last_tool_result(messages, "sql-1")
        check(not is_error and "status: ok" in text, "the query ran", text)
        check_eq(images, [], "no image blocks")
        table = text.split("result:\n", 1)[1].splitlines()
        check_eq(table[0].split(), ["city", "|", "total"], "the table's header reached the model")
        city, total = [cell.strip() for cell in table[2].split("|")]
        check_eq(table[-1], "(1 row)", "the row count")
        return final(f"{city} sold the most: {total}.")

    text, _ = agent_loop.agent_loop(ScriptedModel([query, answer]), callisto(),
                                    "Which city sold the most? The data is in sales.csv.")
    check_eq(text, "Rome sold the most: 175.", "the answer read from the query's result")
    check_eq(contexts(), before, "the context is deleted afterwards")


@callisto_only
def test_the_model_counts_lines_with_a_shell_command_and_fixes_a_wrong_name():
    before = contexts()

    def wrong_name(messages):
        (context_id,) = contexts() - before
        upload(context_id, "notes.txt", "".join(f"note {i}\n" for i in range(37)).encode())
        return tool_use("sh-1", "wc -l < notes.text", language="bash")

    def fix(messages):
        text, _, is_error = last_tool_result(messages, "sh-1")
        check(is_error and "status: error" in text, "the failed script is flagged", text)
        check("ShellError: the script exited with status 1" in text, "the exit status", text)
        check("notes.text: No such file or directory" in text,
              "the stderr tail tells the model why", text)
        return tool_use("sh-2", "ls; wc -l < notes.txt", language="bash")

    def answer(messages):
        text, _, is_error = last_tool_result(messages, "sh-2")
        check(not is_error and "status: ok" in text, "the fixed script ran", text)
        out = text.split("stdout:\n", 1)[1].split()
        check("notes.txt" in out, "ls shows the upload", out)
        return final(f"notes.txt has {out[-1]} lines.")

    model = ScriptedModel([wrong_name, fix, answer])
    text, _ = agent_loop.agent_loop(model, callisto(), "How many lines does notes.txt have?")
    check_eq(text, "notes.txt has 37 lines.", "the answer read from wc's output")
    check_eq(model.calls, 3, "model turns")
    check_eq(contexts(), before, "the context is deleted afterwards")


@callisto_only
def test_a_model_that_never_answers_is_stopped_and_its_context_deleted():
    before = contexts()
    forever = ScriptedModel([lambda m, i=i: tool_use(f"c{i}", "1 + 1") for i in range(3)])
    try:
        agent_loop.agent_loop(forever, callisto(), "Loop.", max_turns=2)
    except RuntimeError as e:
        check("no final answer after 2 turns" in str(e), "the reason", str(e))
    else:
        raise AssertionError("the loop did not stop")
    check_eq(forever.calls, 2, "model turns")
    check_eq(contexts(), before, "no context left behind")


def check_the_demo_transcript(results, what):
    """The texts the scripted demo's four calls returned: the CSV written, the typo's
    traceback, the fix's totals (from the state the failed call left), the chart."""
    check_eq(len(results), 4, what + ": four tool results")
    check(results[0].startswith("status: ok") and "6 sales.csv" in results[0], what, results[0])
    check(results[1].startswith("status: error"), what + ": the typo fails", results[1])
    check("KeyError: 'Column not found: revenu'" in results[1] and "Traceback" in results[1],
          what + ": the traceback reaches the model", results[1])
    check(results[2].startswith("status: ok") and re.search(r"North\s+165", results[2]),
          what + ": the fix ran on the kept `sales`", results[2])
    check(results[3].startswith("status: ok")
          and "charts: 1 PNG image(s), attached" in results[3], what + ": the chart", results[3])


@callisto_only
def test_the_example_scripted_model_runs_the_demo_offline():
    before = contexts()
    text, messages = agent_loop.agent_loop(agent_loop.scripted_model(), callisto(),
                                           agent_loop.DEMO_TASK)
    results = [b for m in messages[1:] if m["role"] == "user" for b in m["content"]]
    check_the_demo_transcript([b["content"][0]["text"] for b in results], "anthropic shape")
    check_eq([b["is_error"] for b in results], [False, True, False, False], "is_error")
    check_eq([b["type"] for b in results[3]["content"]], ["text", "image"], "the chart's block")
    check(base64.b64decode(results[3]["content"][1]["source"]["data"])[:4] == b"\x89PNG",
          "a PNG")
    check(text.startswith("A scripted run (no model was asked). What its 4 calls returned:"),
          "the final answer", text)
    check("--- call 3\nstatus: ok\nstdout:\nregion" in text, "it quotes the results", text)
    check_eq(contexts(), before, "the context is deleted afterwards")


@callisto_only
def test_the_openai_shaped_loop_with_the_scripted_model():
    before = contexts()
    text, messages = agent_loop.openai_agent_loop(agent_loop.scripted_model(openai=True),
                                                  callisto(), agent_loop.DEMO_TASK)
    calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    check_eq(len(calls), 4, "four tool calls")
    check_eq(json.loads(calls[1]["function"]["arguments"]), agent_loop.DEMO_SCRIPT[1],
             "arguments travel as a JSON string")
    tool_messages = [m for m in messages if m["role"] == "tool"]
    check_eq([m["tool_call_id"] for m in tool_messages], [c["id"] for c in calls],
             "each call answered by a tool message naming it")
    check(all(isinstance(m["content"], str) for m in tool_messages), "tool messages are text")
    check_the_demo_transcript([m["content"] for m in tool_messages], "openai shape")
    # Chat Completions takes images in user messages only: the chart follows the tool message.
    after_chart = messages[messages.index(tool_messages[3]) + 1]
    check_eq(after_chart["role"], "user", "the chart's message")
    url = after_chart["content"][1]["image_url"]["url"]
    check(url.startswith("data:image/png;base64,")
          and base64.b64decode(url.split(",", 1)[1])[:4] == b"\x89PNG",
          "a PNG data URL", url[:40])
    check_eq(messages[-1]["role"], "assistant", "the answer is last")
    check(text.startswith("A scripted run") and "KeyError" in text, "the final answer", text)
    check_eq(contexts(), before, "the context is deleted afterwards")


@callisto_only
def test_the_openai_loop_returns_bad_arguments_to_the_model():
    def bad_then_answer(messages, tools):
        if len(messages) == 1:
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "run_code", "arguments": "{not json"}},
                {"id": "c2", "type": "function",
                 "function": {"name": "run_code", "arguments": json.dumps({"cod": "1"})}},
                {"id": "c3", "type": "function",
                 "function": {"name": "rm_rf", "arguments": json.dumps({"code": "1"})}}]}
        return {"role": "assistant", "content": "gave up"}

    text, messages = agent_loop.openai_agent_loop(bad_then_answer, callisto(), "x")
    check_eq(text, "gave up", "the loop went on to the answer")
    replies = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    check("the arguments are not JSON" in replies["c1"], "invalid JSON is told", replies)
    check("not a run_code call with code" in replies["c2"], "a missing code is told", replies)
    check("not a run_code call with code: rm_rf" in replies["c3"], "an unknown tool", replies)


@callisto_only
def test_the_model_sees_whether_a_timeout_kept_its_state():
    """issue 33 item 7: after a timeout the model must know whether its variables survived
    (an interrupt kept them; a restart, when the code ignores the interrupt, did not)."""
    def step(code, timeout=None):
        tool_input = {"code": code}
        if timeout is not None:
            tool_input["timeout_seconds"] = timeout
        return {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{step.n}", "name": "run_code", "input": tool_input}]}
    step.n = 0
    seen = []

    def model(messages, tools):
        if len(messages) > 1:
            seen.append(messages[-1]["content"][0]["content"][0]["text"])
        script = [lambda: step("kept = 41\nimport time\ntime.sleep(60)", 1),
                  lambda: step("kept + 1"),
                  lambda: step("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)"
                               "\ntime.sleep(60)", 1),
                  lambda: step("'kept' in dir()")]
        if step.n < len(script):
            step.n += 1
            return script[step.n - 1]()
        return {"role": "assistant", "content": [{"type": "text", "text": "done"}]}

    agent_loop.agent_loop(model, callisto(), "timeouts")
    check(seen[0].startswith("status: timeout\nstate_preserved: true (interrupted: variables "
                             "and imports are kept)"), "an interrupt kept the state", seen[0])
    check("KeyboardInterrupt" in seen[0], "the interrupt's traceback", seen[0])
    check("result:\n42" in seen[1], "and it was kept", seen[1])
    check(seen[2].startswith("status: timeout\nstate_preserved: false (the kernel was "
                             "restarted: variables and imports are gone, files are kept)"),
          "a restart lost it", seen[2])
    check("result:\nFalse" in seen[3], "and it was lost", seen[3])
    check("state_preserved" not in seen[1] + seen[3], "no state line after a plain run")


class StandInAPI:
    """A model API on loopback for the example's real clients: answers POSTs with the
    scripted bodies in turn and keeps each request (path, headers in lower case, JSON
    body)."""

    def __init__(self, answers):
        self.answers, self.requests = list(answers), []
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stand_in.requests.append(
                    (self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                status, answer = stand_in.answers.pop(0)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def openai_answer(message):
    return 200, {"id": "x", "object": "chat.completion",
                 "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


@callisto_only
def test_the_real_openai_client_against_a_stand_in_api():
    api_ = StandInAPI([
        openai_answer({"role": "assistant", "content": None, "refusal": None, "tool_calls": [
            {"id": "call_a", "type": "function",
             "function": {"name": "run_code", "arguments": json.dumps({"code": "6 * 7"})}}]}),
        openai_answer({"role": "assistant", "content": "It is 42.", "refusal": None}),
        (401, {"error": {"message": "Incorrect API key provided",
                         "type": "invalid_request_error"}}),
    ])
    try:
        model = agent_loop.openai_model("sk-test", "gpt-test", api_.url + "/v1")
        text, _ = agent_loop.openai_agent_loop(model, callisto(), "What is 6 * 7?")
        check_eq(text, "It is 42.", "the answer")
        (path, headers, first), (_, _, second) = api_.requests
        check_eq(path, "/v1/chat/completions", "the route")
        check_eq(headers["authorization"], "Bearer sk-test", "the key")
        check_eq((first["model"], first["tools"]), ("gpt-test", agent_loop.OPENAI_TOOLS),
                 "model and tools")
        check_eq(first["messages"], [{"role": "user", "content": "What is 6 * 7?"}], "the task")
        check_eq(second["messages"][1]["tool_calls"][0]["id"], "call_a", "the call sent back")
        check("refusal" not in second["messages"][1], "only the fields the API takes back",
              second["messages"][1])
        check_eq(second["messages"][2]["role"], "tool", "its result as a tool message")
        check_eq(second["messages"][2]["tool_call_id"], "call_a", "naming the call")
        check("status: ok" in second["messages"][2]["content"]
              and "result:\n42" in second["messages"][2]["content"], "the result",
              second["messages"][2])
        try:
            model([{"role": "user", "content": "x"}], agent_loop.OPENAI_TOOLS)
        except RuntimeError as e:
            check("model API: 401" in str(e) and "Incorrect API key" in str(e),
                  "the API's own error", str(e))
        else:
            raise AssertionError("a 401 was taken for an answer")
    finally:
        api_.close()


@callisto_only
def test_the_real_anthropic_client_against_a_stand_in_api():
    api_ = StandInAPI([
        (200, {"type": "message", "role": "assistant", "stop_reason": "tool_use", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "run_code",
             "input": {"code": "print(6 * 7)"}}]}),
        (200, {"type": "message", "role": "assistant", "stop_reason": "end_turn",
               "content": [{"type": "text", "text": "42."}]}),
    ])
    try:
        model = agent_loop.anthropic_model("ak-test", "claude-test", base_url=api_.url)
        text, _ = agent_loop.agent_loop(model, callisto(), "Print 6 * 7.")
        check_eq(text, "42.", "the answer")
        (path, headers, first), (_, _, second) = api_.requests
        check_eq(path, "/v1/messages", "the route")
        check_eq((headers["x-api-key"], headers["anthropic-version"]), ("ak-test", "2023-06-01"),
                 "the key and version")
        check_eq((first["model"], first["tools"]), ("claude-test", [agent_loop.RUN_CODE_TOOL]),
                 "model and tools")
        result = second["messages"][2]["content"][0]
        check_eq((result["type"], result["tool_use_id"]), ("tool_result", "toolu_1"), "result")
        check("stdout:\n42" in result["content"][0]["text"], "the output", result)
    finally:
        api_.close()


@callisto_only
def test_a_url_path_is_kept_as_a_prefix():
    """A server behind a proxy under a path: every call goes below it."""
    api_ = StandInAPI([(201, {"id": "ctx-1"})])
    try:
        check_eq(agent_loop.Callisto(api_.url + "/callisto/", "t").create_context(), "ctx-1",
                 "the id")
        path, headers, body = api_.requests[0]
        check_eq((path, headers["authorization"], body), ("/callisto/v1/contexts", "token t", {}),
                 "the request")
    finally:
        api_.close()


def run_example(*args, env=None, timeout=300):
    """examples/agent_loop.py as a user runs it: no model keys unless given."""
    base = {k: v for k, v in os.environ.items()
            if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL")}
    base.update(CALLISTO_URL=BASE_URL, CALLISTO_TOKEN=TOKEN)
    base.update(env or {})
    return subprocess.run([sys.executable, EXAMPLE, *args], capture_output=True, text=True,
                          env={k: v for k, v in base.items() if v is not None},
                          timeout=timeout)


@callisto_only
def test_the_command_line_runs_offline_and_says_what_is_missing():
    before = contexts()
    p = run_example()  # --api openai's scripted run is the test above's, through main()
    check_eq(p.returncode, 0, p.stderr)
    check(p.stdout.startswith("A scripted run (no model was asked). What its 4 calls returned:")
          and "KeyError" in p.stdout, "the demo", p.stdout)
    check_eq(contexts(), before, "no context left behind")

    for args, key in ((("--model", "claude-sonnet-4-5"), "ANTHROPIC_API_KEY"),
                      (("--api", "openai", "--model", "gpt-4.1"), "OPENAI_API_KEY")):
        p = run_example(*args, "task")
        check_eq(p.returncode, 2, f"{args} without {key}")
        check(f"{key} is not set" in p.stderr and "Without --model the scripted model runs"
              in p.stderr, "says which key and what runs without one", p.stderr)
        check("Traceback" not in p.stderr and "KeyError" not in p.stderr, "no traceback", p.stderr)
    p = run_example(env={"CALLISTO_TOKEN": None})
    check_eq(p.returncode, 2, "without a token")
    check("CALLISTO_TOKEN is not set" in p.stderr and "Traceback" not in p.stderr, p.stderr)
    p = run_example("--ca-file", "/nonexistent/ca.pem")
    check_eq(p.returncode, 2, "a CA file that is not there")
    check("--ca-file /nonexistent/ca.pem: no such file" in p.stderr, p.stderr)
    p = run_example(env={"CALLISTO_URL": "ftp://127.0.0.1:1"})
    check_eq(p.returncode, 1, "a URL that is not http(s)")
    check("not an http:// or https:// URL" in p.stderr and "Traceback" not in p.stderr, p.stderr)
    p = run_example(env={"CALLISTO_TOKEN": "wrong-token-123"})
    check_eq(p.returncode, 1, "a wrong token")
    check("POST /v1/contexts: 401" in p.stderr and "Traceback" not in p.stderr, p.stderr)

    # With a key, the real client: here an OpenAI-compatible stand-in named by OPENAI_BASE_URL.
    api_ = StandInAPI([openai_answer({"role": "assistant", "content": "Hello from the API."})])
    try:
        p = run_example("--api", "openai", "--model", "gpt-test", "Say hello.",
                        env={"OPENAI_API_KEY": "sk-cli", "OPENAI_BASE_URL": api_.url + "/v1"})
        check_eq((p.returncode, p.stdout), (0, "Hello from the API.\n"), p.stderr)
        check_eq(api_.requests[0][2]["model"], "gpt-test", "--model names the model")
    finally:
        api_.close()


@callisto_only
def test_https_with_a_ca_file_and_a_clear_refusal_without():
    if not BASE_URL.startswith("https://") or not CA:
        raise SkipTest("needs an https:// CALLISTO_URL and CALLISTO_CA")
    text, _ = agent_loop.agent_loop(agent_loop.scripted_model(), callisto(), "demo")
    check("--- call 3\nstatus: ok" in text, "the demo over HTTPS", text)
    # From the command line: a wrong token's 401 shows the TLS handshake succeeded.
    for args, env in ((("--ca-file", CA), {"CALLISTO_CA": None}), ((), {"CALLISTO_CA": CA})):
        p = run_example(*args, env={"CALLISTO_TOKEN": "wrong-token-123", **env})
        check("POST /v1/contexts: 401" in p.stderr, f"trusted through {args or env}", p.stderr)
    p = run_example(env={"CALLISTO_CA": None, "SSL_CERT_FILE": None, "SSL_CERT_DIR": None})
    check_eq(p.returncode, 1, "the system's CAs do not vouch for the test CA")
    check("certificate verify failed" in p.stderr and "--ca-file names the CA" in p.stderr
          and "Traceback" not in p.stderr, "a clear refusal", p.stderr)
    p = run_example(env={"CALLISTO_URL": BASE_URL.replace("https://", "http://", 1)})
    check_eq(p.returncode, 1, "plain HTTP to the TLS port")
    check("Traceback" not in p.stderr, "no traceback", p.stderr)


@callisto_only
def test_the_tool_definitions_are_consistent():
    tool = agent_loop.RUN_CODE_TOOL
    openai = agent_loop.OPENAI_TOOLS[0]["function"]
    check_eq(openai["parameters"], tool["input_schema"], "one schema for both styles")
    check_eq(openai["name"], tool["name"], "one name")
    for key in tool["input_schema"]["required"]:
        check(key in tool["input_schema"]["properties"], "required key is a property", key)


@callisto_only
def test_the_doc_shows_the_code_as_it_runs():
    """Every code block docs/agents.md marks as taken from examples/agent_loop.py is
    in that file verbatim, so the doc cannot drift from the tested loop."""
    with open(os.path.join(ROOT, "docs", "agents.md")) as f:
        doc = f.read()
    with open(os.path.join(ROOT, "examples", "agent_loop.py")) as f:
        source = f.read()
    blocks = re.findall(r"<!-- from examples/agent_loop.py -->\s*```python\n(.*?)```", doc, re.S)
    check(len(blocks) >= 2, "the doc quotes the loop", len(blocks))
    for block in blocks:
        check(block in source, "quoted block is in examples/agent_loop.py", block[:200])


if __name__ == "__main__":
    sys.exit(run_tests())
