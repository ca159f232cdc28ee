// The playground on /v1 contexts: create, run cells as executions (print, a chart, a
// DataFrame, a traceback, Markdown and JSON, a timeout), keys, interrupt, restart, folding,
// a log per context, closing; snapshot, fork, pause, resume and restore.

import { acceptNextDialog, check, newDebugId, poll, rest, SLOW_MS, STEP_MS } from '../lib/harness.mjs';

const FINAL = ['ok', 'error', 'timeout', 'interrupted', 'refused'];

const visibleLog = page => page.locator('#pg-logs .context-log:not([hidden])');

// Types code into the editor and runs it (Shift+Enter, or Ctrl+Enter to keep the code); returns
// a locator of the new cell by its execution id, waiting for the end unless told not to.
export async function runCell(page, code, { wait = true, ms = STEP_MS, keep = false, timeout = '' } = {}) {
  const cells = visibleLog(page).locator('.cell');
  const n = await cells.count();
  await page.locator('#pg-run:not([disabled])').waitFor({ timeout: SLOW_MS });
  await page.locator('#pg-timeout').fill(String(timeout));
  const editor = page.locator('#pg-code');
  await editor.fill(code);
  await editor.press(keep ? 'Control+Enter' : 'Shift+Enter');
  await cells.nth(n).waitFor({ timeout: 5000 });
  const id = await poll(() => cells.nth(n).getAttribute('data-execution-id'), STEP_MS, 'the execution id');
  const cell = visibleLog(page).locator(`.cell[data-execution-id="${id}"]`);
  if (wait) await waitFinal(cell, ms);
  return cell;
}

export async function waitFinal(cell, ms = STEP_MS) {
  return poll(async () => {
    const s = await cell.getAttribute('data-state');
    return FINAL.includes(s) ? s : null;
  }, ms, 'the cell to finish');
}

async function createContext(h, { kernel = 'python3', policy = '' } = {}) {
  const { page } = h;
  const id = await newDebugId(page, 'contextId', async () => {
    await page.locator('#pg-kernel').selectOption(kernel);
    await page.locator('#pg-policy').selectOption(policy);
    await page.locator('#pg-create-button').click();
  }, 'a new context to be selected');
  h.contexts.add(id);
  await page.locator('#pg-conn[data-state="connected"]').waitFor({ timeout: SLOW_MS });
  return id;
}

