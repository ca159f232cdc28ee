"""End-to-end checks that docs/openapi.json describes what /v1 (contexts, executions, files,
events, one-shot runs) and /mcp answer: each answer's status, body and headers.

Run against a server (CALLISTO_URL, CALLISTO_TOKEN)."""

import json
import sys

from e2e_client import (api, callisto_only, check, check_documented, check_eq, check_schema,
                        run_tests)
from v1_client import FORM_END, FORM_TYPE, LADDER_TIMEOUT, Stream, events_ws, form_file, receive


@callisto_only
def test_openapi_describes_interpreter_answers():
    """Every /v1 route once, with its common answers, checked against GET /openapi.json:
    status listed, body matching the schema, Location and Retry-After present."""
    C, CI = "/v1/contexts", "/v1/contexts/{context_id}"
    E, EI = CI + "/executions", CI + "/executions/{execution_id}"
    F, FP = CI + "/files", CI + "/files/{path}"
    check_documented("GET", C, api("GET", C, auth=None))
    check_documented("POST", C, api("POST", C, {"kernels": "python3"}))
    check_documented("POST", C, api("POST", C, {"kernel": "no-such-kernelspec-e2e"}))
    r = check_documented("POST", C, api("POST", C, {"kernel": None}))
    check_eq(r.status, 201, "create")
    ctx = r.json()
    cid = ctx["id"]
    base = f"{C}/{cid}"
    try:
        check_documented("GET", C, api("GET", C))
        check_documented("GET", CI, api("GET", base))
        check_documented("GET", CI, api("GET", f"{C}/{ctx['kernel_id']}"))  # a kernel id: 404
        ok = check_documented("POST", E, api("POST", base + "/executions",
                                             {"code": "print('hi')\n6 * 7", "idempotency_key": "k-1"}))
        check_eq(ok.json()["status"], "ok", "ok execution")
        check_documented("POST", E, api("POST", base + "/executions", {"code": "1/0", "timeout": 30}))
        check_documented("POST", E, api("POST", base + "/executions", {"code": "1", "timeout": 0}))
        check_documented("POST", E, api("POST", base + "/executions", {"cod": "1"}))
        check_documented("POST", E, api("POST", f"{C}/{ctx['kernel_id']}/executions", {"code": "1"}))
        # The stream: every line an event of the document, the last an end with the execution.
        streamed = check_documented("POST", E, api(
            "POST", base + "/executions",
            {"code": "import sys\nprint('out')\nprint('err', file=sys.stderr)\n"
                     "from IPython.display import display, HTML\ndisplay(HTML('<b>x</b>'))\n"
                     "raise ValueError('v')"},
            headers={"Accept": "application/x-ndjson"}))
        types = [json.loads(line)["type"] for line in streamed.body.decode().splitlines()]
        for t in ("queued", "start", "stdout", "stderr", "result", "error", "end"):
            check(t in types, f"the stream has a {t} event", types)
        check_documented("GET", E, api("GET", base + "/executions"))
        eid = ok.json()["id"]
        check_documented("GET", EI, api("GET", f"{base}/executions/{eid}"))
        r = check_documented("DELETE", EI, api("DELETE", f"{base}/executions/{eid}"))
        check_eq(r.status, 200, "DELETE of a finished execution")
        check_documented("GET", EI, api("GET", f"{base}/executions/{cid}"))  # unknown: 404
        sleeper = Stream(ctx, "import time\ntime.sleep(20)")
        queued = sleeper.event()
        check_schema(queued, "ExecutionEvent", "queued event")
        r = check_documented("DELETE", EI, api("DELETE", f"{base}/executions/{queued['id']}"))
        check_eq(r.status, 202, "DELETE of a running execution")
        sleeper.events()
        sleeper.close()

        r = check_documented("PUT", FP, api("PUT", base + "/files/data/2026/report.csv", b"a,b\n1,2\n"))
        check_eq(r.status, 201, "upload")
        r = check_documented("GET", FP, api("GET", base + "/files/data/2026/report.csv"))
        check_eq(r.body, b"a,b\n1,2\n", "download")
        check_documented("GET", FP, api("GET", base + "/files/data/missing.csv"))
        check_documented("GET", FP, api("GET", base + "/files/data"))  # a directory: 409
        check_documented("GET", FP, api("GET", base + "/files/a%5Cb"))  # a backslash: 400
        check_documented("PUT", FP, api("PUT", base + "/files/data", b"x"))  # a directory: 409
        check_documented("DELETE", FP, api("DELETE", base + "/files/data"))  # not empty: 409
        r = check_documented("GET", F, api("GET", base + "/files"))
        check(any(f["path"] == "data/2026/report.csv" for f in r.json()["files"]), "listed", r.json())
        r = check_documented("DELETE", FP, api("DELETE", base + "/files/data/2026/report.csv"))
        check_eq(r.status, 204, "delete file")
        check_documented("DELETE", FP, api("DELETE", base + "/files/data/2026/report.csv"))  # 404

        form = form_file(b"form/a.csv", b"a\n1\n") + FORM_END
        r = check_documented("POST", F, api("POST", base + "/files", form,
                                            headers={"Content-Type": FORM_TYPE}))
        check_eq(r.status, 201, "form upload")
        check_documented("POST", F, api("POST", base + "/files", form_file(b"../x", b"1") + FORM_END,
                                        headers={"Content-Type": FORM_TYPE}))  # 400
        check_documented("POST", F, api("POST", base + "/files", b"x",
                                        headers={"Content-Type": "text/plain"}))  # 415
        r = check_documented("POST", E, api("POST", base + "/executions",
                                            {"code": "import os\nos.environ['E']", "env": {"E": "1"},
                                             "keep_ansi": True}))
        check_eq(r.json()["results"][0]["data"]["text/plain"], "'1'", "env")
        check_documented("POST", E, api("POST", base + "/executions",
                                        {"code": "1", "env": {"LD_PRELOAD": "x"}}))  # 400
        check_documented("GET", CI + "/events", api("GET", base + "/events"))  # not an upgrade: 400
        ws = events_ws(ctx)
        try:
            ws.send(json.dumps({"type": "execute", "code": "print(1)\n1/0"}))
            ws.send("not json")
            seen = []
            while not seen or seen[-1]["type"] != "end":
                seen.append(receive(ws))
                check_schema(seen[-1], "EventsServerMessage", "events message")
            check(any(m["type"] == "error" and "message" in m for m in seen), "a refusal", seen)
        finally:
            ws.close()

        r = check_documented("POST", CI + "/restart", api("POST", base + "/restart"))
        check_eq(r.status, 200, "restart")
        r = check_documented("DELETE", CI, api("DELETE", base))
        check_eq(r.status, 204, "delete")
        for method, path in (("GET", CI), ("DELETE", CI), ("POST", CI + "/restart"), ("GET", E),
                             ("GET", F), ("GET", FP), ("PUT", FP), ("DELETE", FP), ("POST", F),
                             ("GET", CI + "/events")):
            target = path.replace("{context_id}", cid).replace("{path}", "a/b")
            r = check_documented(method, path, api(method, target, b"x" if method == "PUT" else None))
            check_eq(r.status, 404, f"{method} {path} after delete")
    finally:
        api("DELETE", base)


