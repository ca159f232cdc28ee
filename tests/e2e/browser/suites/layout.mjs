// The page on a narrow window (~400 px): one column, nothing wider than the window, the
// editor usable; and the end-of-run checks (no page errors, no outside requests).

import { TOKEN, check, VIEWPORT } from '../lib/harness.mjs';

export async function layoutSuite(h) {
  const { page } = h;

  await h.test('at 1280×800 the panes sit side by side, the editor on screen', async () => {
    for (const view of ['playground', 'kernels']) {
      await page.locator(`#views-nav a[data-view="${view}"]`).click();
      await page.locator(`#view-${view}`).waitFor({ state: 'visible' });
      const pane = await page.locator(`#view-${view} .pane`).first().boundingBox();
      const bar = await page.locator(`#view-${view} .work-bar`).boundingBox();
      const editor = await page.locator(`#view-${view} .editor`).boundingBox();
      check(bar.y < 100 && bar.x >= pane.x + pane.width - 1, `${view}: the work area is beside the side pane`, { pane, bar });
      check(editor.y + editor.height <= VIEWPORT.height + 1, `${view}: the editor is on screen`, editor);
      check(await page.evaluate(() => document.documentElement.scrollWidth) <= VIEWPORT.width, `${view}: no sideways scrolling`);
    }
  });

  await h.test('a narrow window (400 px) stacks the panes and stays usable', async () => {
    await page.setViewportSize({ width: 400, height: 800 });
    try {
      for (const view of ['playground', 'kernels', 'admin']) {
        await page.locator(`#views-nav a[data-view="${view}"]`).click();
        await page.locator(`#view-${view}`).waitFor({ state: 'visible' });
        const width = await page.evaluate(() => document.documentElement.scrollWidth);
        check(width <= 400, `the ${view} view fits the window`, width);
        await h.screenshot(`narrow-${view}`);
      }
      await page.locator('#views-nav a[data-view="playground"]').click();
      await page.locator('#view-playground').waitFor({ state: 'visible' });
      check(await page.locator('#pg-code').isVisible(), 'the editor is visible');
      check(await page.locator('#sign-out').isVisible(), 'sign out is reachable');
    } finally {
      await page.setViewportSize(VIEWPORT);
    }
  });

  await h.test('no page errors, no requests outside the server, no token in any URL', async () => {
    check(h.pageErrors.length === 0, 'page errors', h.pageErrors);
    check(h.failedScripts.length === 0, 'failed module requests', h.failedScripts);
    check(h.externalRequests.length === 0, 'external requests', h.externalRequests);
    // Only the first load carries ?token= (what the server prints); after that no request and
    // no WebSocket the page opens has it in its URL: WebSockets offer it as a subprotocol.
    if (h.shared.contextId) check(h.socketUrls.length >= 1, 'the page opened WebSockets', h.socketUrls);
    const leaks = [...h.requestUrls.slice(1), ...h.socketUrls].filter(u => u.includes(TOKEN));
    check(leaks.length === 0, 'URLs carrying the token', leaks);
  });
}
