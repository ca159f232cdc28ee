"""A raw-HTTP MCP client for the e2e suites (the SDK's own test is node/mcp_test.mjs):
initialize + notifications/initialized, tools/call, DELETE /mcp."""

from e2e_client import api, check, check_eq

CALL_TIMEOUT = 120


class Session:
    def __init__(self, token):
        self.token = token
        r = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "e2e", "version": "1"}}},
                      session=False)
        check_eq(r.status, 200, "initialize")
        self.id = r.headers["mcp-session-id"]
        check_eq(self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).status,
                 202, "initialized")
        self.next_id = 1

    def post(self, message, session=True, token=None, sid=None):
        headers = {"Authorization": f"Bearer {token or self.token}",
                   "Accept": "application/json, text/event-stream"}
        if session:
            headers["Mcp-Session-Id"] = sid or self.id
            headers["MCP-Protocol-Version"] = "2025-06-18"
        return api("POST", "/mcp", message, auth=None, headers=headers, timeout=CALL_TIMEOUT)

    def tool(self, name, **arguments):
        self.next_id += 1
        r = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}})
        check_eq(r.status, 200, f"tools/call {name}: {r.body[:300]!r}")
        body = r.json()
        check("result" in body, f"{name} has a result", body)
        text = "\n".join(c["text"] for c in body["result"]["content"] if c["type"] == "text")
        return text, body["result"]["isError"]

    def end(self, token=None):
        return api("DELETE", "/mcp", auth=None,
                   headers={"Authorization": f"Bearer {token or self.token}", "Mcp-Session-Id": self.id})
