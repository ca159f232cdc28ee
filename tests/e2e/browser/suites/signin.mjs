// Signing in: the token from the URL (then hidden), a wrong or expired token, signing out.

import { BASE_URL, check, STEP_MS, TOKEN, withTimeout } from '../lib/harness.mjs';

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

// Runs `use` on a page of its own opened with ?token=`token`, and closes the page after.
async function inPageOpenedWith(h, token, use) {
  const other = await h.otherPage();
  try {
    await other.goto(`${BASE_URL}/?token=${encodeURIComponent(token)}`);
    await use(other);
  } finally {
    await other.close();
  }
}

export async function signinSuite(h) {
  const { page } = h;

  await h.test('the page loads, takes the token from the URL and hides it', async () => {
    const res = await page.goto(`${BASE_URL}/?token=${encodeURIComponent(TOKEN)}`);
    check(res && res.status() === 200, 'GET / answers 200', res && res.status());
    // The first load carries ?token=: no Referer may take it anywhere, and no one may frame
    // the page. The CSP header must allow all the page uses: a violation is a console error.
    const headers = res.headers();
    check(headers['referrer-policy'] === 'no-referrer', 'Referrer-Policy: no-referrer', headers);
    check(headers['x-content-type-options'] === 'nosniff', 'nosniff', headers);
    const csp = headers['content-security-policy'] || '';
    check(csp.includes("frame-ancestors 'none'"), 'a CSP header that forbids framing', headers);
    check(!csp.includes('unsafe-eval'), "no 'unsafe-eval' in the CSP", csp);
    // Every module app.js imports arrives as JavaScript; none fails to load or link.
    const modules = await moduleGraph();
    check(modules.length >= 10, 'app.js imports its modules', modules);
    const loaded = new Set(h.scripts.map(s => s.url));
    check(modules.every(u => loaded.has(u)), 'every module app.js imports was loaded',
          { missing: modules.filter(u => !loaded.has(u)) });
    for (const s of h.scripts)
      check(s.status === 200 && s.type.startsWith('text/javascript'), `${s.url} answers 200 as text/javascript`, s);
    check(h.failedScripts.length === 0, 'no module request failed', h.failedScripts);
    await page.locator('#app').waitFor({ state: 'visible' });
    check(!page.url().includes('token'), 'the token is stripped from the address bar', page.url());
    const stored = await page.evaluate(() => sessionStorage.getItem('callisto.token'));
    check(stored === TOKEN, 'the token is kept in sessionStorage');
    await page.locator('#identity-name').filter({ hasText: /\S/ }).waitFor();
    const role = await page.locator('#identity-role').textContent();
    check(role === 'admin', 'the single-token operator is an admin', role);
    await page.locator('#view-playground').waitFor({ state: 'visible' });
    await page.locator('#pg-kernel option[value="python3"]').waitFor({ state: 'attached' });
    check(h.pageErrors.length === 0, 'no page errors while loading', h.pageErrors);
  });

  await h.test('a wrong token brings up the sign-in panel; the right one signs in', async () => {
    await inPageOpenedWith(h, 'not-the-token', async other => {
      await other.locator('#signin-panel').waitFor({ state: 'visible' });
      const text = await other.locator('#signin-error').textContent();
      check(text.includes('refused'), 'the panel says the token was refused', text);
      check(await other.evaluate(() => sessionStorage.getItem('callisto.token')) === null,
            'a refused token is not kept');
      await h.screenshot('signin-refused', other);
      await other.locator('#signin-token').fill(TOKEN);
      await other.locator('#signin-token').press('Enter');
      await other.locator('#app').waitFor({ state: 'visible' });
      check(!other.url().includes('token'), 'no token in the URL after signing in', other.url());
    });
  });

  await h.test('an expired token (401 from the server) goes back to sign-in with a message', async () => {
    await inPageOpenedWith(h, TOKEN, async other => {
      await other.locator('#pg-contexts li').first().waitFor();
      // From now on the server answers as it does to a token it no longer takes.
      await other.route('**/v1/contexts', route => route.fulfill({
        status: 401, contentType: 'application/json',
        body: JSON.stringify({ reason: 'Unauthorized', message: 'a valid token is required' }),
      }));
      await other.locator('#pg-refresh').click();
      await other.locator('#signin-panel').waitFor({ state: 'visible' });
      const text = await other.locator('#signin-error').textContent();
      check(/refused the token \(401\)/.test(text), 'the message says why', text);
      check(await other.evaluate(() => sessionStorage.getItem('callisto.token')) === null, 'the token is forgotten');
    });
  });

  await h.test('Sign out forgets the token and shows who was signed in until then', async () => {
    await inPageOpenedWith(h, TOKEN, async other => {
      await other.locator('#identity').waitFor({ state: 'visible' });
      await other.locator('#sign-out').click();
      await other.locator('#signin-panel').waitFor({ state: 'visible' });
      check((await other.locator('#signin-error').textContent()) === 'Signed out.', 'says signed out');
      check(await other.locator('#identity').isHidden(), 'no one is shown as signed in');
      check(await other.evaluate(() => Object.keys(sessionStorage).filter(k => k.startsWith('callisto.')).length) === 0,
            'nothing of the session is left in sessionStorage');
    });
  });
}
