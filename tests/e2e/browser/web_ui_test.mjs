// End-to-end test of Callisto's web UI (web/) in headless Debian Chromium, driven by
// playwright-core. Reads CALLISTO_URL and CALLISTO_TOKEN of a server started with
// --web-root=<repo>/web and a single --token (its operator is an admin); exits 0 only when
// every test passed, and prints "N passed, M failed".
//
//   CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T node web_ui_test.mjs [suite…]
//
// The suites run in this order on one page, each leaving what the next needs (the playground's
// context is used by the files tests and killed by the admin tests): signin, playground,
// files, kernels, admin, layout. Naming suites runs only those (and what they need).
//
// CALLISTO_CHROMIUM overrides the browser (default /usr/bin/chromium, Debian's package);
// CALLISTO_E2E_SCREENSHOT_DIR is where every test saves a screenshot (default: a new temp
// directory); CALLISTO_E2E_BROWSER_TIMEOUT_MS bounds the whole run (default 10 minutes).

import { Harness, withTimeout } from './lib/harness.mjs';
import { adminSuite } from './suites/admin.mjs';
import { filesSuite } from './suites/files.mjs';
import { kernelsSuite } from './suites/kernels.mjs';
import { layoutSuite } from './suites/layout.mjs';
import { playgroundSuite } from './suites/playground.mjs';
import { signinSuite } from './suites/signin.mjs';

const SUITES = {
  signin: signinSuite,
  playground: playgroundSuite,
  files: filesSuite,
  kernels: kernelsSuite,
  admin: adminSuite,
  layout: layoutSuite,
};
// What a suite needs run before it: sign-in always; files and admin use the playground's context.
const NEEDS = { files: ['playground'], admin: ['playground'] };
const GLOBAL_TIMEOUT_MS = Number(process.env.CALLISTO_E2E_BROWSER_TIMEOUT_MS || 600_000);

function selectedSuites(args) {
  const unknown = args.filter(a => !(a in SUITES));
  if (unknown.length) {
    console.log(`unknown suite(s): ${unknown.join(', ')}; known: ${Object.keys(SUITES).join(', ')}`);
    process.exit(2);
  }
  if (!args.length) return Object.keys(SUITES);
  const wanted = new Set(['signin', ...args.flatMap(a => [...(NEEDS[a] || []), a])]);
  return Object.keys(SUITES).filter(name => wanted.has(name));
}

const h = new Harness();
const suites = selectedSuites(process.argv.slice(2));

const globalTimer = setTimeout(async () => {
  console.log(`FAIL global timeout of ${GLOBAL_TIMEOUT_MS} ms exceeded`);
  await withTimeout(h.cleanup(), 15_000, 'cleanup').catch(e => console.log(`cleanup: ${e.message}`));
  console.log(`${h.passed} passed, ${h.failed + 1} failed`);
  process.exit(1);
}, GLOBAL_TIMEOUT_MS);

try {
  await h.launch();
  for (const name of suites) await SUITES[name](h);
} catch (e) {
  h.failed++;
  console.log(`FAIL setup: ${e.stack || e.message}`);
} finally {
  await withTimeout(h.cleanup(), 30_000, 'cleanup').catch(e => console.log(`cleanup: ${e.message}`));
}
clearTimeout(globalTimer);
console.log(`screenshots: ${h.shotDir}`);
console.log(`${h.passed} passed, ${h.failed} failed`);
process.exit(h.failed === 0 && h.passed > 0 ? 0 : 1);
