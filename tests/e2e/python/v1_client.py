"""What the /v1 e2e suites (test_v1_*.py) share beyond e2e_client's: a context made and deleted
with the checks of its answers, an execution fetched, an execution's NDJSON stream read event by
event, files' URLs and multipart forms, and the events WebSocket. An execution is run with
e2e_client.run_code."""

import http.client
import json
import urllib.parse

import websocket  # websocket-client

import e2e_client
from e2e_client import BASE_URL, HTTP_TIMEOUT, TOKEN, api, check, check_eq

# The first kernel start on a loaded machine, and the ladder (deadline + 5 s grace +
# shutdown escalation + a new kernel), both need room.
LADDER_TIMEOUT = 90


def new_context(body=None):
    r = api("POST", "/v1/contexts", body if body is not None else {})
    check_eq(r.status, 201, "create context status")
    ctx = r.json()
    check_eq(r.headers.get("location"), "/v1/contexts/" + ctx["id"], "Location")
    for key in ("id", "kernel_id", "kernel", "state", "created_at"):
        check(key in ctx, "context model has " + key, ctx)
    return ctx


def delete_context(ctx):
    check_eq(e2e_client.delete_context(ctx["id"]), 204, "delete context status")


def get_execution(ctx, eid):
    r = api("GET", f"/v1/contexts/{ctx['id']}/executions/{eid}")
    check_eq(r.status, 200, "GET execution")
    return r.json()


class Stream:
    """POST an execution with stream: true and read its NDJSON events one by one."""

    def __init__(self, ctx, code, **fields):
        url = urllib.parse.urlsplit(BASE_URL)
        self.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=HTTP_TIMEOUT)
        body = {"code": code}
        body.update(fields)
        self.conn.request("POST", f"/v1/contexts/{ctx['id']}/executions",
                          body=json.dumps(body).encode(),
                          headers={"Authorization": f"token {TOKEN}",
                                   "Content-Type": "application/json",
                                   "Accept": "application/x-ndjson"})
        self.resp = self.conn.getresponse()

    def event(self):
        line = self.resp.readline()
        if not line:
            return None
        check(line.endswith(b"\n"), "an event is one line", line)
        return json.loads(line)

    def events(self):
        out = []
        while True:
            e = self.event()
            if e is None:
                return out
            out.append(e)

    def close(self):
        self.conn.close()


def files_url(ctx, path=""):
    return f"/v1/contexts/{ctx['id']}/files" + ("/" + path if path else "")


def form_part(headers, body):
    return b"--B0UND\r\n" + headers + b"\r\n\r\n" + body + b"\r\n"


def form_file(filename, body, name=b"file"):
    return form_part(b'Content-Disposition: form-data; name="' + name + b'"; filename="' +
                     filename + b'"\r\nContent-Type: text/csv', body)


FORM_END = b"--B0UND--\r\n"


FORM_TYPE = "multipart/form-data; boundary=B0UND"


def events_ws(ctx, token=TOKEN):
    url = urllib.parse.urlsplit(BASE_URL)
    return websocket.create_connection(
        f"ws://{url.netloc}/v1/contexts/{ctx['id']}/events",
        header=[f"Authorization: token {token}"], timeout=HTTP_TIMEOUT)


def receive(ws):
    opcode, data = ws.recv_data()
    check_eq(opcode, websocket.ABNF.OPCODE_TEXT, "a JSON text message")
    return json.loads(data)


def receive_until_end(ws, eid):
    """Events of one execution until its end (other messages are kept aside)."""
    events, others = [], []
    while True:
        m = receive(ws)
        if m.get("execution_id") == eid and m["type"] not in ("queued", "following", "interrupting"):
            events.append(m)
            if m["type"] == "end":
                return events, others
        else:
            others.append(m)
