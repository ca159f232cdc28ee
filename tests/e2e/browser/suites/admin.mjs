// The admin console (the single-token operator is an admin): every kernel with its owner,
// what holds it and its memory; contexts, the pool, culled kernels, the activity chart and
// the audit panel; killing a kernel.

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
