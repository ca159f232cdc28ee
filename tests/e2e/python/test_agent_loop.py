"""End-to-end test of the agent loop in examples/agent_loop.py (the one docs/agents.md
shows) against a running Callisto, with a scripted stand-in for the model: it writes buggy
code, must find the traceback in the tool result, writes the fix (which relies on the
state the failed call left), and answers. Every step checks what the model was shown, so
a tool result without the traceback, the output or the chart fails the test.

Standard library only. Run against a server (CALLISTO_URL, CALLISTO_TOKEN)."""

import base64
import os
import re
import sys

from e2e_client import BASE_URL, TOKEN, api, callisto_only, check, check_eq, run_tests

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import agent_loop  # noqa: E402


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
    return agent_loop.Callisto(BASE_URL, TOKEN)


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
