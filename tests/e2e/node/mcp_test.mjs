// End-to-end test of Callisto's MCP endpoint (/mcp) through the official MCP TypeScript SDK
// (@modelcontextprotocol/sdk), as an agent host would use it: Streamable HTTP transport with a
// bearer token, tools/list, run_code with state kept between calls, a matplotlib chart as image
// content, an exception with its traceback, a CSV uploaded and read with pandas, generated
// files read back, and the session's end taking its context with it.
//
//   CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T node mcp_test.mjs [name-substring]
//
// Exits 0 only when every test passed, and prints "N passed, M failed".

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { BASE_URL, TOKEN, check, runTests, sleep, test } from './runner.mjs';

const CALL_MS = 120000; // the first call starts the session's kernel

// The REST API next to /mcp, to see what an MCP session holds from the outside.
async function rest(method, path) {
  const res = await fetch(BASE_URL + path, { method, headers: { Authorization: `token ${TOKEN}` } });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function connect() {
  const transport = new StreamableHTTPClientTransport(new URL(BASE_URL + '/mcp'), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  const client = new Client({ name: 'callisto-e2e', version: '1.0.0' });
  await client.connect(transport, { timeout: 30000 });
  return { client, transport };
}

async function withSession(fn) {
  const { client, transport } = await connect();
  try {
    await fn(client, transport);
  } finally {
    try { await transport.terminateSession(); } catch (e) { /* the test may have ended it */ }
    await client.close();
  }
}

const call = (client, name, args) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: CALL_MS });

const text = result => result.content.filter(c => c.type === 'text').map(c => c.text).join('\n');

async function run(client, code, expectError = false) {
  const r = await call(client, 'run_code', { code });
  check(Boolean(r.isError) === expectError,
        `run_code ${JSON.stringify(code.slice(0, 60))} isError should be ${expectError}`, r);
  return r;
}

// --------------------------------------------------------------------------

test('initialize negotiates a version and lists the tools with schemas', async () => {
  await withSession(async (client, transport) => {
    const info = client.getServerVersion();
    check(info && info.name === 'callisto', 'serverInfo', info);
    check(typeof transport.sessionId === 'string' && transport.sessionId.length === 36,
          'Mcp-Session-Id issued', transport.sessionId);
    // The SDK offers a newer revision; the server answers the newest it speaks.
    check(transport.protocolVersion === '2025-06-18', 'negotiated version', transport.protocolVersion);
    check(client.getServerCapabilities().tools, 'tools capability', client.getServerCapabilities());
    const { tools } = await client.listTools();
    const names = tools.map(t => t.name).sort();
    check(JSON.stringify(names) ===
          JSON.stringify(['delete_snapshot', 'fork_context', 'list_files', 'list_snapshots',
                          'pause_context', 'read_file', 'restart_context', 'restore_snapshot',
                          'resume_context', 'run_code', 'snapshot_context', 'upload_file']),
          'tool names', names);
    const runCode = tools.find(t => t.name === 'run_code');
    check(runCode.inputSchema.type === 'object' && runCode.inputSchema.required.includes('code'),
          'run_code schema', runCode.inputSchema);
    await client.ping();
  });
});

test('run_code keeps state between calls', async () => {
  await withSession(async client => {
    const first = await run(client, 'x = 21*2; print(x)');
    check(text(first).includes('--- stdout ---\n42\n'), 'stdout 42', text(first));
    const second = await run(client, 'x+1');
    check(text(second).includes('--- result ---\n43'), 'x+1 is 43: state kept', text(second));
  });
});

test('a matplotlib chart comes back as PNG image content', async () => {
  await withSession(async client => {
    const r = await run(client,
      'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title("sales")\nplt.show()');
    const images = r.content.filter(c => c.type === 'image');
    check(images.length === 1, 'one image', r.content.map(c => c.type));
    check(images[0].mimeType === 'image/png', 'image/png', images[0].mimeType);
    const png = Buffer.from(images[0].data, 'base64');
    check(png.length > 1000 && png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
          'a real PNG', png.length);
  });
});

test('an exception is an error result with the traceback', async () => {
  await withSession(async client => {
    const r = await run(client, 'def f():\n    return 1 / 0\n\nf()', true);
    const t = text(r);
    check(t.includes('status: error'), 'status line', t);
    check(t.includes('ZeroDivisionError: division by zero'), 'exception line', t);
    check(t.includes('return 1 / 0') && t.includes('Traceback'), 'traceback with the failing line', t);
    check(!t.includes('\u001b['), 'no ANSI codes', t);
    // The session goes on.
    const after = await run(client, 'print("still here")');
    check(text(after).includes('still here'), 'runs after the error', text(after));
  });
});

