// What the @jupyterlab/services suites share (services_test.mjs, services_r_test.mjs): the
// server's settings in both WebSocket formats, bounded waits, executing code, a kernel per test
// shut down afterwards, a kernel's start, listing and shutdown by REST, over the runner all
// Node e2e scripts share (runner.mjs: it reads CALLISTO_URL, CALLISTO_TOKEN and
// CALLISTO_E2E_NODE_TIMEOUT_MS; the command line's arguments select tests by name substring).

import services from '@jupyterlab/services';
import WebSocket from 'ws';
import {
  BASE_URL, TOKEN, check, runTests as runRegisteredTests, sleep, test, withTimeout,
} from './runner.mjs';

export const { KernelManager, KernelAPI, KernelSpecAPI, ServerConnection } = services;

export { BASE_URL, check, sleep, test, withTimeout };
export const STEP_MS = 30000;
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

// A kernel of `name` started through KernelAPI (REST only): listed, then `whileRunning(model, s)`,
// then shut down: gone (404) and no longer listed.
export async function checkStartListShutdown(name, whileRunning = async () => {}) {
  const s = settings('v1');
  const model = await withTimeout(KernelAPI.startNew({ name }, s), 60000, 'KernelAPI.startNew');
  createdKernelIds.add(model.id);
  check(typeof model.id === 'string' && model.name === name, 'model', model);
  const running = await withTimeout(KernelAPI.listRunning(s), STEP_MS, 'listRunning');
  check(running.some(k => k.id === model.id), 'listed', running.map(k => k.id));
  await whileRunning(model, s);
  await withTimeout(KernelAPI.shutdownKernel(model.id, s), STEP_MS, 'shutdownKernel');
  createdKernelIds.delete(model.id);
  const gone = await withTimeout(KernelAPI.getKernelModel(model.id, s), STEP_MS, 'getKernelModel after');
  check(gone === undefined, 'gone after shutdown (404)', gone);
  const again = await withTimeout(KernelAPI.listRunning(s), STEP_MS, 'listRunning after');
  check(!again.some(k => k.id === model.id), 'not listed after shutdown');
}

// Runs the registered tests (those the arguments select), shutting down what a failed one left.
export function runTests() {
  return runRegisteredTests({
    timeoutMs: 180000,
    afterAll: async () => {
      for (const id of createdKernelIds) {
        try {
          await withTimeout(KernelAPI.shutdownKernel(id, settings('v1')), STEP_MS, 'cleanup');
        } catch (e) { /* already gone */ }
      }
    },
  });
}
