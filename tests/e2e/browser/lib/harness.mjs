// The shared harness of the web UI tests: the browser and its page, the test runner (pass,
// fail, a screenshot after every test), REST calls to the server, and what every test needs
// cleaned up. Suites (suites/*.mjs) get one Harness and run their tests through it.

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// The server's address (CALLISTO_URL, CALLISTO_TOKEN) and the bounded waits, as the Node e2e
// scripts have them.
import { BASE_URL, TOKEN, sleep, withTimeout } from '../../node/runner.mjs';

export { BASE_URL, TOKEN, sleep, withTimeout };

const CHROMIUM = process.env.CALLISTO_CHROMIUM || '/usr/bin/chromium';
export const STEP_MS = 30_000;
export const SLOW_MS = 90_000;  // kernel start, first matplotlib/pandas import on a loaded machine
export const VIEWPORT = { width: 1280, height: 800 };

export function check(cond, what, detail) {
  if (!cond) throw new Error(what + (detail === undefined ? '' : `: ${JSON.stringify(detail)}`));
}

export async function rest(method, urlPath, body) {
  const res = await withTimeout(fetch(BASE_URL + urlPath, {
    method,
    headers: { Authorization: `token ${TOKEN}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  }), STEP_MS, `${method} ${urlPath}`);
  const text = await res.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = text; }
  return { status: res.status, body: parsed };
}

// Polls fn until it returns a truthy value (returned), or fails after ms.
export async function poll(fn, ms, what, everyMs = 250) {
  const end = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

// Runs `act` (a click that makes something new) and returns the id the UI then shows in
// window.callistoDebug[field], once it is one other than before (what: for the timeout's error).
export async function newDebugId(page, field, act, what) {
  const before = await page.evaluate(f => window.callistoDebug[f], field);
  await act();
  return poll(() => page.evaluate(([f, prev]) => {
    const now = window.callistoDebug[f];
    return now && now !== prev ? now : null;
  }, [field, before]), SLOW_MS, what);
}

function screenshotDir() {
  const dir = process.env.CALLISTO_E2E_SCREENSHOT_DIR ||
    fs.mkdtempSync(path.join(os.tmpdir(), 'callisto-web-ui-'));
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

export class Harness {
  constructor() {
    this.passed = 0;
    this.failed = 0;
    this.browser = null;
    this.context = null;
    this.page = null;
    this.shotDir = screenshotDir();
    this.shots = 0;
    this.pageErrors = [];
    this.externalRequests = [];
    this.requestUrls = [];      // every request the main page made, in order
    this.socketUrls = [];       // every WebSocket the main page opened
    this.scripts = [];        // every .js the page loaded: {url, status, type}
    this.failedScripts = [];  // .js requests that got no response at all
    this.kernels = new Set();   // kernel ids to delete at the end
    this.contexts = new Set();  // context ids to delete at the end
    this.shared = {};           // what one suite leaves for the next (the context, its kernel)
  }

  async launch() {
    this.browser = await withTimeout(chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
             '--disable-component-update', '--disable-sync', '--disable-quic', '--no-first-run'],
    }), 60_000, 'launching Chromium');
    this.context = await this.browser.newContext({ viewport: VIEWPORT, acceptDownloads: true });
    this.page = await this.watch(await this.context.newPage());
  }

  // The main page is watched: any page error, console error, failed module or request
  // outside the server fails the last test.
  async watch(page) {
    page.setDefaultTimeout(STEP_MS);
    page.on('pageerror', e => this.pageErrors.push(`pageerror: ${e.message}`));
    page.on('console', m => { if (m.type() === 'error') this.pageErrors.push(`console: ${m.text()}`); });
    page.on('response', r => {
      if (r.url().endsWith('.js')) {
        this.scripts.push({ url: r.url(), status: r.status(), type: r.headers()['content-type'] || '' });
      }
    });
    page.on('requestfailed', r => {
      if (new URL(r.url()).pathname.endsWith('.js')) this.failedScripts.push(`${r.url()}: ${r.failure()?.errorText}`);
    });
    page.on('websocket', ws => this.socketUrls.push(ws.url()));
    page.on('request', r => {
      const u = r.url();
      this.requestUrls.push(u);
      if (!u.startsWith(`${BASE_URL}/`) && !/^(data|about|blob):/.test(u)) this.externalRequests.push(u);
    });
    return page;
  }

  // A page of its own (sign-in cases with wrong tokens): not watched for errors, since a
  // refused token is a logged 401 there by design.
  async otherPage() {
    const page = await this.context.newPage();
    page.setDefaultTimeout(STEP_MS);
    return page;
  }

  async screenshot(name, page = this.page) {
    const file = path.join(this.shotDir, `${String(++this.shots).padStart(2, '0')}-${name}.png`);
    await page.screenshot({ path: file });
    return file;
  }

  async test(name, fn) {
    const t0 = Date.now();
    try {
      await fn();
      this.passed++;
      console.log(`PASS ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      this.failed++;
      console.log(`FAIL ${name} (${Date.now() - t0} ms): ${e.stack || e.message}`);
    }
    const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 60);
    if (this.page && !this.page.isClosed()) await this.screenshot(slug).catch(() => {});
  }

  async cleanup() {
    for (const id of this.contexts) await this.remove(`/v1/contexts/${id}`);
    for (const id of this.kernels) await this.remove(`/api/kernels/${id}`);
    this.contexts.clear();
    this.kernels.clear();
    if (this.browser) {
      const b = this.browser;
      this.browser = null;
      await b.close().catch(() => {});
    }
  }

  async remove(urlPath) {
    try {
      const r = await rest('DELETE', urlPath);
      if (![204, 404, 410].includes(r.status)) console.log(`cleanup: DELETE ${urlPath} -> ${r.status}`);
    } catch (e) {
      console.log(`cleanup: DELETE ${urlPath}: ${e.message}`);
    }
  }
}

// Accepts the next confirm() the page shows (Close, Restart, Kill, Delete ask first).
export function acceptNextDialog(page) {
  page.once('dialog', d => d.accept());
}
