#!/usr/bin/env python3
"""A minimal agent loop on Callisto's /v1 API: a model gets one tool, run_code; each call
runs in a context (a Jupyter kernel plus a working directory) that keeps its state for
the whole conversation; the tool result carries stdout, stderr, results, charts and the
full traceback, so the model can see its mistake and fix it.

Standard library only (http.client). The model is any callable
    model(messages, tools) -> assistant message
in the shape of Anthropic's Messages API ({"role": "assistant", "content": [blocks]}),
where a block is {"type": "text", "text"} or {"type": "tool_use", "id", "name", "input"}.
anthropic_model() below is one; tests/e2e/python/test_agent_loop.py passes a scripted one.

    CALLISTO_URL=http://127.0.0.1:8888 CALLISTO_TOKEN=T ANTHROPIC_API_KEY=K \\
        python3 examples/agent_loop.py "What is the 20th Fibonacci number? Compute it."
"""

import http.client
import json
import os
import sys
import urllib.parse

# The tool, as a model sees it. Anthropic's "input_schema" is OpenAI's "parameters":
# OPENAI_TOOLS below is the same definition in the Chat Completions shape.
RUN_CODE_TOOL = {
    "name": "run_code",
    "description": (
        "Run Python code, a bash script or an SQL query in a persistent Jupyter kernel. "
        "Variables, imports and files persist between calls. Returns stdout, stderr, the "
        "value of the last expression, charts as images, and on an exception the full "
        "traceback. numpy, pandas and matplotlib are installed; there is no network access."),
    "input_schema": {
        "type": "object",
        "properties": {
            "code": {"type": "string",
                     "description": "The code to run, in language (Python by default)."},
            "language": {
                "type": "string", "enum": ["python", "bash", "sql"],
                "description": "python (the default); bash: code is a shell script run in "
                               "the same working directory; sql: a SQLite query where each "
                               "CSV or JSON-lines file there is a table (sales.csv is sales)."},
            "timeout_seconds": {
                "type": "number", "exclusiveMinimum": 0, "maximum": 3600,
                "description": "Time limit; the code is interrupted when it is reached."},
        },
        "required": ["code"],
        "additionalProperties": False,
    },
}
OPENAI_TOOLS = [{"type": "function",
                 "function": {"name": RUN_CODE_TOOL["name"],
                              "description": RUN_CODE_TOOL["description"],
                              "parameters": RUN_CODE_TOOL["input_schema"]}}]


class CallistoError(Exception):
    pass


class Callisto:
    """The three REST calls behind the tool: create a context, run code in it, delete it."""

    def __init__(self, url, token, timeout=600):
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.token, self.timeout = token, timeout

    def request(self, method, path, body=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            headers = {"Authorization": f"token {self.token}"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            text = resp.read().decode()
        finally:
            conn.close()
        if resp.status >= 400:
            raise CallistoError(f"{method} {path}: {resp.status} {text}")
        return json.loads(text) if text else None

    def create_context(self):
        return self.request("POST", "/v1/contexts", {})["id"]

    def run(self, context_id, code, timeout_seconds=None, language=None):
        body = {"code": code}
        if timeout_seconds is not None:
            body["timeout"] = timeout_seconds
        if language is not None:
            body["language"] = language
        return self.request("POST", f"/v1/contexts/{context_id}/executions", body)

    def delete_context(self, context_id):
        self.request("DELETE", f"/v1/contexts/{context_id}")


def tool_result_content(execution):
    """An execution as tool_result content: one text block, plus an image block per PNG."""
    parts = [f"status: {execution['status']}"]
    if execution.get("stdout"):
        parts.append("stdout:\n" + execution["stdout"])
    if execution.get("stderr"):
        parts.append("stderr:\n" + execution["stderr"])
    images = []
    for result in execution.get("results", []):
        data = result["data"]
        if isinstance(data.get("image/png"), str):
            images.append({"type": "image", "source": {
                "type": "base64", "media_type": "image/png", "data": data["image/png"]}})
        elif "text/plain" in data:
            parts.append("result:\n" + str(data["text/plain"]))
    error = execution.get("error")
    if error:
        parts.append("error:\n" + ("\n".join(error["traceback"])
                                   or f"{error['name']}: {error['value']}"))
    return [{"type": "text", "text": "\n".join(parts)}] + images


def agent_loop(model, callisto, task, max_turns=10):
    """Runs the conversation until the model answers without a tool call. Returns the
    final text and the transcript; the context is deleted in every case."""
    context_id = callisto.create_context()
    messages = [{"role": "user", "content": task}]
    try:
        for _ in range(max_turns):
            reply = model(messages, [RUN_CODE_TOOL])
            messages.append({"role": "assistant", "content": reply["content"]})
            calls = [b for b in reply["content"] if b["type"] == "tool_use"]
            if not calls:
                text = "".join(b["text"] for b in reply["content"] if b["type"] == "text")
                return text, messages
            results = []
            for call in calls:
                if call["name"] != "run_code":
                    content, failed = f"unknown tool {call['name']!r}", True
                else:
                    execution = callisto.run(context_id, call["input"]["code"],
                                             call["input"].get("timeout_seconds"),
                                             call["input"].get("language"))
                    content = tool_result_content(execution)
                    failed = execution["status"] != "ok"
                results.append({"type": "tool_result", "tool_use_id": call["id"],
                                "content": content, "is_error": failed})
            messages.append({"role": "user", "content": results})
        raise RuntimeError(f"no final answer after {max_turns} turns")
    finally:
        callisto.delete_context(context_id)


def anthropic_model(api_key, model_name="claude-sonnet-4-5", max_tokens=4096):
    """A model callable on Anthropic's Messages API (POST /v1/messages)."""
    def call(messages, tools):
        conn = http.client.HTTPSConnection("api.anthropic.com", timeout=300)
        try:
            conn.request("POST", "/v1/messages", body=json.dumps({
                "model": model_name, "max_tokens": max_tokens,
                "tools": tools, "messages": messages}).encode(),
                headers={"x-api-key": api_key, "anthropic-version": "2023-06-01",
                         "content-type": "application/json"})
            resp = conn.getresponse()
            body = json.loads(resp.read())
        finally:
            conn.close()
        if resp.status != 200:
            raise RuntimeError(f"model API: {resp.status} {body}")
        return {"role": "assistant", "content": body["content"]}
    return call


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    callisto = Callisto(os.environ.get("CALLISTO_URL", "http://127.0.0.1:8888"),
                        os.environ["CALLISTO_TOKEN"])
    model = anthropic_model(os.environ["ANTHROPIC_API_KEY"])
    answer, _ = agent_loop(model, callisto, sys.argv[1])
    print(answer)


if __name__ == "__main__":
    main()
