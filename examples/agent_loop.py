#!/usr/bin/env python3
"""A minimal agent loop on Callisto's /v1 API: a model gets one tool, run_code; each call
runs in a context (a Jupyter kernel plus a working directory) that keeps its state for
the whole conversation; the tool result carries stdout, stderr, results, charts and the
full traceback, so the model can see its mistake and fix it.

Standard library only. A model is any callable model(messages, tools) -> assistant message,
in one of two shapes, each with its loop:
- agent_loop(): Anthropic's Messages API, {"role": "assistant", "content": [blocks]}, a
  block {"type": "text", "text"} or {"type": "tool_use", "id", "name", "input"};
- openai_agent_loop(): OpenAI's Chat Completions, {"role": "assistant", "content",
  "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}]}.
scripted_model() plays a model with no key and no network (the default below);
anthropic_model() and openai_model() call the real APIs.

    export CALLISTO_URL=http://127.0.0.1:8888 CALLISTO_TOKEN=T
    python3 examples/agent_loop.py                    # the scripted model, offline
    python3 examples/agent_loop.py --api openai       # the same, in OpenAI's shapes
    ANTHROPIC_API_KEY=K python3 examples/agent_loop.py --model claude-sonnet-4-5 "TASK"
    OPENAI_API_KEY=K python3 examples/agent_loop.py --api openai --model gpt-4.1 "TASK"
    CALLISTO_URL=https://callisto.example:8888 ... --ca-file ca.pem   # else the system's CAs
"""

