#!/usr/bin/env node
// What an agent on E2B's SDK waits, against Callisto, beside the same work on /v1 in the same
// run (issue 35): (1) a new sandbox to its first result, `Sandbox.create` then `runCode('1+1')`,
// then `kill`, against `POST /v1/contexts` {"policy": "fresh"}, a first execution and `DELETE`;
// (2) the round trip of a small cell in a sandbox that exists (`runCode('x = 1; x')`) against a
// `/v1` execution of the same code. Rounds alternate E2B and /v1 so load drifts hit both alike.
// Pool on or off is the server's (`--pool-size`): run once against each.
//
//   node bench/e2b_latency.mjs --url http://127.0.0.1:P --token T [-n 20] [--cells 200]
//       [--pause SECS] [--label NAME] [--json OUT.jsonl] [--node-modules DIR]
//
// @e2b/code-interpreter comes from --node-modules (default: tests/e2e/node/node_modules, which
// `make test` installs; examples/node_modules after `npm install` there works too).

import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const args = { n: 20, cells: 200, pause: 1, label: '', json: '' };
args.nodeModules = join(dirname(fileURLToPath(import.meta.url)), '..', 'tests', 'e2e', 'node', 'node_modules');
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; ++i) {
  const [key, inline] = argv[i].split(/=(.*)/s);
  const value = () => inline ?? argv[++i];
  switch (key) {
    case '--url': args.url = value().replace(/\/+$/, ''); break;
    case '--token': args.token = value(); break;
    case '-n': args.n = Number(value()); break;
    case '--cells': args.cells = Number(value()); break;
    case '--pause': args.pause = Number(value()); break;
    case '--label': args.label = value(); break;
    case '--json': args.json = value(); break;
    case '--node-modules': args.nodeModules = value(); break;
    default: console.error(`unknown argument ${argv[i]}`); process.exit(2);
  }
}
if (!args.url || !args.token || !(args.n > 0) || !(args.cells > 0)) {
  console.error('usage: e2b_latency.mjs --url URL --token T [-n N] [--cells N] [--pause S] [--label L] [--json F]');
  process.exit(2);
}

process.env.E2B_API_URL = args.url;
process.env.E2B_SANDBOX_URL = args.url;
process.env.E2B_API_KEY = args.token;
const requireFrom = createRequire(join(args.nodeModules, 'noop.js'));
const { Sandbox } = await import(pathToFileURL(requireFrom.resolve('@e2b/code-interpreter')).href);

const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = ms => new Promise(r => setTimeout(r, ms));
const pct = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.round((p / 100) * (sorted.length - 1)))];
};

async function v1(method, path, body) {
  const response = await fetch(args.url + path, {
    method,
    headers: { Authorization: `token ${args.token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function e2bFirstResult() {
  const t0 = now();
  const sandbox = await Sandbox.create({ timeoutMs: 300000 });
  const created = now();
  const execution = await sandbox.runCode('1+1');
  const done = now();
  if (execution.text !== '2') throw new Error(`runCode answered ${JSON.stringify(execution.toJSON())}`);
  await sandbox.kill();
  return { create: created - t0, first: done - created, total: done - t0 };
}

async function v1FirstResult() {
  const t0 = now();
  const context = await v1('POST', '/v1/contexts', { policy: 'fresh' });
  const created = now();
  const execution = await v1('POST', `/v1/contexts/${context.id}/executions`, { code: '1+1' });
  const done = now();
  if (execution.status !== 'ok') throw new Error(`execution: ${JSON.stringify(execution)}`);
  await v1('DELETE', `/v1/contexts/${context.id}`);
  return { create: created - t0, first: done - created, total: done - t0 };
}

function summary(rows, field) {
  const values = rows.map(r => r[field]);
  return { p50: pct(values, 50), p90: pct(values, 90), p99: pct(values, 99), n: values.length };
}

function record(kind, rows) {
  const line = { label: args.label, kind, rows, at: new Date().toISOString() };
  if (args.json) appendFileSync(args.json, JSON.stringify(line) + '\n');
}

const fixed = x => x.toFixed(1);

// (1) A new sandbox / context to its first result.
const first = { e2b: [], v1: [] };
for (let i = 0; i < args.n; ++i) {
  first.e2b.push(await e2bFirstResult());
  await sleep(args.pause * 1000);
  first.v1.push(await v1FirstResult());
  await sleep(args.pause * 1000);
}
record('first-result', first);
console.log(`first result (${args.label || 'unlabelled'}), ${args.n} rounds each, ms:`);
for (const [api, rows] of Object.entries(first)) {
  const t = summary(rows, 'total');
  const c = summary(rows, 'create');
  const f = summary(rows, 'first');
  console.log(`  ${api.padEnd(4)} total p50 ${fixed(t.p50)} p90 ${fixed(t.p90)} p99 ${fixed(t.p99)} | ` +
    `create p50 ${fixed(c.p50)} | first execution p50 ${fixed(f.p50)}`);
}

// (2) The round trip of a small cell where the sandbox / context exists.
const sandbox = await Sandbox.create({ timeoutMs: 600000 });
const context = await v1('POST', '/v1/contexts', {});
try {
  await sandbox.runCode('x = 1');
  await v1('POST', `/v1/contexts/${context.id}/executions`, { code: 'x = 1' });
  const cells = { e2b: [], v1: [] };
  for (let i = 0; i < args.cells; ++i) {
    let t0 = now();
    const e = await sandbox.runCode('x = 1; x');
    cells.e2b.push({ total: now() - t0 });
    if (e.text !== '1') throw new Error(`runCode answered ${JSON.stringify(e.toJSON())}`);
    t0 = now();
    const r = await v1('POST', `/v1/contexts/${context.id}/executions`, { code: 'x = 1; x' });
    cells.v1.push({ total: now() - t0 });
    if (r.status !== 'ok') throw new Error(`execution: ${JSON.stringify(r)}`);
  }
  record('round-trip', cells);
  console.log(`round trip of a small cell, ${args.cells} each, ms:`);
  for (const [api, rows] of Object.entries(cells)) {
    const t = summary(rows, 'total');
    console.log(`  ${api.padEnd(4)} p50 ${fixed(t.p50)} p90 ${fixed(t.p90)} p99 ${fixed(t.p99)}`);
  }
} finally {
  await sandbox.kill();
  await v1('DELETE', `/v1/contexts/${context.id}`);
}