export async function playgroundSuite(h) {
  const { page } = h;

  await h.test('creates a context with a chosen kernel and policy, and selects it', async () => {
    await page.locator('#views-nav a[data-view="playground"]').click();
    const id = await createContext(h, { kernel: 'python3', policy: 'reuse' });
    const { body } = await rest('GET', `/v1/contexts/${id}`);
    check(body.kernel === 'python3' && body.policy === 'reuse', 'the context was made as chosen', body);
    h.shared.contextId = id;
    h.shared.kernelId = body.kernel_id;
    await page.locator(`#pg-contexts li.current[data-context-id="${id}"]`).waitFor();
    check((await page.locator('#pg-title').textContent()).includes('python3'), 'the bar names the kernel');
    await page.locator('#files-status', { hasText: 'No files yet' }).waitFor();
  });

  await h.test('a cell that prints shows stdout, In [n], its status and elapsed time', async () => {
    const cell = await runCell(page, 'print("hello from callisto")', { ms: SLOW_MS });
    check(await cell.getAttribute('data-state') === 'ok', 'the execution ended ok');
    const out = await cell.locator('.out-stream.stdout').textContent();
    check(out.trim() === 'hello from callisto', 'stdout shown', out);
    check(/^In \[\d+\]$/.test(await cell.locator('.count').textContent()), 'the execution count shown');
    check(/ran \d/.test(await cell.locator('.clock').textContent()), 'the time it ran is shown');
    check(await cell.locator('.status-badge').textContent() === 'ok', 'the final status is shown');
    check(await page.locator('#pg-code').inputValue() === '', 'Shift+Enter clears the editor');
  });

  await h.test('a matplotlib chart is rendered as an image', async () => {
    const cell = await runCell(page,
      'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2, 4]); plt.title("callisto"); plt.show()', { ms: SLOW_MS });
    check(await cell.getAttribute('data-state') === 'ok', 'the cell ended ok');
    const img = cell.locator('img.out-image');
    await img.waitFor();
    const src = await img.getAttribute('src');
    check(src.startsWith('data:image/png;base64,iVBOR'), 'a PNG data URL', src.slice(0, 40));
    const width = await poll(() => img.evaluate(i => (i.complete ? i.naturalWidth : 0)), 5000, 'the PNG to decode');
    check(width > 0, 'the PNG decodes (naturalWidth > 0)', width);
  });

  await h.test('a pandas DataFrame renders as a table in a sandboxed iframe', async () => {
    const cell = await runCell(page,
      'import pandas as pd\npd.DataFrame({"x": [1, 2, 3], "y": ["a", "b", "<b>c</b>"]})', { ms: SLOW_MS });
    const frame = cell.locator('iframe.out-html');
    await frame.waitFor();
    check(await frame.getAttribute('sandbox') === '', 'the iframe is sandboxed with no permissions');
    await cell.frameLocator('iframe.out-html').locator('table td', { hasText: '<b>c</b>' }).waitFor();
    check(await visibleLog(page).locator('table').count() === 0, 'no kernel HTML in the page itself');
  });

  await h.test('an exception shows its traceback in colour', async () => {
    const cell = await runCell(page, 'def f():\n    return 1/0\nf()');
    check(await cell.getAttribute('data-state') === 'error', 'the status is error');
    const tb = cell.locator('.out-error');
    const text = await tb.textContent();
    check(text.includes('ZeroDivisionError') && text.includes('division by zero'), 'the traceback', text);
    check(!text.includes('\x1b') && !/\[\d+(;\d+)*m/.test(text), 'no raw ANSI codes', text);
    const coloured = await tb.locator('span').evaluateAll(spans =>
      spans.filter(s => /\bansi-(fg|bg)-\d+\b/.test(s.className) || s.style.color).length);
    check(coloured >= 3, 'coloured spans (ANSI SGR codes as classes or colours)', coloured);
  });

  await h.test('Markdown is rendered safely and JSON is folded', async () => {
    const cell = await runCell(page,
      'from IPython.display import Markdown, JSON, display\n' +
      'display(Markdown("# Results\\n\\nSome **bold** and `code`.\\n\\n| a | b |\\n|---|--:|\\n| 1 | 2 |\\n\\n' +
      '<img src=x onerror=alert(1)> [ok](https://example.org) [bad](javascript:alert(1))"))\n' +
      'display(JSON({"a": [1, 2, 3], "b": {"c": "d"}}))');
    const md = cell.locator('.out-markdown');
    check(await md.locator('h1').textContent() === 'Results', 'a heading');
    check(await md.locator('strong').textContent() === 'bold', 'bold');
    check(await md.locator('table td').count() === 2, 'a table');
    check(await md.locator('img').count() === 0, 'raw HTML stays text');
    check((await md.textContent()).includes('<img src=x'), 'the HTML is shown as text');
    check(await md.locator('a[href^="javascript"]').count() === 0, 'no javascript: link');
    check(await md.locator('a[href="https://example.org"]').count() === 1, 'the https link');
    const json = cell.locator('.out-json');
    check(await json.locator('details').count() >= 2, 'JSON as a tree of details');
    check(await json.locator('details details').first().getAttribute('open') === null, 'nested levels folded');
  });

  await h.test('long output folds and unfolds', async () => {
    const cell = await runCell(page, 'for i in range(200): print("line", i)');
    const toggle = cell.locator('.fold-toggle');
    await toggle.waitFor();
    check((await toggle.textContent()).includes('200'), 'the toggle says how many lines', await toggle.textContent());
    check(await cell.locator('.foldable.folded').count() === 1, 'folded at first');
    await toggle.click();
    check(await cell.locator('.foldable.folded').count() === 0, 'unfolded on click');
  });

  await h.test('a cell that sleeps past its timeout ends "timed out", with the reason', async () => {
    const cell = await runCell(page, 'import time\ntime.sleep(30)', { timeout: 2, wait: false });
    await cell.locator('.status-badge', { hasText: 'running' }).waitFor();
    check(/running \d/.test(await cell.locator('.clock').textContent()), 'a running clock');
    check((await cell.locator('.cell-meta').textContent()).includes('timeout 2 s'), 'the timeout is shown');
    const state = await waitFinal(cell, 25_000);
    check(state === 'timeout', 'the status is timeout', state);
    check(await cell.locator('.status-badge').textContent() === 'timed out', 'says timed out');
    const reason = await cell.locator('.reason').textContent();
    check(reason.includes('Timed out after 2 s'), 'the reason is shown', reason);
    await page.locator('#pg-timeout').fill('');
  });

  await h.test('Ctrl+Enter runs and keeps the code; Esc interrupts', async () => {
    const code = 'import time\ntime.sleep(30)';
    const cell = await runCell(page, code, { keep: true, wait: false });
    check(await page.locator('#pg-code').inputValue() === code, 'the code stays in the editor');
    await cell.locator('.status-badge', { hasText: 'running' }).waitFor();
    await page.locator('#pg-code').press('Escape');
    const state = await waitFinal(cell, 25_000);
    check(state === 'interrupted' || state === 'error', 'the cell stopped', state);
    check((await cell.textContent()).includes('KeyboardInterrupt'), 'KeyboardInterrupt shown');
    await page.locator('#pg-code').fill('');
  });

  await h.test('Restart ends the running cell with state_preserved false, shown', async () => {
    await runCell(page, 'kept = 42');
    const cell = await runCell(page, 'import time\ntime.sleep(60)', { wait: false });
    await cell.locator('.status-badge', { hasText: 'running' }).waitFor();
    acceptNextDialog(page);
    await page.locator('#pg-restart').click();
    const state = await waitFinal(cell, SLOW_MS);
    check(state === 'interrupted', 'the running cell was interrupted', state);
    check(await cell.getAttribute('data-state-preserved') === 'false', 'state_preserved is false');
    check((await cell.locator('.reason').textContent()).includes('state lost'), 'the cell says the state is lost');
    await visibleLog(page).locator('.notice', { hasText: 'state_preserved: false' }).waitFor();
    const after = await runCell(page, 'print(kept)', { ms: SLOW_MS });
    check((await after.textContent()).includes('NameError'), 'the variables are gone after the restart');
  });

  await h.test('a second context keeps its own log; closing it removes it', async () => {
    const first = h.shared.contextId;
    const second = await createContext(h, { kernel: 'python3', policy: 'fresh' });
    check(second !== first, 'a new context');
    check(await visibleLog(page).locator('.cell').count() === 0, 'the new context starts with an empty log');
    const cell = await runCell(page, 'print("in the second context")', { ms: SLOW_MS });
    check((await cell.textContent()).includes('in the second context'), 'ran in the second context');
    await page.locator(`#pg-contexts li[data-context-id="${first}"] .item-main`).click();
    await page.locator(`#pg-logs .context-log[data-context-id="${first}"]:not([hidden])`).waitFor();
    const firstLog = await visibleLog(page).textContent();
    check(!firstLog.includes('in the second context'), "the second context's cells are not in the first's log");
    check(firstLog.includes('hello from callisto'), "the first context's cells are still there");
    acceptNextDialog(page);
    await page.locator(`#pg-contexts li[data-context-id="${second}"] button[aria-label^="Close"]`).click();
    await page.locator(`#pg-contexts li[data-context-id="${second}"]`).waitFor({ state: 'detached' });
    const gone = await rest('GET', `/v1/contexts/${second}`);
    check(gone.status === 404, 'the context is deleted on the server', gone.status);
    h.contexts.delete(second);
    check(await page.evaluate(() => window.callistoDebug.contextId) === first, 'the first context stays selected');
  });

  await h.test('the events connection comes back after a drop', async () => {
    await page.evaluate(() => window.callistoDebug.dropEvents());
    await visibleLog(page).locator('.notice', { hasText: 'Reconnected' }).waitFor({ timeout: 20_000 });
    const cell = await runCell(page, 'print("after the reconnect")');
    check((await cell.textContent()).includes('after the reconnect'), 'runs after the reconnect');
  });

  await h.test('Pause, then resume from the list, keeps a variable; snapshot, fork and restore copy it', async () => {
    const first = h.shared.contextId;
    const id = await createContext(h, { kernel: 'python3', policy: 'fresh' });
    await runCell(page, 'kept = 42', { ms: SLOW_MS });

    // A snapshot, then a fork of one copy: both said in the log.
    await page.locator('#pg-snapshot-button:not([disabled])').click();
    await visibleLog(page).locator('.notice', { hasText: /Snapshot [0-9a-f]{8} saved/ }).waitFor({ timeout: SLOW_MS });
    page.once('dialog', d => d.accept('1'));
    await page.locator('#pg-fork').click();
    const forked = await visibleLog(page).locator('.notice', { hasText: 'Forked into 1 new context' })
      .textContent({ timeout: SLOW_MS });
    const copy = (await rest('GET', '/v1/contexts')).body
      .find(c => c.id !== id && forked.includes(c.id.slice(0, 8)));
    check(copy, 'the copy is listed', forked);
    h.contexts.add(copy.id);

    // Pause: listed paused with its expiry; the page lets go of it.
    await page.locator('#pg-pause').click();
    const item = page.locator(`#pg-contexts li[data-context-id="${id}"]`);
    await page.locator(`#pg-contexts li[data-context-id="${id}"][data-state="paused"]`).waitFor({ timeout: SLOW_MS });
    check((await item.textContent()).includes('paused since'), 'the list says paused', await item.textContent());
    check((await rest('GET', `/v1/contexts/${id}`)).body.state === 'paused', 'paused on the server');
    await page.locator('#pg-logs .notice', { hasText: `Context ${id.slice(0, 8)} paused` }).waitFor();

    // Resume from the list: selected again, connected, the variable is back.
    await item.locator('button[aria-label^="Resume"]').click();
    await page.locator(`#pg-contexts li.current[data-context-id="${id}"]`).waitFor({ timeout: SLOW_MS });
    await page.locator('#pg-conn[data-state="connected"]').waitFor({ timeout: SLOW_MS });
    await visibleLog(page).locator('.notice', { hasText: /Resumed in/ }).waitFor();
    const after = await runCell(page, 'print(kept)', { ms: SLOW_MS });
    check((await after.locator('.out-stream.stdout').textContent()).trim() === '42', 'kept survived the pause');

    // The snapshot restored into a new context from the create form.
    await page.locator('#pg-snapshot-field:not([hidden])').waitFor({ timeout: STEP_MS });
    const snapshots = (await rest('GET', '/v1/snapshots')).body.filter(s => s.context_id === id);
    check(snapshots.length === 1, 'one snapshot of the context', snapshots);
    await page.locator('#pg-snapshot').selectOption(snapshots[0].id);
    const restored = await createContext(h, { kernel: 'python3', policy: 'fresh' });
    await visibleLog(page).locator('.notice', { hasText: 'Restored from snapshot' }).waitFor();
    const cell = await runCell(page, 'print(kept + 1)', { ms: SLOW_MS });
    check((await cell.locator('.out-stream.stdout').textContent()).trim() === '43', 'the restored context has kept');
    await rest('DELETE', `/v1/snapshots/${snapshots[0].id}`);

    for (const other of [id, copy.id, restored]) {
      await rest('DELETE', `/v1/contexts/${other}`);
      h.contexts.delete(other);
    }
    await page.locator(`#pg-contexts li[data-context-id="${first}"] .item-main`).click();
    await page.locator('#pg-conn[data-state="connected"]').waitFor({ timeout: SLOW_MS });
  });
}
