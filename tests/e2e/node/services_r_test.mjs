// End-to-end test of an R kernel (Debian's r-cran-irkernel, kernelspec `ir`) through
// @jupyterlab/services, the client library JupyterLab itself uses. Reads CALLISTO_URL and
// CALLISTO_TOKEN; exits 0 only when every test passed, and prints "N passed, M failed".
//
//   CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T node services_r_test.mjs [name-substring]
//
// The kernel test runs twice: with the v1.kernel.websocket.jupyter.org subprotocol (what
// @jupyterlab/services offers) and with the legacy JSON format (a WebSocket class that offers
// no subprotocol). IRkernel publishes a cell's value as display_data, not execute_result.

import services from '@jupyterlab/services';
import WebSocket from 'ws';

const { KernelManager, KernelAPI, KernelSpecAPI, ServerConnection } = services;

const BASE_URL = (process.env.CALLISTO_URL || 'http://127.0.0.1:8888').replace(/\/+$/, '');
const TOKEN = process.env.CALLISTO_TOKEN || '';
const GLOBAL_TIMEOUT_MS = Number(process.env.CALLISTO_E2E_NODE_TIMEOUT_MS || 180000);
const STEP_MS = 30000;
const KERNEL = 'ir';
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const selectors = process.argv.slice(2);

const globalTimer = setTimeout(() => {
  console.log(`FAIL global timeout of ${GLOBAL_TIMEOUT_MS} ms exceeded`);
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
}, GLOBAL_TIMEOUT_MS);

// The library appends a cache buster (?<ms>) to REST URLs and ?token= to the
// WebSocket URL; the server must accept both.
class LegacyWebSocket extends WebSocket {
  constructor(url, _protocols) {
    super(url); // offer no subprotocol: the server must fall back to legacy JSON
  }
}

function settings(protocol) {
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

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function check(cond, what, detail) {
  if (!cond) {
    throw new Error(what + (detail === undefined ? '' : `: ${JSON.stringify(detail)}`));
  }
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

// Execute code; collect iopub for this request; resolve with {reply, iopub}.
async function run(kernel, code, ms = STEP_MS) {
  const future = kernel.requestExecute({ code, stop_on_error: true });
  const iopub = [];
  future.onIOPub = msg => { iopub.push(msg); };
  const reply = await withTimeout(future.done, ms, `execute ${JSON.stringify(code)}`);
  return { reply, iopub, future };
}

const streamText = (iopub, name = 'stdout') => iopub
  .filter(m => m.header.msg_type === 'stream' && m.content.name === name)
  .map(m => m.content.text).join('');

// A kernel is usable once kernel_info answers over the WebSocket.
async function waitReady(kernel, ms = STEP_MS) {
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

let passed = 0;
let failed = 0;
const tests = [];
const test = (name, fn) => tests.push({ name, fn });
const createdKernelIds = new Set();

async function withKernel(protocol, fn) {
  const manager = new KernelManager({ serverSettings: settings(protocol) });
  let kernel;
  try {
    await withTimeout(manager.ready, STEP_MS, 'KernelManager ready');
    kernel = await withTimeout(manager.startNew({ name: KERNEL }), 60000, 'startNew');
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

test('kernelspec_ir', async () => {
  const specs = await withTimeout(KernelSpecAPI.getSpecs(settings('v1')), STEP_MS, 'getSpecs');
  check(specs.kernelspecs[KERNEL], 'ir listed', Object.keys(specs.kernelspecs));
  check(specs.kernelspecs[KERNEL].language === 'R', 'language R', specs.kernelspecs[KERNEL]);
});

for (const protocol of ['v1', 'legacy']) {
  test(`r_execute_${protocol}`, () => withKernel(protocol, async kernel => {
    const selected = kernel._ws ? kernel._ws.protocol : '?';
    console.log(`  WebSocket subprotocol selected: ${JSON.stringify(selected)}`);
    if (protocol === 'v1') {
      check(selected === 'v1.kernel.websocket.jupyter.org', 'server selected v1', selected);
    } else {
      check(selected === '', 'legacy connection has no subprotocol', selected);
    }
    const info = await waitReady(kernel);
    check(info.content.status === 'ok', 'kernel_info ok', info.content);
    check(info.content.language_info.name === 'R', 'an R kernel', info.content.language_info);
    const spec = await withTimeout(kernel.spec, STEP_MS, 'kernel.spec');
    check(spec && spec.name === KERNEL, 'kernel.spec', spec);

    const a = await run(kernel, 'cat("hello from R\\n")');
    check(a.reply.content.status === 'ok', 'cat status', a.reply.content);
    check(streamText(a.iopub) === 'hello from R\n', 'stdout stream', streamText(a.iopub));

    const b = await run(kernel, 'stop("x")');
    check(b.reply.content.status === 'error', 'error status', b.reply.content);
    const err = b.iopub.find(m => m.header.msg_type === 'error');
    check(err, 'iopub error', b.iopub.map(m => m.header.msg_type));
    check(err.content.evalue.includes('x'), 'evalue', err.content);
    check(Array.isArray(err.content.traceback) && err.content.traceback.join('\n').includes('stop("x")'),
      'the traceback shows the call', err.content.traceback);

    await sleep(300);
    const c = await run(kernel, 'plot(1:3)');
    check(c.reply.content.status === 'ok', 'plot status', c.reply.content);
    const pngs = c.iopub.filter(m => m.header.msg_type === 'display_data' && m.content.data['image/png']);
    check(pngs.length === 1, 'one display_data with image/png', c.iopub.map(m => m.header.msg_type));
    const png = Buffer.from(pngs[0].content.data['image/png'], 'base64');
    check(png.subarray(0, 8).equals(PNG_SIGNATURE), 'it decodes to a PNG', png.subarray(0, 8));

    const d = await run(kernel, 'cat(6 * 7, "\\n")');
    check(streamText(d.iopub) === '42 \n', 'the kernel goes on after the plot', streamText(d.iopub));
  }));
}

test('r_shutdown', async () => {
  const s = settings('v1');
  const model = await withTimeout(KernelAPI.startNew({ name: KERNEL }, s), 60000, 'KernelAPI.startNew');
  createdKernelIds.add(model.id);
  check(typeof model.id === 'string' && model.name === KERNEL, 'model', model);
  const running = await withTimeout(KernelAPI.listRunning(s), STEP_MS, 'listRunning');
  check(running.some(k => k.id === model.id), 'listed', running.map(k => k.id));
  await withTimeout(KernelAPI.shutdownKernel(model.id, s), STEP_MS, 'shutdownKernel');
  createdKernelIds.delete(model.id);
  const gone = await withTimeout(KernelAPI.getKernelModel(model.id, s), STEP_MS, 'getKernelModel after');
  check(gone === undefined, 'gone after shutdown (404)', gone);
  const again = await withTimeout(KernelAPI.listRunning(s), STEP_MS, 'listRunning after');
  check(!again.some(k => k.id === model.id), 'not listed after shutdown');
});

async function main() {
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

process.on('unhandledRejection', e => { console.log(`unhandled rejection: ${e && e.stack ? e.stack : e}`); });
main();
