// The raw Jupyter kernel view: start, print, plot, a DataFrame, a traceback, input(),
// interrupt, a rejected frame, reconnect, a log per kernel, replay after a reload, shut down,
// and an R kernel in the same view.

import { acceptNextDialog, check, newDebugId, poll, rest, sleep, SLOW_MS, STEP_MS } from '../lib/harness.mjs';

const visibleLog = page => page.locator('#kn-logs .kernel-log:not([hidden])');

// Types code into the editor, runs it with Shift+Enter and returns the new cell's locator;
// waits until the cell is finished unless told not to.
async function runCell(page, code, { wait = true, ms = STEP_MS } = {}) {
  const cells = visibleLog(page).locator('.cell');
  const n = await cells.count();
  const editor = page.locator('#kn-code');
  await page.locator('#kn-run:not([disabled])').waitFor({ timeout: STEP_MS });
  await editor.fill(code);
  await editor.press('Shift+Enter');
  await cells.nth(n).waitFor({ timeout: 5000 });
  const msgId = await cells.nth(n).getAttribute('data-msg-id');
  const cell = visibleLog(page).locator(`.cell[data-msg-id="${msgId}"]`);
  check(await editor.inputValue() === '', 'the editor is cleared after running');
  if (wait) await waitDone(cell, ms);
  return cell;
}

const waitDone = (cell, ms = STEP_MS) =>
  poll(async () => (await cell.getAttribute('data-state')) !== 'running', ms, 'the cell to finish');

async function startKernel(h, spec) {
  const { page } = h;
  const id = await newDebugId(page, 'kernelId', async () => {
    await page.locator('#kn-spec').selectOption(spec);
    await page.locator('#kn-start').click();
  }, 'the UI to start a kernel');
  h.kernels.add(id);
  await page.locator('#kn-conn[data-state="connected"]').waitFor({ timeout: SLOW_MS });
  await page.locator('#kn-state[data-state="idle"]').waitFor({ timeout: SLOW_MS });
  return id;
}