test('an uploaded CSV is read with pandas; generated files are read back', async () => {
  await withSession(async client => {
    const csv = 'region,amount\nnorth,120\nsouth,80\neast,45.5\n';
    const up = await call(client, 'upload_file', { path: 'data/sales.csv', content: csv });
    check(!up.isError && text(up).includes('data/sales.csv'), 'upload', up);
    const r = await run(client,
      'import os\nimport pandas as pd\ndf = pd.read_csv("data/sales.csv")\nprint(df["amount"].sum())\n' +
      'os.makedirs("out", exist_ok=True)\ndf.to_csv("out/summary.csv", index=False)\n' +
      'import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\n' +
      'df.plot.bar(x="region", y="amount").get_figure().savefig("out/chart.png")\n' +
      'open("out/blob.bin", "wb").write(bytes(range(256)))');
    check(text(r).includes('245.5'), 'pandas summed the uploaded column', text(r));

    const listing = text(await call(client, 'list_files', {}));
    for (const name of ['data/sales.csv  (' + csv.length + ' bytes)', 'out/summary.csv', 'out/chart.png', 'out/blob.bin'])
      check(listing.includes(name), `listing has ${name}`, listing);

    const summary = await call(client, 'read_file', { path: 'out/summary.csv' });
    check(!summary.isError && summary.content[0].type === 'text' &&
          summary.content[0].text === 'region,amount\nnorth,120.0\nsouth,80.0\neast,45.5\n',
          'text file back as text', summary);
    const chart = await call(client, 'read_file', { path: 'out/chart.png' });
    check(chart.content[0].type === 'image' && chart.content[0].mimeType === 'image/png' &&
          Buffer.from(chart.content[0].data, 'base64').subarray(1, 4).toString() === 'PNG',
          'PNG back as an image', chart.content[0].type);
    const blob = await call(client, 'read_file', { path: 'out/blob.bin' });
    const res = blob.content[0].resource;
    check(blob.content[0].type === 'resource' && res.mimeType === 'application/octet-stream',
          'binary back as a resource', blob.content[0]);
    const bytes = Buffer.from(res.blob, 'base64');
    check(bytes.length === 256 && bytes[0] === 0 && bytes[255] === 255, 'resource bytes', bytes.length);

    // Binary upload, and the errors a model can correct.
    const bin = await call(client, 'upload_file',
                           { path: 'in.bin', content: Buffer.from([0, 1, 2, 255]).toString('base64'), encoding: 'base64' });
    check(!bin.isError, 'base64 upload', bin);
    check(text(await run(client, 'print(list(open("in.bin", "rb").read()))')).includes('[0, 1, 2, 255]'),
          'uploaded bytes intact');
    const missing = await call(client, 'read_file', { path: 'nope.txt' });
    check(missing.isError && text(missing).includes('no such file'), 'missing file is a tool error', missing);
  });
});

test('bad calls are JSON-RPC errors and the session keeps working', async () => {
  await withSession(async client => {
    const expectRpcError = async (params, what) => {
      try {
        await client.callTool(params, undefined, { timeout: CALL_MS });
      } catch (e) {
        check(e instanceof McpError && e.code === -32602, `${what}: invalid params`, { code: e.code, message: e.message });
        return e.message;
      }
      throw new Error(`${what}: no error`);
    };
    check((await expectRpcError({ name: 'format_disk', arguments: {} }, 'unknown tool')).includes('unknown tool'), 'says unknown tool');
    await expectRpcError({ name: 'run_code', arguments: {} }, 'missing code');
    await expectRpcError({ name: 'run_code', arguments: { code: 'x', timeout_seconds: -1 } }, 'negative timeout');
    await expectRpcError({ name: 'read_file', arguments: { path: '../../etc/passwd' } }, 'path out of the workdir');
    await expectRpcError({ name: 'upload_file', arguments: { path: 'a', content: '%%%', encoding: 'base64' } }, 'bad base64');
    check(text(await run(client, 'print(6*7)')).includes('42'), 'still works');
  });
});

test('a time limit interrupts and keeps the state; restart_context drops it', async () => {
  await withSession(async client => {
    await run(client, 'y = 5');
    const r = await call(client, 'run_code', { code: 'import time\ntime.sleep(60)', timeout_seconds: 1 });
    check(r.isError && text(r).includes('status: timeout') && text(r).includes('state was kept'), 'timeout', text(r));
    check(text(await run(client, 'y')).includes('5'), 'state kept after the interrupt');
    const restart = await call(client, 'restart_context', {});
    check(!restart.isError && text(restart).includes('restarted'), 'restart', restart);
    const gone = await run(client, 'y', true);
    check(text(gone).includes('NameError'), 'state gone after restart', text(gone));
  });
});