import argparse
import http.client
import json
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request

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
    """The three REST calls behind the tool: create a context, run code in it, delete it.
    https:// URLs are verified against ca_file, or the system's CAs when it is None."""

    def __init__(self, url, token, timeout=600, ca_file=None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http:// or https:// URL: {url!r}")
        self.tls = ssl.create_default_context(cafile=ca_file) if parts.scheme == "https" else None
        self.host, self.port = parts.hostname, parts.port or (443 if self.tls else 80)
        self.prefix = parts.path.rstrip("/")  # a server behind a proxy, under a path
        self.token, self.timeout = token, timeout

    def request(self, method, path, body=None):
        if self.tls:
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout,
                                               context=self.tls)
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            headers = {"Authorization": f"token {self.token}"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            conn.request(method, self.prefix + path, body=data, headers=headers)
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


def execution_report(execution):
    """What the model is shown of an execution: a text, and its charts as base64 PNGs."""
    parts = [f"status: {execution['status']}"]
    if "state_preserved" in execution:  # after a timeout or an interrupt
        parts.append("state_preserved: true (interrupted: variables and imports are kept)"
                     if execution["state_preserved"] else
                     "state_preserved: false (the kernel was restarted: variables and "
                     "imports are gone, files are kept)")
    if execution.get("stdout"):
        parts.append("stdout:\n" + execution["stdout"])
    if execution.get("stderr"):
        parts.append("stderr:\n" + execution["stderr"])
    pngs = []
    for result in execution.get("results", []):
        data = result["data"]
        if isinstance(data.get("image/png"), str):
            pngs.append(data["image/png"])
        elif "text/plain" in data:
            parts.append("result:\n" + str(data["text/plain"]))
    if pngs:
        parts.append(f"charts: {len(pngs)} PNG image(s), attached")
    error = execution.get("error")
    if error:
        parts.append("error:\n" + ("\n".join(error["traceback"])
                                   or f"{error['name']}: {error['value']}"))
    return "\n".join(parts), pngs


def run_tool_call(callisto, context_id, name, tool_input):
    """Carries out one call of the model's: (text, PNGs, whether it failed)."""
    if name != "run_code" or not isinstance(tool_input, dict) or "code" not in tool_input:
        return f"not a run_code call with code: {name} {tool_input}", [], True
    execution = callisto.run(context_id, tool_input["code"], tool_input.get("timeout_seconds"),
                             tool_input.get("language"))
    text, pngs = execution_report(execution)
    return text, pngs, execution["status"] != "ok"


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
                text, pngs, failed = run_tool_call(callisto, context_id, call["name"],
                                                   call["input"])
                images = [{"type": "image", "source": {
                    "type": "base64", "media_type": "image/png", "data": png}} for png in pngs]
                results.append({"type": "tool_result", "tool_use_id": call["id"],
                                "content": [{"type": "text", "text": text}] + images,
                                "is_error": failed})
            messages.append({"role": "user", "content": results})
        raise RuntimeError(f"no final answer after {max_turns} turns")
    finally:
        callisto.delete_context(context_id)


def openai_agent_loop(model, callisto, task, max_turns=10):
    """The same loop in Chat Completions' shapes: a call's arguments are a JSON string and
    its result a "tool" message, which holds text only, so the charts follow as a user
    message."""
    context_id = callisto.create_context()
    messages = [{"role": "user", "content": task}]
    try:
        for _ in range(max_turns):
            reply = model(messages, OPENAI_TOOLS)
            messages.append(reply)
            if not reply.get("tool_calls"):
                return reply.get("content") or "", messages
            charts = []
            for call in reply["tool_calls"]:
                try:
                    arguments = json.loads(call["function"]["arguments"])
                except json.JSONDecodeError as e:
                    text, pngs = f"the arguments are not JSON: {e}", []
                else:
                    text, pngs, _ = run_tool_call(callisto, context_id,
                                                  call["function"]["name"], arguments)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
                charts += [{"type": "image_url", "image_url": {
                    "url": "data:image/png;base64," + png}} for png in pngs]
            if charts:
                messages.append({"role": "user", "content": [
                    {"type": "text", "text": "The charts the calls above made:"}] + charts})
        raise RuntimeError(f"no final answer after {max_turns} turns")
    finally:
        callisto.delete_context(context_id)


DEMO_TASK = "Make a small sales.csv, total its revenue by region and plot it."
DEMO_SCRIPT = [  # scripted_model()'s calls: load a CSV, compute, an error, its fix, a plot
    {"language": "bash", "code": "printf 'region,revenue\\nNorth,120\\nSouth,80\\nNorth,45\\n"
                                 "East,95\\nSouth,30\\n' > sales.csv\nwc -l sales.csv"},
    {"code": "import pandas as pd\nsales = pd.read_csv('sales.csv')\n"
             "sales.groupby('region')['revenu'].sum()"},  # a typo: KeyError
    {"code": "totals = sales.groupby('region')['revenue'].sum()\nprint(totals)"},
    {"code": "import matplotlib.pyplot as plt\ntotals.plot.bar(title='Revenue by region')\n"
             "plt.show()"},
]


def scripted_model(script=DEMO_SCRIPT, openai=False):
    """A stand-in for a model, with no key and no network: turn N makes the script's Nth
    call, whatever the results said; then it answers with the results it was shown. In
    openai_agent_loop()'s shapes when openai is true."""
    def call(messages, tools):
        turn = sum(m["role"] == "assistant" for m in messages)
        if turn < len(script):
            if openai:
                return {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"call_{turn}", "type": "function", "function": {
                        "name": "run_code", "arguments": json.dumps(script[turn])}}]}
            return {"role": "assistant", "content": [
                {"type": "tool_use", "id": f"call_{turn}", "name": "run_code",
                 "input": script[turn]}]}
        if openai:
            results = [m["content"] for m in messages if m["role"] == "tool"]
        else:
            results = [b["content"][0]["text"] for m in messages[1:] if m["role"] == "user"
                       for b in m["content"]]
        text = f"A scripted run (no model was asked). What its {len(results)} calls returned:"
        for i, result in enumerate(results):
            text += f"\n\n--- call {i + 1}\n{result}"
        if openai:
            return {"role": "assistant", "content": text}
        return {"role": "assistant", "content": [{"type": "text", "text": text}]}
    return call


