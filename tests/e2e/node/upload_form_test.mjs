// End-to-end test of multipart uploads (POST /v1/contexts/{id}/files) with a real form client:
// Node's own FormData, Blob and fetch (undici), as a browser would send them. No npm package.
// Reads CALLISTO_URL and CALLISTO_TOKEN; exits 0 only when every test passed.
//
//   CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T node upload_form_test.mjs

const BASE_URL = (process.env.CALLISTO_URL || 'http://127.0.0.1:8888').replace(/\/+$/, '');
const TOKEN = process.env.CALLISTO_TOKEN || '';
const auth = { Authorization: `token ${TOKEN}` };

const timer = setTimeout(() => {
  console.log('FAIL global timeout of 240 s exceeded');
  process.exit(1);
}, 240000);

let passed = 0;
let failed = 0;

function check(cond, what, detail) {
  if (!cond) throw new Error(what + (detail === undefined ? '' : ': ' + JSON.stringify(detail)));
}

async function api(method, path, body, headers = {}) {
  const res = await fetch(BASE_URL + path, { method, body, headers: { ...auth, ...headers } });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, json, text };
}

async function withContext(fn) {
  const created = await api('POST', '/v1/contexts', '{}', { 'Content-Type': 'application/json' });
  check(created.status === 201, 'create context', created.text);
  const ctx = created.json;
  try {
    await fn(ctx);
  } finally {
    await api('DELETE', `/v1/contexts/${ctx.id}`);
  }
}

async function run(ctx, code) {
  const r = await api('POST', `/v1/contexts/${ctx.id}/executions`, JSON.stringify({ code }),
    { 'Content-Type': 'application/json' });
  check(r.status === 200, 'execution', r.text);
  return r.json;
}

const tests = {
  async 'a browser-style form uploads a CSV that pandas reads, and a binary file'(ctx) {
    const csv = 'city,temp\nOslo,3\nRome,18\nCairo,27\n';
    const binary = new Uint8Array(300000).map((_, i) => (i * 7) % 256);
    const form = new FormData();
    form.append('file', new Blob([csv], { type: 'text/csv' }), 'temps.csv');
    form.append('file', new Blob([binary]), 'data/blob.bin');
    const r = await api('POST', `/v1/contexts/${ctx.id}/files`, form);
    check(r.status === 201, 'upload status', r.text);
    check(JSON.stringify(r.json.files) ===
          JSON.stringify([{ path: 'temps.csv', size: csv.length }, { path: 'data/blob.bin', size: 300000 }]),
          'the answer lists the files', r.json);
    const out = await run(ctx, "import pandas as pd\nprint(pd.read_csv('temps.csv')['temp'].mean())\n" +
      "b = open('data/blob.bin', 'rb').read()\nprint(len(b), all(b[i] == (i * 7) % 256 for i in range(len(b))))");
    check(out.status === 'ok', 'pandas ran', out);
    check(out.stdout === '16.0\n300000 True\n', 'pandas read the CSV, the bytes are exact', out.stdout);
  },

  async 'a path field names where the one file goes'(ctx) {
    const form = new FormData();
    form.append('path', 'in/renamed.csv');
    form.append('file', new Blob(['a\n1\n']), 'local-name.csv');
    const r = await api('POST', `/v1/contexts/${ctx.id}/files`, form);
    check(r.status === 201, 'upload status', r.text);
    const got = await api('GET', `/v1/contexts/${ctx.id}/files/in/renamed.csv`);
    check(got.status === 200 && got.text === 'a\n1\n', 'stored under the path field', got);
  },

  async 'refused forms write nothing and say why'(ctx) {
    const cases = [
      [[['file', 'ok.csv', '1'], ['file', '../escape.csv', '2']], 400, "'.' or '..'"],
      [[['file', 'ok.csv', '1'], ['file', 'ok.csv', '2']], 400, 'two files'],
      [[['file', 'ok.csv', '1'], ['note', null, 'hello']], 400, 'unknown form field'],
      [[['path', null, 'only-a-path.csv']], 400, 'no file'],
    ];
    for (const [parts, status, says] of cases) {
      const form = new FormData();
      for (const [name, filename, content] of parts) {
        if (filename === null) form.append(name, content);
        else form.append(name, new Blob([content]), filename);
      }
      const r = await api('POST', `/v1/contexts/${ctx.id}/files`, form);
      check(r.status === status, `status for ${JSON.stringify(parts)}`, r.text);
      check(r.json && r.json.message.includes(says), `message for ${JSON.stringify(parts)}`, r.json);
    }
    const list = await api('GET', `/v1/contexts/${ctx.id}/files`);
    check(!list.json.files.some((f) => f.path === 'ok.csv'), 'nothing of a refused form written', list.json);
    const raw = await api('POST', `/v1/contexts/${ctx.id}/files`, 'a,b', { 'Content-Type': 'text/csv' });
    check(raw.status === 415, 'not a form: 415', raw.text);
  },
};

for (const [name, fn] of Object.entries(tests)) {
  try {
    await withContext(fn);
    passed += 1;
    console.log(`PASS ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}
clearTimeout(timer);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