test('a cancelled call (notifications/cancelled) interrupts the running code', async () => {
  await withSession(async client => {
    await run(client, 'z = 7');
    const before = (await rest('GET', '/v1/contexts')).body;
    const controller = new AbortController();
    const slow = client.callTool({ name: 'run_code', arguments: { code: 'import time\nfor _ in range(600): time.sleep(0.1)' } },
                                 undefined, { timeout: CALL_MS, signal: controller.signal });
    await sleep(1500);
    controller.abort('the user gave up');
    let rejected = false;
    try { await slow; } catch (e) { rejected = true; }
    check(rejected, 'the SDK rejects the aborted call');
    // Without the interrupt this would wait a minute for the loop; the state survives it.
    const t0 = Date.now();
    const after = await run(client, 'print(z)');
    check(text(after).includes('7'), 'state kept after the interrupt', text(after));
    check(Date.now() - t0 < 30000, 'the next call did not wait for the cancelled one', Date.now() - t0);
    // The context shows the cancelled execution as interrupted.
    const statuses = [];
    for (const ctx of before)
      for (const e of (await rest('GET', `/v1/contexts/${ctx.id}/executions`)).body) statuses.push(e.status);
    check(statuses.includes('interrupted'), 'an interrupted execution', statuses);
  });
});

test('the session owns a context; ending the session deletes it', async () => {
  const before = (await rest('GET', '/v1/contexts')).body.map(c => c.id);
  const { client, transport } = await connect();
  const sessionId = transport.sessionId;
  // No kernel until the first tool call.
  check((await rest('GET', '/v1/contexts')).body.length === before.length, 'no context before a call');
  await run(client, 'secret = "s3"\nopen("keep.txt", "w").write("x")');
  const during = (await rest('GET', '/v1/contexts')).body.filter(c => !before.includes(c.id));
  check(during.length === 1, 'one new context for the session', during);
  check((await rest('GET', '/api/kernels/' + during[0].kernel_id)).status === 200, 'its kernel runs');

  await transport.terminateSession();
  await client.close();
  const after = (await rest('GET', '/v1/contexts')).body.map(c => c.id);
  check(!after.includes(during[0].id), 'context gone', after);
  check((await rest('GET', '/v1/contexts/' + during[0].id)).status === 404, 'its id answers 404');

  // The old id is unknown now: 404, as the spec says, so a client knows to start over.
  const res = await fetch(BASE_URL + '/mcp', {
    method: 'POST',
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json',
               Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sessionId },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  check(res.status === 404, 'ended session answers 404', res.status);

  // Under the reuse policy the kernel may serve the next session after a reset: nothing of
  // the ended session is left in it, neither variables nor files.
  await withSession(async next => {
    const r = await run(next, 'import os\nprint("secret" in dir(), os.path.exists("keep.txt"))');
    check(text(r).includes('False False'), 'a new session starts clean', text(r));
  });
});

test('the transport rules: 401 without a token, 405 for GET, 400 without a session', async () => {
  const post = (headers, body) => fetch(BASE_URL + '/mcp', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body,
  });
  const noToken = await post({}, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }));
  check(noToken.status === 401 && /^Bearer/.test(noToken.headers.get('www-authenticate') || ''), '401 + challenge', noToken.status);
  const badToken = await post({ Authorization: 'Bearer wrong-token-123' }, '{}');
  check(badToken.status === 401, 'wrong token 401', badToken.status);
  const auth = { Authorization: `Bearer ${TOKEN}` };
  const get = await fetch(BASE_URL + '/mcp', { headers: { ...auth, Accept: 'text/event-stream' } });
  check(get.status === 405, 'GET 405', get.status);
  const noSession = await post(auth, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
  check(noSession.status === 400, 'no session 400', noSession.status);
  const body = await noSession.json();
  check(body.jsonrpc === '2.0' && body.error && body.id === 1, 'JSON-RPC error body', body);
  const batch = await post(auth, '[{"jsonrpc":"2.0","id":1,"method":"ping"}]');
  check(batch.status === 400 && (await batch.json()).error.code === -32600, 'batch refused');
  const parse = await post(auth, '{"jsonrpc":');
  check(parse.status === 400 && (await parse.json()).error.code === -32700, 'parse error');
  // `token T`, as the rest of the API takes it, works here too.
  const init = await post({ Authorization: `token ${TOKEN}` }, JSON.stringify({
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  }));
  check(init.status === 200, 'initialize with token scheme', init.status);
  check((await init.json()).result.protocolVersion === '2025-03-26', 'older revision kept');
  const sid = init.headers.get('mcp-session-id');
  const del = await fetch(BASE_URL + '/mcp', { method: 'DELETE', headers: { ...auth, 'Mcp-Session-Id': sid } });
  check(del.status === 204, 'DELETE 204', del.status);
});

// --------------------------------------------------------------------------

await runTests();
