// End-to-end test of Callisto's web UI (web/) in headless Debian Chromium, driven by
// playwright-core. Reads CALLISTO_URL and CALLISTO_TOKEN of a server started with
// --web-root=<repo>/web; exits 0 only when every test passed, and prints "N passed, M failed".
//
//   CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T node web_ui_test.mjs
//
// CALLISTO_CHROMIUM overrides the browser (default /usr/bin/chromium, Debian's package);
// CALLISTO_E2E_SCREENSHOT the screenshot path (default: a file in the temp directory).

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const BASE_URL = (process.env.CALLISTO_URL || 'http://127.0.0.1:8888').replace(/\/+$/, '');
const TOKEN = process.env.CALLISTO_TOKEN || '';
const CHROMIUM = process.env.CALLISTO_CHROMIUM || '/usr/bin/chromium';
const GLOBAL_TIMEOUT_MS = Number(process.env.CALLISTO_E2E_BROWSER_TIMEOUT_MS || 180000);
const STEP_MS = 30000;
const SLOW_MS = 90000;  // kernel start, first matplotlib/pandas import on a loaded machine
const SCREENSHOT = process.env.CALLISTO_E2E_SCREENSHOT ||
  path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'callisto-web-ui-')), 'web_ui.png');

let passed = 0;
let failed = 0;
let browser = null;
let page = null;
let kernelId = null;
const createdKernels = new Set();
const pageErrors = [];
const scripts = [];  // every .js the page loaded: {url, status, type}
const failedScripts = [];  // .js requests that got no response at all
const externalRequests = [];

const globalTimer = setTimeout(async () => {
  console.log(`FAIL global timeout of ${GLOBAL_TIMEOUT_MS} ms exceeded`);
  await withTimeout(cleanup(), 15000, 'cleanup').catch(e => console.log(`cleanup: ${e.message}`));
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
}, GLOBAL_TIMEOUT_MS);

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
  if (!cond) throw new Error(what + (detail === undefined ? '' : `: ${JSON.stringify(detail)}`));
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