def post_json(url, headers, body):
    """POSTs JSON with urllib, which honours https_proxy. The answer's JSON, or a
    RuntimeError with the API's own error."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return json.load(response)
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"model API: {e.code} {e.read().decode(errors='replace')}") from None


def anthropic_model(api_key, model_name="claude-sonnet-4-5", max_tokens=4096,
                    base_url="https://api.anthropic.com"):
    """A model callable on Anthropic's Messages API (POST /v1/messages)."""
    def call(messages, tools):
        body = post_json(f"{base_url}/v1/messages",
                         {"x-api-key": api_key, "anthropic-version": "2023-06-01"},
                         {"model": model_name, "max_tokens": max_tokens, "tools": tools,
                          "messages": messages})
        return {"role": "assistant", "content": body["content"]}
    return call


def openai_model(api_key, model_name="gpt-4.1", base_url="https://api.openai.com/v1"):
    """A model callable on a Chat Completions API (POST {base_url}/chat/completions):
    OpenAI's, or a compatible server's."""
    def call(messages, tools):
        body = post_json(f"{base_url}/chat/completions", {"Authorization": f"Bearer {api_key}"},
                         {"model": model_name, "tools": tools, "messages": messages})
        message = body["choices"][0]["message"]
        reply = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            reply["tool_calls"] = message["tool_calls"]
        return reply
    return call


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.rsplit("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", nargs="?", default=DEMO_TASK,
                        help="what to ask the model (default: the scripted demo's task)")
    parser.add_argument("--api", choices=["anthropic", "openai"], default="anthropic",
                        help="the function-calling shape, and the API a --model is called on")
    parser.add_argument("--model", default="scripted",
                        help="scripted (the default: no key, no network) or the model's name")
    parser.add_argument("--ca-file", default=os.environ.get("CALLISTO_CA"),
                        help="https:// CALLISTO_URL: the CA to trust (default $CALLISTO_CA, "
                             "else the system's CAs)")
    args = parser.parse_args()
    url = os.environ.get("CALLISTO_URL", "http://127.0.0.1:8888")
    token = os.environ.get("CALLISTO_TOKEN")
    if not token:
        parser.exit(2, "agent_loop.py: CALLISTO_TOKEN is not set: the token of the Callisto "
                       "server at CALLISTO_URL\n")
    if args.ca_file and not os.path.isfile(args.ca_file):
        parser.exit(2, f"agent_loop.py: --ca-file {args.ca_file}: no such file\n")
    key_name = "OPENAI_API_KEY" if args.api == "openai" else "ANTHROPIC_API_KEY"
    if args.model == "scripted":
        model = scripted_model(openai=args.api == "openai")
    elif not os.environ.get(key_name):
        parser.exit(2, f"agent_loop.py: {key_name} is not set: --model {args.model} calls the "
                       f"{args.api} API with it. Without --model the scripted model runs, "
                       "with no key and no network.\n")
    elif args.api == "openai":
        model = openai_model(os.environ[key_name], args.model, os.environ.get(
            "OPENAI_BASE_URL", "https://api.openai.com/v1"))
    else:
        model = anthropic_model(os.environ[key_name], args.model, base_url=os.environ.get(
            "ANTHROPIC_BASE_URL", "https://api.anthropic.com"))
    loop = openai_agent_loop if args.api == "openai" else agent_loop
    try:
        answer, _ = loop(model, Callisto(url, token, ca_file=args.ca_file), args.task)
    except ssl.SSLCertVerificationError as e:
        sys.exit(f"agent_loop.py: {url}: certificate verify failed ({e.verify_message}); "
                 "--ca-file names the CA that signed it when the system's CAs do not")
    except (CallistoError, OSError, RuntimeError, ValueError) as e:
        sys.exit(f"agent_loop.py: {e}")
    print(answer)


if __name__ == "__main__":
    main()
