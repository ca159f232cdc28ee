// The runner the Node e2e scripts share (e2b_test.mjs, mcp_test.mjs, and the @jupyterlab/services
// suites through services_harness.mjs): the server's address, `test` to register a case, `check`,
// bounded waits (`withTimeout`, which the web UI's harness, browser/lib/harness.mjs, takes from
// here too with the address and `sleep`), and `runTests`, which runs the cases the command line's arguments select by name substring,
// prints PASS/FAIL with each one's time and "N passed, M failed", and exits 0 only when every
// selected case passed (and at least one ran). A global timeout makes a hung case a failure, not
// a hung suite. Reads CALLISTO_URL, CALLISTO_TOKEN and CALLISTO_E2E_NODE_TIMEOUT_MS.

export const BASE_URL = (process.env.CALLISTO_URL || 'http://127.0.0.1:8888').replace(/\/+$/, '');
export const TOKEN = process.env.CALLISTO_TOKEN || '';

const tests = [];
export const test = (name, fn) => tests.push({ name, fn });

export function check(cond, what, detail) {
  if (!cond) {
    throw new Error(what + (detail === undefined ? '' : `: ${JSON.stringify(detail).slice(0, 2000)}`));
  }
}

export const sleep = ms => new Promise(r => setTimeout(r, ms));

// `promise`, or a rejection naming `what` once `ms` have passed without it settling.
export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

const seconds = t0 => ((Date.now() - t0) / 1000).toFixed(1);
const described = e => (e && e.stack ? e.stack : e);

// timeoutMs: the whole run's limit when CALLISTO_E2E_NODE_TIMEOUT_MS is not set.
// afterAll: cleanup of what a failed case left behind, run before the count is printed.
export async function runTests({ timeoutMs = 300000, afterAll = async () => {} } = {}) {
  let passed = 0;
  let failed = 0;
  const limit = Number(process.env.CALLISTO_E2E_NODE_TIMEOUT_MS || timeoutMs);
  const globalTimer = setTimeout(() => {
    console.log(`FAIL global timeout of ${limit} ms exceeded`);
    console.log(`${passed} passed, ${failed + 1} failed`);
    process.exit(1);
  }, limit);
  process.on('unhandledRejection', e => console.log(`unhandled rejection: ${described(e)}`));
  const selectors = process.argv.slice(2);
  console.log(`target ${BASE_URL}`);
  for (const t of tests) {
    if (selectors.length && !selectors.some(sel => t.name.includes(sel))) continue;
    const t0 = Date.now();
    try {
      await t.fn();
      passed++;
      console.log(`PASS ${t.name} (${seconds(t0)} s)`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${t.name} (${seconds(t0)} s): ${described(e)}`);
    }
  }
  await afterAll();
  console.log(`${passed} passed, ${failed} failed`);
  clearTimeout(globalTimer);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}