@callisto_only
def test_openapi_describes_one_shot_answers():
    """POST /v1/executions and its execution by id, checked against GET /openapi.json."""
    X, XI = "/v1/executions", "/v1/executions/{execution_id}"
    check_documented("POST", X, api("POST", X, {"code": "1"}, auth=None))
    check_documented("POST", X, api("POST", X, {"cod": "1"}))
    check_documented("POST", X, api("POST", X, {"code": "1", "kernel": "no-such-kernelspec-e2e"}))
    r = check_documented("POST", X, api("POST", X, {"code": "print('one')\n6 * 7"}, timeout=LADDER_TIMEOUT))
    check_eq(r.status, 200, "one-shot run")
    eid = r.json()["id"]
    check_eq(check_documented("GET", XI, api("GET", f"{X}/{eid}")).status, 200, "GET it later")
    check_eq(check_documented("DELETE", XI, api("DELETE", f"{X}/{eid}")).status, 200, "finished")
    check_eq(check_documented("GET", XI, api("GET", f"{X}/{r.json()['context_id']}")).status, 404,
             "unknown id")
    streamed = check_documented("POST", X, api("POST", X, {"code": "print('s')", "stream": True},
                                               timeout=LADDER_TIMEOUT))
    check(streamed.body.decode().splitlines()[-1].find('"end"') > 0, "the stream ends with end")


@callisto_only
def test_openapi_describes_mcp_answers():
    """/mcp's transport answers, checked against GET /openapi.json."""
    json_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def mcp(method, body=None, session=None, headers=None, **kw):
        h = dict(json_headers)
        if session:
            h["Mcp-Session-Id"] = session
        h.update(headers or {})
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        r = api(method, "/mcp", data if data is not None else (b"" if method == "POST" else None),
                headers=h, **kw)
        return check_documented(method, "/mcp", r)

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "e2e", "version": "1"}}}
    check_eq(mcp("POST", init, auth=None).status, 401, "no token")
    check_eq(mcp("POST", b"{not json").status, 400, "not JSON")
    check_eq(mcp("POST", init, headers={"Content-Type": "text/plain"}).status, 415, "not JSON type")
    check_eq(mcp("POST", init, headers={"Accept": "text/html"}).status, 406, "Accept")
    check_eq(mcp("POST", init, headers={"Origin": "http://evil.example"}).status, 403, "Origin")
    r = mcp("POST", init)
    check_eq(r.status, 200, "initialize")
    session = r.headers.get("mcp-session-id")
    check(session, "initialize answers Mcp-Session-Id", r.headers)
    try:
        tools = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        check_eq(mcp("POST", tools).status, 400, "no session id")
        check_eq(mcp("POST", tools, session="no-such-session").status, 404, "unknown session")
        check_eq(mcp("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                     session=session).status, 202, "notification")
        check_eq(mcp("POST", tools, session=session).status, 200, "tools/list")
        check_eq(mcp("DELETE", headers={"Content-Type": ""}).status, 400, "DELETE without session")
    finally:
        check_eq(mcp("DELETE", session=session).status, 204, "end the session")
    check_eq(mcp("DELETE", session=session).status, 404, "ended")


if __name__ == "__main__":
    sys.exit(run_tests())


if __name__ == "__main__":
    sys.exit(run_tests())