export async function kernelsSuite(h) {
  const { page } = h;
  let kernelId = null;
  const needKernel = () => check(kernelId !== null, 'no kernel was started through the UI');

  await h.test('kernels: starts a kernel through the UI and connects', async () => {
    await page.locator('#views-nav a[data-view="kernels"]').click();
    await page.locator('#view-kernels').waitFor({ state: 'visible' });
    kernelId = await startKernel(h, 'python3');
    await page.locator(`#kn-list li.current[data-kernel-id="${kernelId}"]`).waitFor();
    await page.locator('#kn-info', { hasText: 'python' }).waitFor();
    check(page.url().endsWith('#kernels'), 'the view is in the URL hash (no token there)', page.url());
  });

  await h.test('kernels: print(1+1) shows 2, with the count and elapsed time', async () => {
    needKernel();
    const cell = await runCell(page, 'print(1+1)');
    check(await cell.getAttribute('data-state') === 'done', 'the cell finished ok');
    check((await cell.locator('.out-stream.stdout').textContent()).trim() === '2', 'stdout is 2');
    check(/^In \[\d+\]$/.test(await cell.locator('.count').textContent()), 'execution count shown');
    check(/ran \d/.test(await cell.locator('.clock').textContent()), 'elapsed time shown');
  });

  await h.test('kernels: a matplotlib plot shows as a PNG <img>', async () => {
    needKernel();
    const cell = await runCell(page,
      '%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 3, 2, 4]); plt.show()', { ms: SLOW_MS });
    const img = cell.locator('img.out-image');
    await img.waitFor();
    const width = await poll(() => img.evaluate(i => (i.complete ? i.naturalWidth : 0)), 5000, 'the PNG to decode');
    check(width > 100, 'the PNG decodes', width);
  });

  await h.test('kernels: a pandas DataFrame renders in a sandboxed iframe, not in the page', async () => {
    needKernel();
    const cell = await runCell(page,
      'import pandas as pd\npd.DataFrame({"x": [1, 2, 3], "y": ["a", "b", "<b>c</b>"]})', { ms: SLOW_MS });
    const frame = cell.locator('iframe.out-html');
    await frame.waitFor();
    check(await frame.getAttribute('sandbox') === '', 'the iframe is sandboxed with no permissions');
    check((await frame.getAttribute('srcdoc')).includes('<table'), 'the iframe holds the table');
    check(await visibleLog(page).locator('table').count() === 0, 'no kernel HTML in the page itself');
    await cell.frameLocator('iframe.out-html').locator('td', { hasText: '<b>c</b>' }).waitFor();
    check(await cell.locator('.out-result .prompt').textContent() !== '', 'Out[n] prompt shown');
  });

  await h.test('kernels: 1/0 shows ZeroDivisionError with a coloured traceback', async () => {
    needKernel();
    const cell = await runCell(page, '1/0');
    check(await cell.getAttribute('data-state') === 'error', 'the cell is marked as an error');
    const text = await cell.locator('.out-error').textContent();
    check(text.includes('ZeroDivisionError'), 'the traceback names ZeroDivisionError', text);
    check(!text.includes('\x1b') && !/\[\d+(;\d+)*m/.test(text), 'ANSI codes are converted', text);
    check(await cell.locator('.out-error span[class*="ansi-fg-"]').count() > 0, 'in colour');
  });

  await h.test("kernels: input('name? ') gets its answer through the prompt field", async () => {
    needKernel();
    const cell = await runCell(page, "name = input('name? ')\nprint('hello, ' + name)", { wait: false });
    const form = cell.locator('.stdin-form');
    await form.waitFor();
    check((await form.locator('label').textContent()) === 'name? ', 'the prompt is shown');
    const field = form.locator('input');
    check(await field.evaluate(i => document.activeElement === i), 'the prompt field has focus');
    await field.fill('Callisto');
    await field.press('Enter');
    await waitDone(cell);
    check(await cell.locator('.stdin-form').count() === 0, 'the prompt field is gone');
    check((await cell.locator('.cell-output').textContent()).includes('hello, Callisto'), 'the kernel got the answer');
  });

  await h.test('kernels: Interrupt stops time.sleep(30) with KeyboardInterrupt', async () => {
    needKernel();
    const cell = await runCell(page, 'import time\ntime.sleep(30)', { wait: false });
    // Once execute_input arrived (the count is set) the code is running.
    await cell.locator('.count', { hasText: /In \[\d+\]/ }).waitFor();
    await page.locator('#kn-state[data-state="busy"]').waitFor();
    await sleep(500);
    await page.locator('#kn-interrupt').click();
    await waitDone(cell, 25_000);
    check((await cell.locator('.out-error').textContent()).includes('KeyboardInterrupt'), 'KeyboardInterrupt shown');
    await page.locator('#kn-state[data-state="idle"]').waitFor();
  });

  await h.test('kernels: a frame the gateway rejects is shown as CallistoProtocolError', async () => {
    needKernel();
    check(await page.evaluate(() => window.callistoDebug.sendRaw('{"this is": not json')), 'the raw frame was sent');
    await visibleLog(page).locator('.notice.error', { hasText: 'gateway rejected' }).waitFor();
    check(await page.locator('#kn-conn').getAttribute('data-state') === 'connected', 'the connection stays open');
  });

  await h.test('kernels: the UI reconnects after the WebSocket drops, and the kernel keeps its state', async () => {
    needKernel();
    await page.evaluate(() => window.callistoDebug.dropConnection());
    await page.locator('#kn-conn[data-state="reconnecting"]').waitFor({ timeout: 5000 });
    await visibleLog(page).locator('.notice.warn', { hasText: 'Connection to the kernel lost' }).waitFor();
    await page.locator('#kn-conn[data-state="connected"]').waitFor({ timeout: 20_000 });
    await visibleLog(page).locator('.notice', { hasText: 'Reconnected' }).waitFor();
    const cell = await runCell(page, 'print(name * 2)');
    check((await cell.locator('.out-stream').textContent()).trim() === 'CallistoCallisto', 'variables survived the reconnect');
  });

  await h.test("kernels: a second kernel's cells go to its own log, not the first's", async () => {
    needKernel();
    const first = kernelId;
    const second = await startKernel(h, 'python3');
    check(await visibleLog(page).locator('.cell').count() === 0, "the second kernel's log starts empty");
    const cell = await runCell(page, 'print("second kernel")', { ms: SLOW_MS });
    check((await cell.textContent()).includes('second kernel'), 'ran on the second kernel');
    await page.locator(`#kn-list li[data-kernel-id="${first}"] button.attach`).click();
    await page.locator(`#kn-logs .kernel-log[data-kernel-id="${first}"]:not([hidden])`).waitFor();
    await page.locator('#kn-conn[data-state="connected"]').waitFor({ timeout: SLOW_MS });
    const text = await visibleLog(page).textContent();
    check(!text.includes('second kernel'), "the second kernel's output is not in the first's log");
    check(text.includes('CallistoCallisto'), "the first kernel's cells are still there");
    const gone = await rest('DELETE', `/api/kernels/${second}`);
    check(gone.status === 204, 'the second kernel is deleted', gone.status);
    h.kernels.delete(second);
  });

  await h.test('kernels: after a reload the output is replayed (?since=) into the log', async () => {
    needKernel();
    await page.reload();
    await page.locator('#view-kernels').waitFor({ state: 'visible' });
    await page.locator('#kn-conn[data-state="connected"]').waitFor({ timeout: SLOW_MS });
    const log = page.locator(`#kn-logs .kernel-log[data-kernel-id="${kernelId}"]:not([hidden])`);
    await log.locator('.cell', { hasText: 'CallistoCallisto' }).waitFor();
    check(await log.locator('.cell', { hasText: 'print(1+1)' }).count() === 1, 'the code of an earlier cell is back');
    check(await log.locator('.cell', { hasText: 'from another client' }).count() === 0,
          "this tab's own cells are not labelled as another client's");
  });

  await h.test('kernels: Shut down deletes the kernel', async () => {
    needKernel();
    acceptNextDialog(page);
    await page.locator('#kn-shutdown').click();
    await page.locator('#kn-state[data-state="none"]').waitFor();
    await page.locator('#kn-logs > .notice', { hasText: 'shut down' }).waitFor();
    const status = await poll(async () => {
      const s = (await rest('GET', `/api/kernels/${kernelId}`)).status;
      return s === 404 ? s : null;
    }, 10_000, 'the kernel to go');
    check(status === 404, 'the kernel is gone from the server', status);
    h.kernels.delete(kernelId);
    await page.locator(`#kn-list li[data-kernel-id="${kernelId}"]`).waitFor({ state: 'detached' });
    check(await page.locator('#kn-run').isDisabled(), 'Run is disabled with no kernel');
  });

  await h.test('kernels: the kernelspec list offers R: an ir kernel prints and plots in the same UI', async () => {
    kernelId = await startKernel(h, 'ir');
    const started = await rest('GET', `/api/kernels/${kernelId}`);
    check(started.body.name === 'ir', 'an ir kernel started', started);
    await page.locator('#kn-info', { hasText: /\bR\b/ }).waitFor({ timeout: SLOW_MS });
    const printed = await runCell(page, 'cat(6 * 7, "\\n")', { ms: SLOW_MS });
    check((await printed.locator('.out-stream.stdout').textContent()).trim() === '42', 'R printed 42');
    const plotted = await runCell(page, 'plot(1:10)', { ms: SLOW_MS });
    const img = plotted.locator('img.out-image');
    await img.waitFor();
    const width = await poll(() => img.evaluate(i => (i.complete ? i.naturalWidth : 0)), 5000, 'the PNG to decode');
    check(width > 100, "R's PNG plot decodes", width);
    const failed = await runCell(page, 'stop("from R")', { ms: SLOW_MS });
    check((await failed.textContent()).includes('from R'), "R's error is shown");
    const gone = await rest('DELETE', `/api/kernels/${kernelId}`);
    check(gone.status === 204, 'the R kernel is deleted', gone.status);
    h.kernels.delete(kernelId);
  });
}
