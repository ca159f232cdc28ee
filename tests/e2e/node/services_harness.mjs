// What the @jupyterlab/services suites share (services_test.mjs, services_r_test.mjs): the
// server's settings in both WebSocket formats, bounded waits, executing code, a kernel per test
// shut down afterwards, and the runner that prints "N passed, M failed" and exits 0 only when
// every test passed. Reads CALLISTO_URL, CALLISTO_TOKEN and CALLISTO_E2E_NODE_TIMEOUT_MS; the
// command line's arguments select tests by name substring.

import services from '@jupyterlab/services';
import WebSocket from 'ws';

export const { KernelManager, KernelAPI, KernelSpecAPI, ServerConnection } = services;

export const BASE_URL = (process.env.CALLISTO_URL || 'http://127.0.0.1:8888').replace(/\/+$/, '');
const TOKEN = process.env.CALLISTO_TOKEN || '';
const GLOBAL_TIMEOUT_MS = Number(process.env.CALLISTO_E2E_NODE_TIMEOUT_MS || 180000);
export const STEP_MS = 30000;
const selectors = process.argv.slice(2);

let passed = 0;
let failed = 0;
const tests = [];
export const test = (name, fn) => tests.push({ name, fn });
export const createdKernelIds = new Set();

// The library appends a cache buster (?<ms>) to REST URLs and ?token= to the
// WebSocket URL; the server must accept both.
class LegacyWebSocket extends WebSocket {
  constructor(url, _protocols) {
    super(url); // offer no subprotocol: the server must fall back to legacy JSON
  }
}

export function settings(protocol) {
  return ServerConnection.makeSettings({
    baseUrl: BASE_URL + '/',
    wsUrl: BASE_URL.replace(/^http/, 'ws') + '/',
    token: TOKEN,
    appendToken: true,
    WebSocket: protocol === 'legacy' ? LegacyWebSocket : WebSocket,
    fetch: globalThis.fetch,
    Request: globalThis.Request,
    Headers: globalThis.Headers,
  });
}

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

export function check(cond, what, detail) {
  if (!cond) {
    throw new Error(what + (detail === undefined ? '' : `: ${JSON.stringify(detail)}`));
  }
}

// The WebSocket format the server chose for a kernel's connection: v1 when the library offers
// it, legacy JSON (no subprotocol) when the client offers none.
export function checkSubprotocol(kernel, protocol) {
  const selected = kernel._ws ? kernel._ws.protocol : '?';
  console.log(`  WebSocket subprotocol selected: ${JSON.stringify(selected)}`);
  if (protocol === 'v1') {
    check(selected === 'v1.kernel.websocket.jupyter.org', 'server selected v1', selected);
  } else {
    check(selected === '', 'legacy connection has no subprotocol', selected);
  }
}

export const sleep = ms => new Promise(r => setTimeout(r, ms));

// Execute code; collect iopub for this request; resolve with {reply, iopub}.
export async function run(kernel, code, ms = STEP_MS) {
  const future = kernel.requestExecute({ code, stop_on_error: true });
  const iopub = [];
  future.onIOPub = msg => { iopub.push(msg); };
  const reply = await withTimeout(future.done, ms, `execute ${JSON.stringify(code)}`);
  return { reply, iopub, future };
}

export const streamText = (iopub, name = 'stdout') => iopub
  .filter(m => m.header.msg_type === 'stream' && m.content.name === name)
  .map(m => m.content.text).join('');

// A kernel is usable once kernel_info answers over the WebSocket.
export async function waitReady(kernel, ms = STEP_MS) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await withTimeout(kernel.requestKernelInfo(), 3000, 'kernel_info');
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(200);
    }
  }
}

// A kernel of `name` over the `protocol` WebSocket format for fn, shut down afterwards.
export async function withKernel(name, protocol, fn) {
  const manager = new KernelManager({ serverSettings: settings(protocol) });
  let kernel;
  try {
    await withTimeout(manager.ready, STEP_MS, 'KernelManager ready');
    kernel = await withTimeout(manager.startNew({ name }), 60000, 'startNew');
    createdKernelIds.add(kernel.id);
    await waitReady(kernel);
    await fn(kernel, manager);
  } finally {
    if (kernel && !kernel.isDisposed) {
      try {
        await withTimeout(kernel.shutdown(), STEP_MS, 'shutdown');
        createdKernelIds.delete(kernel.id);
      } catch (e) {
        console.log(`  (cleanup shutdown failed: ${e.message})`);
      }
    }
    manager.dispose();
  }
}

// Runs the registered tests (those the arguments select), shuts down what a failed one left,
// prints the count and exits.
export async function runTests() {
  const globalTimer = setTimeout(() => {
    console.log(`FAIL global timeout of ${GLOBAL_TIMEOUT_MS} ms exceeded`);
    console.log(`${passed} passed, ${failed + 1} failed`);
    process.exit(1);
  }, GLOBAL_TIMEOUT_MS);
  process.on('unhandledRejection', e => {
    console.log(`unhandled rejection: ${e && e.stack ? e.stack : e}`);
  });
  console.log(`target ${BASE_URL}`);
  for (const t of tests) {
    if (selectors.length && !selectors.some(sel => t.name.includes(sel))) continue;
    const t0 = Date.now();
    try {
      await t.fn();
      passed++;
      console.log(`PASS ${t.name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${t.name} (${((Date.now() - t0) / 1000).toFixed(1)} s): ${e && e.stack ? e.stack : e}`);
    }
  }
  // Anything a failed test left behind.
  for (const id of createdKernelIds) {
    try {
      await withTimeout(KernelAPI.shutdownKernel(id, settings('v1')), STEP_MS, 'cleanup');
    } catch (e) { /* already gone */ }
  }
  console.log(`${passed} passed, ${failed} failed`);
  clearTimeout(globalTimer);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}
