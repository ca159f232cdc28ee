// The OpenAPI document the server serves (GET /openapi.json), validated by an independent
// OpenAPI 3.1 validator (@apidevtools/swagger-parser: the OpenAPI 3.1 JSON Schema, every $ref
// resolved), and its version checked against the running server's.
//
//   CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T node openapi_test.mjs
//
// Exits 0 only when every check passed, and prints "N passed, M failed".

import SwaggerParser from '@apidevtools/swagger-parser';

const BASE_URL = (process.env.CALLISTO_URL || 'http://127.0.0.1:8888').replace(/\/+$/, '');

let passed = 0;
let failed = 0;

async function test(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`PASS ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}

function check(cond, what, detail) {
  if (!cond) throw new Error(what + (detail === undefined ? '' : `: ${JSON.stringify(detail).slice(0, 2000)}`));
}

async function getJson(path) {
  const res = await fetch(BASE_URL + path, { signal: AbortSignal.timeout(30000) });
  check(res.status === 200, `GET ${path} status`, res.status);
  check(res.headers.get('content-type') === 'application/json', `GET ${path} content type`,
        res.headers.get('content-type'));
  return res.json();
}

const doc = await getJson('/openapi.json');

await test('the document is valid OpenAPI 3.1 and every $ref resolves', async () => {
  check(doc.openapi === '3.1.0', 'openapi version', doc.openapi);
  // validate() mutates what it is given (it dereferences): hand it a copy.
  const api = await SwaggerParser.validate(structuredClone(doc));
  check(Object.keys(api.paths).length === Object.keys(doc.paths).length, 'every path kept');
});

await test("the document's version is the server's", async () => {
  const info = await getJson('/api');
  check(doc.info.version === info.version, 'info.version matches GET /api',
        { document: doc.info.version, server: info.version });
});

await test('every operation has a unique operationId, a summary and a success answer', async () => {
  const ids = new Set();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'].includes(method)) continue;
      const name = `${method.toUpperCase()} ${path}`;
      check(op.operationId && !ids.has(op.operationId), `${name}: unique operationId`, op.operationId);
      ids.add(op.operationId);
      check(typeof op.summary === 'string' && op.summary.length > 0, `${name}: summary`);
      check(Object.keys(op.responses).some(code => /^[12]/.test(code)), `${name}: a success`,
            Object.keys(op.responses));
    }
  }
  check(ids.size >= 25, 'operations documented', ids.size);
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
