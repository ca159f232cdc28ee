// The files panel: upload by the file input and by drag and drop, read from code, a file the
// code wrote appears by itself and downloads with its content, delete; output over the
// server's budgets shown as truncated, with the file it became; then a reload shows history.

import fs from 'node:fs';
import { acceptNextDialog, check, rest, SLOW_MS } from '../lib/harness.mjs';
import { runCell } from './playground.mjs';

const fileRow = (page, path) => page.locator(`#files-list li[data-path="${path}"]`);

export async function filesSuite(h) {
  const { page } = h;

  await h.test('uploads a CSV with the file input, and code reads it', async () => {
    check(h.shared.contextId, 'needs the context of the playground tests');
    await page.locator('#files-input').setInputFiles({
      name: 'data.csv', mimeType: 'text/csv', buffer: Buffer.from('name,v\na,1\nb,2\nc,39\n'),
    });
    await fileRow(page, 'data.csv').waitFor();
    check((await fileRow(page, 'data.csv').locator('.file-size').textContent()) === '20 B', 'its size is listed');
    const cell = await runCell(page, 'import pandas as pd\nprint(pd.read_csv("data.csv")["v"].sum())', { ms: SLOW_MS });
    check((await cell.locator('.out-stream').textContent()).trim() === '42', 'the kernel read the upload');
  });

  await h.test('drag and drop uploads several files with progress', async () => {
    await page.evaluate(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(['first\n'], 'one.txt', { type: 'text/plain' }));
      transfer.items.add(new File([new Uint8Array(3 * 1024 * 1024)], 'big.bin'));
      const zone = document.getElementById('files-drop');
      for (const type of ['dragenter', 'dragover', 'drop'])
        zone.dispatchEvent(new DragEvent(type, { dataTransfer: transfer, bubbles: true, cancelable: true }));
    });
    await page.locator('#files-uploads progress').first().waitFor({ state: 'attached' });
    await fileRow(page, 'one.txt').waitFor();
    await fileRow(page, 'big.bin').waitFor({ timeout: SLOW_MS });
    check((await fileRow(page, 'big.bin').locator('.file-size').textContent()) === '3.0 MiB', 'the large file arrived whole');
    await page.locator('#files-uploads li').first().waitFor({ state: 'detached' });
  });

  await h.test('a file the code writes appears without a refresh and downloads with its content', async () => {
    await runCell(page, 'with open("report.txt", "w") as f:\n    f.write("written by the kernel\\n")');
    await fileRow(page, 'report.txt').waitFor();  // the listing refreshes when an execution ends
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      fileRow(page, 'report.txt').getByRole('button', { name: 'Download report.txt' }).click(),
    ]);
    check(download.url().startsWith('blob:'), 'downloaded from a blob, not a URL with the token', download.url());
    check(download.suggestedFilename() === 'report.txt', 'under its name', download.suggestedFilename());
    const content = fs.readFileSync(await download.path(), 'utf8');
    check(content === 'written by the kernel\n', 'the content the code wrote', content);
  });

  await h.test('deletes a file', async () => {
    acceptNextDialog(page);
    await fileRow(page, 'big.bin').getByRole('button', { name: 'Delete big.bin' }).click();
    await fileRow(page, 'big.bin').waitFor({ state: 'detached' });
    const listing = await rest('GET', `/v1/contexts/${h.shared.contextId}/files`);
    check(!listing.body.files.some(f => f.path === 'big.bin'), 'gone on the server too', listing.body);
  });

  await h.test('output over the budgets shows the truncation marker and the file it became', async () => {
    const cell = await runCell(page,
      'import sys\nsys.stdout.write("x" * 1500000 + "\\nEND\\n")\n' +
      'display({"text/plain": "y" * 6000000}, raw=True)', { ms: SLOW_MS });
    const marker = cell.locator('.trunc-marker');
    await marker.waitFor();
    check((await marker.textContent()).includes('cut here'), 'the marker says output was cut', await marker.textContent());
    const note = await cell.locator('.truncation').textContent();
    check(/stdout: .* cut/.test(note), 'the truncated count of stdout', note);
    check(note.includes('moved to callisto-outputs/'), 'the moved result', note);
    const card = cell.locator('.file-card');
    await card.waitFor();
    check((await card.locator('code').textContent()).startsWith('callisto-outputs/'), 'the card names the file');
    check((await cell.locator('.out-stream').textContent()).includes('END'), 'the tail of stdout is kept');
  });

  await h.test('a reload shows the history of the context', async () => {
    const before = await page.locator('#pg-logs .context-log:not([hidden]) .cell').count();
    await page.reload();
    await page.locator('#app').waitFor({ state: 'visible' });
    const log = page.locator(`#pg-logs .context-log[data-context-id="${h.shared.contextId}"]:not([hidden])`);
    await log.locator('.cell').nth(before - 1).waitFor({ timeout: SLOW_MS });
    const text = await log.textContent();
    check(text.includes('print("hello from callisto")') && text.includes('hello from callisto'),
          'the code and the output of an earlier cell', text.slice(0, 300));
    check(await log.locator('img.out-image').count() >= 1, 'the chart is back');
    check(await log.locator('iframe.out-html').count() >= 1, 'the table is back');
    check(await log.locator('.cell[data-state="timeout"]').count() >= 1, 'the timed out cell is back');
    await fileRow(page, 'report.txt').waitFor();
  });
}
