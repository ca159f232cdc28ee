// The admin console (the single-token operator is an admin): every kernel with its owner,
// what holds it, its memory and its network; contexts, E2B sandboxes (and killing one), the
// pool, culled kernels, the activity chart and the audit panel; killing a kernel.
//
// CALLISTO_E2E_EGRESS_PORT: the server runs with --egress-allow=127.0.0.2:PORT, and a
// networked context's kernel shows its rule and its refused connection (without it, that
// test only checks the "none").
// CALLISTO_E2E_E2B_TEMPLATE=NAME:KERNELSPEC: the server declares that E2B template
// (--e2b-template), and the sandbox the console lists is made with it (without it: "base").

const EGRESS_PORT = process.env.CALLISTO_E2E_EGRESS_PORT || '';
const [E2B_TEMPLATE, E2B_KERNELSPEC] = (process.env.CALLISTO_E2E_E2B_TEMPLATE || 'base').split(':');

import { acceptNextDialog, check, poll, rest, SLOW_MS } from '../lib/harness.mjs';

export async function adminSuite(h) {
  const { page } = h;

  await h.test('admin: the console lists the context kernel with its owner, holder and memory', async () => {
    check(h.shared.kernelId, "needs the playground context's kernel");
    await page.locator('#views-nav a[data-view="admin"]').click();
    await page.locator('#view-admin').waitFor({ state: 'visible' });
    const row = page.locator(`#adm-kernels tr[data-kernel-id="${h.shared.kernelId}"]`);
    await row.waitFor();
    const owner = await row.locator('td.owner').textContent();
    const who = await page.locator('#identity-name').textContent();
    check(owner === who, 'the owner is the user who made it', { owner, who });
    check((await row.locator('.badge.held').textContent()) === 'context', 'held by a context');
    // The memory appears once the kernel's own model was read (a refresh or two).
    const memory = await poll(async () => {
      const text = await row.locator('td.memory').textContent();
      return /\d/.test(text) ? text : null;
    }, 20_000, 'the kernel memory (PSS)');
    check(/(KiB|MiB|GiB)$/.test(memory), 'memory in bytes units', memory);
    await page.locator(`#adm-contexts tr[data-context-id="${h.shared.contextId}"]`).waitFor();
  });

  await h.test('admin: a networked kernel shows its rules and egress activity, the others "none"', async () => {
    const plain = page.locator(`#adm-kernels tr[data-kernel-id="${h.shared.kernelId}"] td.network`);
    check((await plain.textContent()) === 'none', 'the playground kernel has no network',
          await plain.textContent());
    if (!EGRESS_PORT) {
      console.log('  no CALLISTO_E2E_EGRESS_PORT: the networked kernel is not checked');
      return;
    }
    const rule = `127.0.0.2:${EGRESS_PORT}`;
    const made = await rest('POST', '/v1/contexts', { network: { allow: [rule] } });
    check(made.status === 201, 'a networked context', made);
    const ctx = made.body;
    try {
      // One refused connection (example.org is decided before any lookup: nothing leaves).
      const ran = await rest('POST', `/v1/contexts/${ctx.id}/executions`, {
        code: 'import urllib.request, urllib.error\ntry:\n' +
              "    urllib.request.urlopen('http://example.org/', timeout=20)\n" +
              'except urllib.error.HTTPError as e:\n    print(e.code)\n',
        timeout: 60 });
      check(ran.status === 200 && ran.body.stdout.trim() === '403', 'the proxy refused it', ran.body);
      const cell = page.locator(`#adm-kernels tr[data-kernel-id="${ctx.kernel_id}"] td.network`);
      const text = await poll(async () => {
        await page.locator('#adm-refresh').click();
        const t = await cell.textContent().catch(() => '');
        return t.includes('1 refused') ? t : null;
      }, 20_000, "the networked kernel's row with its refused connection");
      check((await cell.locator('code').allTextContents()).join(',') === rule, 'its rule', text);
      check(/0 allowed · 1 refused/.test(text), 'its connections by decision', text);
      check((await plain.textContent()) === 'none', 'the playground kernel still has none');
    } finally {
      await rest('DELETE', `/v1/contexts/${ctx.id}`);
    }
  });

  await h.test('admin: an E2B sandbox is listed with its owner, template and context; Kill ends it', async () => {
    // Made as E2B's SDK makes one (the user's token; the SDK sends it as X-API-KEY).
    const made = await rest('POST', '/v2/sandboxes', { templateID: E2B_TEMPLATE, timeout: 600 });
    check(made.status === 201, 'a sandbox', made);
    const id = made.body.sandboxID;
    const row = page.locator(`#adm-sandboxes tr[data-sandbox-id="${id}"]`);
    await poll(async () => {
      await page.locator('#adm-refresh').click();
      return (await row.count()) === 1;
    }, 20_000, "the sandbox's row");
    const who = await page.locator('#identity-name').textContent();
    check((await row.locator('td.owner').textContent()) === who, 'its owner', who);
    const template = await row.locator('td.template').textContent();
    check(template.startsWith(E2B_TEMPLATE), 'the template as the client named it', template);
    if (E2B_KERNELSPEC)
      check(template.includes(`(${E2B_KERNELSPEC})`), 'the kernelspec it runs', template);
    check((await row.locator('td.commands').textContent()) === '0', 'no command running');
    const contextIds = await row.locator('td.contexts code').evaluateAll(
      codes => codes.map(c => c.dataset.contextId));
    check(contextIds.length === 1, 'its default context', contextIds);
    // Its context is the user's too, in the contexts table.
    await page.locator(`#adm-contexts tr[data-context-id="${contextIds[0]}"]`).waitFor();
    acceptNextDialog(page);
    await row.locator('button[data-action="kill"]').click();
    await row.waitFor({ state: 'detached' });
    await page.locator('#adm-message .notice', { hasText: 'Killed sandbox' }).waitFor();
    check((await rest('GET', `/sandboxes/${id}`)).status === 404, 'the sandbox is gone from the server');
    const gone = await poll(async () => {
      const s = (await rest('GET', `/v1/contexts/${contextIds[0]}`)).status;
      return s === 404 ? s : null;
    }, 10_000, "the sandbox's context to go");
    check(gone === 404, 'its context went with it', gone);
  });

  await h.test('admin: the server, pool, activity chart, culled and audit panels are drawn', async () => {
    await page.locator('#adm-server .fact-value').first().waitFor();
    check((await page.locator('#adm-server').textContent()).includes('Sandbox'), 'the server facts');
    await page.locator('#adm-pool .pool-row[data-kernelspec], #adm-pool p').first().waitFor();
    // One sample every 10 s: by now the server has run long enough for a chart.
    await page.locator('#adm-charts svg.chart path.series.kernels').waitFor({ timeout: SLOW_MS });
    check(await page.locator('#adm-charts svg.chart').count() === 2, 'kernels and executions charts');
    await page.locator('#adm-culled tbody tr').first().waitFor();
    const audit = await page.locator('#adm-audit').textContent();
    check(audit.includes('No audit log configured'), 'says when no audit log is configured', audit);
    check(/updated /.test(await page.locator('#adm-updated').textContent()), 'shows when it was updated');
  });

  await h.test('admin: Kill removes the kernel; the console and the server agree', async () => {
    const id = h.shared.kernelId;
    const row = page.locator(`#adm-kernels tr[data-kernel-id="${id}"]`);
    acceptNextDialog(page);
    await row.locator('button[data-action="kill"]').click();
    await row.waitFor({ state: 'detached' });
    const status = await poll(async () => {
      const s = (await rest('GET', `/api/kernels/${id}`)).status;
      return s === 404 ? s : null;
    }, 10_000, 'the kernel to go');
    check(status === 404, 'the kernel is gone from the server', status);
    await page.locator('#adm-message .notice', { hasText: 'Killed kernel' }).waitFor();
  });
}