async function rest(method, urlPath, body) {
  const res = await withTimeout(fetch(BASE_URL + urlPath, {
    method,
    headers: { Authorization: `token ${TOKEN}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  }), STEP_MS, `${method} ${urlPath}`);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function test(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    passed++;
    console.log(`PASS ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name} (${Date.now() - t0} ms): ${e.stack || e.message}`);
  }
}

// The page's ES modules, found by following the import statements from app.js on the server:
// the test then needs no list of module names to keep in step with web/.
async function moduleGraph() {
  const seen = new Set();
  const queue = [`${BASE_URL}/app.js`];
  while (queue.length) {
    const url = queue.shift();
    if (seen.has(url)) continue;
    seen.add(url);
    const res = await withTimeout(fetch(url), STEP_MS, `GET ${url}`);
    check(res.ok, `${url} answers 200`, res.status);
    const src = await res.text();
    const re = /^\s*(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm;
    for (let m; (m = re.exec(src));) queue.push(new URL(m[1] ?? m[2], url).href);
  }
  return [...seen];
}

function needKernel() {
  check(kernelId !== null, 'no kernel was started through the UI');
}

// Types code into the editor, runs it with Shift+Enter and returns the new cell's locator;
// waits until the cell is finished unless told not to.
async function runCell(code, { wait = true, ms = STEP_MS } = {}) {
  const cells = page.locator('#log .cell');
  const n = await cells.count();
  const editor = page.locator('#code');
  await page.locator('#run:not([disabled])').waitFor({ timeout: STEP_MS });
  await editor.fill(code);
  await editor.press('Shift+Enter');
  const cell = cells.nth(n);
  await cell.waitFor({ timeout: 5000 });
  check(await editor.inputValue() === '', 'the editor is cleared after running');
  if (wait) await waitDone(cell, ms);
  return cell;
}

async function waitDone(cell, ms = STEP_MS) {
  const msgId = await cell.getAttribute('data-msg-id');
  await page.locator(`#log .cell[data-msg-id="${msgId}"]:not([data-state="running"])`)
    .waitFor({ timeout: ms });
}

async function cleanup() {
  for (const id of createdKernels) {
    try {
      const r = await rest('DELETE', `/api/kernels/${id}`);
      if (r.status !== 204 && r.status !== 404) console.log(`cleanup: DELETE ${id} -> ${r.status}`);
    } catch (e) {
      console.log(`cleanup: DELETE ${id}: ${e.message}`);
    }
  }
  createdKernels.clear();
  if (browser) {
    const b = browser;
    browser = null;
    await b.close().catch(() => {});
  }
}

async function main() {
  browser = await withTimeout(chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--disable-quic', '--no-first-run'],
  }), 60000, 'launching Chromium');
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  page = await context.newPage();
  page.setDefaultTimeout(STEP_MS);
  page.on('pageerror', e => pageErrors.push(`pageerror: ${e.message}`));
  page.on('console', m => { if (m.type() === 'error') pageErrors.push(`console: ${m.text()}`); });
  page.on('response', r => {
    if (r.url().endsWith('.js')) scripts.push({ url: r.url(), status: r.status(),
                                                type: r.headers()['content-type'] || '' });
  });
  page.on('requestfailed', r => {
    if (new URL(r.url()).pathname.endsWith('.js'))
      failedScripts.push(`${r.url()}: ${r.failure()?.errorText}`);
  });
  page.on('request', r => {
    const u = r.url();
    if (!u.startsWith(BASE_URL + '/') && !u.startsWith('data:') && !u.startsWith('about:'))
      externalRequests.push(u);
  });

  await test('the page loads, takes the token from the URL and hides it', async () => {
    const res = await page.goto(`${BASE_URL}/?token=${encodeURIComponent(TOKEN)}`);
    check(res && res.status() === 200, 'GET / answers 200', res && res.status());
    // The first load carries ?token=: no Referer may take it anywhere, and no one may frame
    // the page. The CSP header must allow all the page uses: a violation is a console error.
    const h = res.headers();
    check(h['referrer-policy'] === 'no-referrer', 'Referrer-Policy: no-referrer', h);
    check(h['x-content-type-options'] === 'nosniff', 'nosniff', h);
    check((h['content-security-policy'] || '').includes("frame-ancestors 'none'"),
          'a CSP header that forbids framing', h);
    // The page is ES modules (app.js and js/*.js): each one arrives, as JavaScript, and none
    // fails to load or link (a missing export or a MIME type refused is a page/console error).
    // By the load event goto waited for, every module has run or failed: check before the UI.
    const modules = await moduleGraph();
    check(modules.length >= 2, 'app.js imports its modules', modules);
    const loaded = new Set(scripts.map(s => s.url));
    check(modules.every(u => loaded.has(u)), 'every module app.js imports was loaded',
          { missing: modules.filter(u => !loaded.has(u)) });
    for (const s of scripts)
      check(s.status === 200 && s.type.startsWith('text/javascript'),
            `${s.url} answers 200 as text/javascript`, s);
    check(failedScripts.length === 0, 'no module request failed', failedScripts);
    check(pageErrors.length === 0, 'no page errors while loading', pageErrors);
    await page.locator('#app').waitFor({ state: 'visible' });
    check(!page.url().includes('token'), 'the token is stripped from the address bar', page.url());
    const stored = await page.evaluate(() => sessionStorage.getItem('callisto.token'));
    check(stored === TOKEN, 'the token is kept in sessionStorage');
    await page.locator('#spec-select option[value="python3"]').waitFor({ state: 'attached' });
    check(await page.locator('#kernel-status').getAttribute('data-state') === 'none',
          'no kernel is attached yet');
  });

  await test('a wrong token brings up the token form', async () => {
    const other = await page.context().newPage();
    try {
      await other.goto(`${BASE_URL}/?token=not-the-token`);
      await other.locator('#token-panel').waitFor({ state: 'visible' });
      check((await other.locator('#token-error').textContent()).includes('refused'),
            'the form says the token was refused');
    } finally {
      await other.close();
    }
  });

  await test('starts a kernel through the UI and connects', async () => {
    const before = new Set((await rest('GET', '/api/kernels')).body.map(k => k.id));
    await page.locator('#start-kernel').click();
    const handle = await page.waitForFunction(() => window.callistoDebug.kernelId, null,
                                              { timeout: SLOW_MS });
    kernelId = await handle.jsonValue();
    const after = (await rest('GET', '/api/kernels')).body.map(k => k.id);
    for (const id of after) if (!before.has(id)) createdKernels.add(id);
    check(createdKernels.has(kernelId), 'the UI started a new kernel', { kernelId, after });
    await page.locator('#conn-state[data-state="connected"]').waitFor({ timeout: SLOW_MS });
    await page.locator('#kernel-status[data-state="idle"]').waitFor({ timeout: SLOW_MS });
    await page.locator(`#kernel-list li.current[data-kernel-id="${kernelId}"]`).waitFor();
    await page.locator('#kernel-info', { hasText: 'python' }).waitFor();
  });

  await test('print(1+1) shows 2', async () => {
    needKernel();
    const cell = await runCell('print(1+1)');
    check(await cell.getAttribute('data-state') === 'done', 'the cell finished ok');
    const out = await cell.locator('.out-stream.stdout').textContent();
    check(out.trim() === '2', 'stdout is 2', out);
    check((await cell.locator('.count').textContent()).match(/^In \[\d+\]$/), 'execution count shown');
  });

  await test('a matplotlib plot shows as a PNG <img>', async () => {
    needKernel();
    const cell = await runCell(
      '%matplotlib inline\nimport matplotlib.pyplot as plt\n' +
      'plt.plot([1, 3, 2, 4]); plt.title("callisto"); plt.show()', { ms: SLOW_MS });
    const img = cell.locator('img.out-image');
    await img.waitFor();
    const src = await img.getAttribute('src');
    check(src.startsWith('data:image/png;base64,iVBOR'), 'the image is a PNG data URL', src.slice(0, 40));
    const size = await img.evaluate(i => (i.complete ? i.naturalWidth : 0));
    check(size > 100, 'the PNG decodes', size);
  });

  await test('a pandas DataFrame renders in a sandboxed iframe, not in the page', async () => {
    needKernel();
    const cell = await runCell(
      'import pandas as pd\npd.DataFrame({"x": [1, 2, 3], "y": ["a", "b", "<b>c</b>"]})', { ms: SLOW_MS });
    const frame = cell.locator('iframe.out-html');
    await frame.waitFor();
    check(await frame.getAttribute('sandbox') === '', 'the iframe is sandboxed with no permissions');
    check((await frame.getAttribute('srcdoc')).includes('<table'), 'the iframe holds the table');
    check(await page.locator('#log table').count() === 0, 'no kernel HTML in the page itself');
    const td = cell.frameLocator('iframe.out-html').locator('td', { hasText: '<b>c</b>' });
    await td.waitFor();
    check(await cell.locator('.out-result .prompt').textContent() !== '', 'Out[n] prompt shown');
  });

  await test('1/0 shows ZeroDivisionError with the traceback, without ANSI codes', async () => {
    needKernel();
    const cell = await runCell('1/0');
    check(await cell.getAttribute('data-state') === 'error', 'the cell is marked as an error');
    const text = await cell.locator('.out-error').textContent();
    check(text.includes('ZeroDivisionError'), 'the traceback names ZeroDivisionError', text);
    check(text.includes('1/0') || text.includes('division by zero'), 'the traceback has detail', text);
    check(!text.includes('\x1b') && !/\[\d+(;\d+)*m/.test(text), 'ANSI codes are converted', text);
  });

  await test("input('name? ') gets its answer through the prompt field", async () => {
    needKernel();
    const cell = await runCell("name = input('name? ')\nprint('hello, ' + name)", { wait: false });
    const form = cell.locator('.stdin-form');
    await form.waitFor();
    check((await form.locator('label').textContent()) === 'name? ', 'the prompt is shown');
    const field = form.locator('input');
    check(await field.evaluate(i => document.activeElement === i), 'the prompt field has focus');
    await field.fill('Callisto');
    await field.press('Enter');
    await waitDone(cell);
    check(await cell.locator('.stdin-form').count() === 0, 'the prompt field is gone');
    const out = await cell.locator('.cell-output').textContent();
    check(out.includes('hello, Callisto'), 'the kernel got the answer', out);
  });

  await test('Interrupt stops time.sleep(30) with KeyboardInterrupt', async () => {
    needKernel();
    const cell = await runCell('import time\ntime.sleep(30)', { wait: false });
    // Once execute_input arrived (the count is set) the code is running.
    await cell.locator('.count', { hasText: /In \[\d+\]/ }).waitFor();
    await page.locator('#kernel-status[data-state="busy"]').waitFor();
    await sleep(500);
    const t0 = Date.now();
    await page.locator('#interrupt').click();
    await waitDone(cell, 25000);
    check(Date.now() - t0 < 25000, 'the interrupt took effect before the sleep ended');
    const text = await cell.locator('.out-error').textContent();
    check(text.includes('KeyboardInterrupt'), 'the cell shows KeyboardInterrupt', text);
    await page.locator('#kernel-status[data-state="idle"]').waitFor();
  });

  await test('a frame the gateway rejects is shown as CallistoProtocolError', async () => {
    needKernel();
    const sent = await page.evaluate(() => window.callistoDebug.sendRaw('{"this is": not json'));
    check(sent, 'the raw frame was sent');
    const n = page.locator('.notice.error', { hasText: 'gateway rejected' });
    await n.waitFor();
    check(await page.locator('#conn-state').getAttribute('data-state') === 'connected',
          'the connection stays open');
  });

  await test('the UI reconnects after the WebSocket drops, and the kernel keeps its state', async () => {
    needKernel();
    await page.evaluate(() => window.callistoDebug.dropConnection());
    await page.locator('#conn-state[data-state="reconnecting"]').waitFor({ timeout: 5000 });
    await page.locator('.notice.warn', { hasText: 'Connection to the kernel lost' }).waitFor();
    await page.locator('#conn-state[data-state="connected"]').waitFor({ timeout: 20000 });
    await page.locator('.notice', { hasText: 'Reconnected' }).waitFor();
    const cell = await runCell('print(name * 2)');
    const out = await cell.locator('.out-stream').textContent();
    check(out.trim() === 'CallistoCallisto', 'variables survived the reconnect', out);
  });

  await test('screenshot', async () => {
    await page.screenshot({ path: SCREENSHOT });
    check(fs.statSync(SCREENSHOT).size > 10000, 'the screenshot was written');
    console.log(`screenshot: ${SCREENSHOT}`);
  });

  await test('Shut down deletes the kernel', async () => {
    needKernel();
    page.once('dialog', d => d.accept());
    await page.locator('#shutdown').click();
    await page.locator('#kernel-status[data-state="none"]').waitFor();
    await page.locator('.notice', { hasText: 'shut down' }).waitFor();
    let status = 0;
    for (let i = 0; i < 50; i++) {
      status = (await rest('GET', `/api/kernels/${kernelId}`)).status;
      if (status === 404) break;
      await sleep(200);
    }
    check(status === 404, 'the kernel is gone from the server', status);
    createdKernels.delete(kernelId);
    await page.locator(`#kernel-list li[data-kernel-id="${kernelId}"]`).waitFor({ state: 'detached' });
    check(await page.locator('#run').isDisabled(), 'Run is disabled with no kernel');
  });

  await test('the kernelspec list offers R: an ir kernel prints and plots in the same UI', async () => {
    await page.locator('#spec-select').selectOption('ir');
    const before = kernelId;
    await page.locator('#start-kernel').click();
    const handle = await page.waitForFunction(
      prev => {
        const id = window.callistoDebug.kernelId;
        return id && id !== prev ? id : null;
      }, before,
      { timeout: SLOW_MS });
    kernelId = await handle.jsonValue();
    createdKernels.add(kernelId);
    const started = await rest('GET', `/api/kernels/${kernelId}`);
    check(started.body.name === 'ir', 'an ir kernel started', started);
    await page.locator('#kernel-status[data-state="idle"]').waitFor({ timeout: SLOW_MS });
    await page.locator('#kernel-info', { hasText: /\bR\b/ }).waitFor({ timeout: SLOW_MS });
    const printed = await runCell('cat(6 * 7, "\\n")', { ms: SLOW_MS });
    check((await printed.locator('.out-stream.stdout').textContent()).trim() === '42', 'R printed 42');
    const plotted = await runCell('plot(1:10)', { ms: SLOW_MS });
    const img = plotted.locator('img.out-image');
    await img.waitFor();
    const size = await img.evaluate(i => (i.complete ? i.naturalWidth : 0));
    check(size > 100, "R's PNG plot decodes", size);
    const failed = await runCell('stop("from R")', { ms: SLOW_MS });
    check((await failed.textContent()).includes('from R'), "R's error is shown");
    const gone = await rest('DELETE', `/api/kernels/${kernelId}`);
    check(gone.status === 204, 'the R kernel is deleted', gone.status);
    createdKernels.delete(kernelId);
  });

  await test('no page errors and no requests outside the server', async () => {
    check(pageErrors.length === 0, 'page errors', pageErrors);
    check(failedScripts.length === 0, 'failed module requests', failedScripts);
    check(externalRequests.length === 0, 'external requests', externalRequests);
  });
}

try {
  await main();
} catch (e) {
  failed++;
  console.log(`FAIL setup: ${e.stack || e.message}`);
} finally {
  await withTimeout(cleanup(), 30000, 'cleanup').catch(e => console.log(`cleanup: ${e.message}`));
}
clearTimeout(globalTimer);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
