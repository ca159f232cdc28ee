// End-to-end test of Callisto's E2B-compatible facade (gateway/e2b/) through E2B's own SDKs,
// unchanged: `@e2b/code-interpreter` and `e2b` from npm, pointed at Callisto by two
// environment variables, with the user's Callisto token as the API key. Sandboxes (create,
// getInfo, list by metadata, setTimeout, connect, kill, a wrong key, an unknown template, a
// declared template, a sandbox culled at its timeout), runCode (print, state kept, errors, a
// matplotlib figure and its chart, a DataFrame and its data, streaming callbacks, env vars, a
// client timeout that interrupts, and the next call working), code contexts (create, list,
// restart, remove, isolation of their state, one file tree, uid and memory limit, where their
// code starts),
// envd's files (write, read, list, exists, makeDir, rename, getInfo, remove, watchDir and the
// polling watchers; one tree with the code's),
// and commands (output, exit codes, envs, cwd, the kernel's uid; a process of its own in the
// kernel's sandbox, beside runCode and as confined; background commands, stdin, list,
// connect, kill, and their bad inputs).
//
//   CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T node e2b_test.mjs [name-substring]
//
// Exits 0 only when every test passed, and prints "N passed, M failed".

import http from 'node:http';
import { BASE_URL, TOKEN, check, runTests, sleep, test } from './runner.mjs';

// The SDK reads these: one port for both planes.
process.env.E2B_API_URL = BASE_URL;
process.env.E2B_SANDBOX_URL = BASE_URL;
process.env.E2B_API_KEY = TOKEN;

const { Sandbox } = await import('@e2b/code-interpreter');
const e2b = await import('e2b');

async function withSandbox(fn, opts = {}) {
  const sbx = await Sandbox.create({ timeoutMs: 120000, ...opts });
  try {
    await fn(sbx);
  } finally {
    await sbx.kill().catch(() => {});
  }
}

// --------------------------------------------------------------------------

test('create, getInfo with metadata, list by metadata, setTimeout, connect, kill', async () => {
  const tag = `t${Date.now()}`;
  const sbx = await Sandbox.create({ metadata: { tag, who: 'e2e' }, timeoutMs: 60000 });
  check(typeof sbx.sandboxId === 'string' && sbx.sandboxId.length === 20, 'sandbox id', sbx.sandboxId);
  const info = await sbx.getInfo();
  check(info.sandboxId === sbx.sandboxId, 'getInfo id', info);
  check(info.metadata.tag === tag, 'getInfo metadata', info);
  check(info.templateId === 'code-interpreter-v1', 'template', info);
  const ends = info.endAt.getTime() - info.startedAt.getTime();
  check(ends > 55000 && ends <= 61000, 'timeout on create', ends);
  const page = await Sandbox.list({ query: { metadata: { tag } } }).nextItems();
  check(page.length === 1 && page[0].sandboxId === sbx.sandboxId, 'list by metadata', page);
  const none = await Sandbox.list({ query: { metadata: { tag: 'other' } } }).nextItems();
  check(none.length === 0, 'list filters', none);
  await sbx.setTimeout(300000);
  const later = await sbx.getInfo();
  check(later.endAt.getTime() - Date.now() > 250000, 'setTimeout moved the end', later);
  check(await sbx.isRunning(), 'isRunning');
  const again = await Sandbox.connect(sbx.sandboxId);
  const ex = await again.runCode('6*7');
  check(ex.text === '42', 'runCode through connect', ex.toJSON());
  check(await sbx.kill() === true, 'kill answers true');
  check(await Sandbox.kill(sbx.sandboxId) === false, 'a second kill answers false');
  let threw = null;
  try { await Sandbox.getInfo(sbx.sandboxId); } catch (e) { threw = e; }
  check(threw instanceof e2b.SandboxNotFoundError || /not found/i.test(String(threw)), 'killed is gone', String(threw));
  threw = null;
  try { await sbx.runCode('1'); } catch (e) { threw = e; }
  check(threw, 'the data plane refuses a killed sandbox');
});

test('a wrong API key is an AuthenticationError; an unknown template is refused', async () => {
  let threw = null;
  try { await Sandbox.create({ apiKey: 'wrong-key-123' }); } catch (e) { threw = e; }
  check(threw instanceof e2b.AuthenticationError, 'AuthenticationError', String(threw));
  threw = null;
  try { await Sandbox.create('no-such-template'); } catch (e) { threw = e; }
  check(threw && /template 'no-such-template' not found/.test(threw.message), 'unknown template', String(threw));
  threw = null;
  try { await Sandbox.create({ timeoutMs: 1000, metadata: { n: 5 } }); } catch (e) { threw = e; }
  check(threw && /metadata/.test(threw.message), 'malformed body refused', String(threw));
});

// CALLISTO_E2E_E2B_TEMPLATE=NAME:KERNELSPEC[:pool=N][:timeout=SECS]: the server declares that
// template (--e2b-template).
const DECLARED = (() => {
  const text = process.env.CALLISTO_E2E_E2B_TEMPLATE || '';
  if (!text) return null;
  const [name, kernelspec, ...rest] = text.split(':');
  const options = Object.fromEntries(rest.map(r => r.split('=')));
  return { name, kernelspec, pool: Number(options.pool || 0), timeout: Number(options.timeout || 0) };
})();

test('a declared template (--e2b-template): its kernelspec, pool and lifetime; its name shown', async () => {
  if (!DECLARED) {
    console.log('  no CALLISTO_E2E_E2B_TEMPLATE: no declared template to create');
    return;
  }
  const { name, kernelspec, pool, timeout } = DECLARED;
  // Its ready kernels are in the warm pool, beside the kernelspec's own.
  const overview = await fetch(`${BASE_URL}/v1/admin/overview`,
                               { headers: { Authorization: `token ${TOKEN}` } }).then(r => r.json());
  const level = overview.pool.find(p => p.kernelspec === kernelspec);
  check(level && level.target >= pool, "the template's pool in its kernelspec's", overview.pool);
  const tag = `declared${Date.now()}`;
  // No timeoutMs: the SDK sends none, and the template's lifetime applies.
  const sbx = await Sandbox.create(name, { metadata: { tag } });
  try {
    const info = await sbx.getInfo();
    check(info.templateId === name, 'getInfo names the template as the client did', info);
    check(info.name === kernelspec, 'and the kernelspec it runs (alias)', info);
    if (timeout) {
      const ends = info.endAt.getTime() - info.startedAt.getTime();
      check(Math.abs(ends - timeout * 1000) <= 1000, "the template's lifetime", ends);
    }
    const page = await Sandbox.list({ query: { metadata: { tag } } }).nextItems();
    check(page.length === 1 && page[0].templateId === name, 'list names the template', page);
    if (kernelspec === 'ir') {
      const ex = await sbx.runCode('cat(R.version$language)');
      check(ex.logs.stdout.join('') === 'R', "the code runs in the template's kernel", ex.toJSON());
    }
    // Listed in the admin console's overview with its template and kernelspec.
    const again = await fetch(`${BASE_URL}/v1/admin/overview`,
                              { headers: { Authorization: `token ${TOKEN}` } }).then(r => r.json());
    const listed = again.sandboxes.find(b => b.id === sbx.sandboxId);
    check(listed && listed.template === name && listed.kernelspec === kernelspec &&
          listed.contexts.length === 1, "the console's list", again.sandboxes);
  } finally {
    await sbx.kill();
  }
  let threw = null;
  try { await Sandbox.create(`${name}-not`); } catch (e) { threw = e; }
  check(threw && new RegExp(`template '${name}-not' not found: .*declares \\(${name}\\)`).test(threw.message),
        'an unknown template is refused, naming the declared one', String(threw));
});

test('runCode: print, state kept, results, errors, execution count', async () => {
  await withSandbox(async sbx => {
    let ex = await sbx.runCode('x = 20\nprint("hello")\nx + 1');
    check(ex.logs.stdout.join('') === 'hello\n', 'stdout', ex.toJSON());
    check(ex.text === '21', 'main result', ex.toJSON());
    check(ex.results.length === 1 && ex.results[0].isMainResult, 'one main result', ex.toJSON());
    ex = await sbx.runCode('x * 2');
    check(ex.text === '40', 'state kept', ex.toJSON());
    check(typeof ex.executionCount === 'number' && ex.executionCount >= 2, 'execution count', ex.executionCount);
    ex = await sbx.runCode('1/0');
    check(ex.error && ex.error.name === 'ZeroDivisionError', 'error name', ex.error);
    check(/division by zero/.test(ex.error.value), 'error value', ex.error);
    check(/ZeroDivisionError/.test(ex.error.traceback), 'traceback one string', ex.error);
    ex = await sbx.runCode('import sys; print("warn", file=sys.stderr)');
    check(ex.logs.stderr.join('').includes('warn'), 'stderr', ex.toJSON());
    ex = await sbx.runCode('import os; os.environ.get("E2E_VAR")', { envs: { E2E_VAR: 'set' } });
    check(ex.text === "'set'", 'env_vars for the call', ex.toJSON());
    ex = await sbx.runCode('import os; os.environ.get("E2E_VAR")');
    check(ex.text === undefined || ex.text === 'None', 'env_vars only for that call', ex.toJSON());
    ex = await sbx.runCode('echo from-bash', { language: 'bash' });
    check(ex.logs.stdout.join('').includes('from-bash'), 'bash through its runner', ex.toJSON());
  });
});

test('runCode: matplotlib figure, DataFrame, HTML', async () => {
  await withSandbox(async sbx => {
    let ex = await sbx.runCode(
      'import matplotlib.pyplot as plt\n' +
      'plt.plot([1, 2, 3], [1, 4, 9]); plt.title("squares"); plt.show()');
    const png = ex.results.find(r => r.png);
    check(png && !png.isMainResult, 'a display with png', ex.toJSON());
    check(Buffer.from(png.png, 'base64').subarray(1, 4).toString() === 'PNG', 'png is base64 PNG');
    ex = await sbx.runCode('import pandas as pd\npd.DataFrame({"b": [1, 2], "a": [3, 4]})');
    check(ex.results.length === 1, 'a DataFrame result', ex.toJSON());
    check(ex.results[0].html && ex.results[0].html.includes('<table'), 'DataFrame html', ex.toJSON());
    check(ex.results[0].text.includes('b  a'), 'DataFrame text', ex.toJSON());
    check(JSON.stringify(ex.results[0].data) === JSON.stringify({ b: [1, 2], a: [3, 4] }),
          'DataFrame data: its columns, in its order', ex.results[0].raw);
    check(ex.results[0].formats().includes('data') && Object.keys(ex.results[0].extra).length === 0,
          'data among the formats, nothing in extra', ex.results[0].raw);
    ex = await sbx.runCode('from IPython.display import HTML, Markdown, display\n' +
                           'display(HTML("<b>x</b>")); display(Markdown("# t"))');
    check(ex.results.some(r => r.html === '<b>x</b>'), 'html display', ex.toJSON());
    check(ex.results.some(r => r.markdown === '# t'), 'markdown display', ex.toJSON());
  });
});

test('runCode: a matplotlib figure\'s chart (line, bar), beside its png', async () => {
  await withSandbox(async sbx => {
    let ex = await sbx.runCode(
      'import matplotlib.pyplot as plt\n' +
      'plt.plot([1, 2, 3], [1, 4, 9], label="squares")\n' +
      'plt.plot([1, 2, 3], [1, 8, 27], label="cubes")\n' +
      'plt.title("powers"); plt.xlabel("n"); plt.ylabel("size (m)"); plt.show()');
    check(ex.results.length === 1 && ex.results[0].png, 'one display, with its png', ex.toJSON());
    let chart = ex.results[0].chart;
    check(chart && chart.type === 'line' && chart.title === 'powers', 'a line chart', ex.results[0].raw);
    check(chart.x_label === 'n' && chart.y_label === 'size (m)' && chart.y_unit === 'm',
          'its labels and unit', chart);
    check(chart.x_scale === 'linear' && chart.x_ticks.length === chart.x_tick_labels.length &&
          chart.y_ticks.length > 0, 'its ticks and scale', chart);
    // Compared member by member: the gateway's JSON keeps an object's members in name order.
    check(JSON.stringify(chart.elements.map(e => [e.label, e.points])) === JSON.stringify([
      ['squares', [[1, 1], [2, 4], [3, 9]]], ['cubes', [[1, 1], [2, 8], [3, 27]]]]),
          'its lines', chart.elements);
    check(Object.keys(ex.results[0].extra).length === 0, 'nothing unknown in extra', ex.results[0].raw);
    ex = await sbx.runCode(
      'fig, ax = plt.subplots()\n' +
      'ax.bar(["north", "south", "east"], [5, 3, 4], label="2024")\n' +
      'ax.set_title("sales by region"); ax.set_xlabel("region"); ax.set_ylabel("units")\n' +
      'plt.show()');
    chart = ex.results.find(r => r.chart)?.chart;
    check(chart && chart.type === 'bar' && chart.title === 'sales by region', 'a bar chart', ex.toJSON());
    check(chart.x_label === 'region' && chart.y_label === 'units', 'its labels', chart);
    check(JSON.stringify(chart.elements.map(e => [e.label, e.group, e.value])) === JSON.stringify([
      ['north', '2024', 5], ['south', '2024', 3], ['east', '2024', 4]]), 'its bars', chart.elements);
    ex = await sbx.runCode(
      'fig, (a, b) = plt.subplots(1, 2); a.plot([0, 1]); b.pie([1, 1], labels=["x", "y"])\n' +
      'fig.suptitle("two"); plt.show()');
    chart = ex.results.find(r => r.chart)?.chart;
    check(chart && chart.type === 'superchart' && chart.title === 'two' &&
          chart.elements.map(c => c.type).join() === 'line,pie', 'a superchart of both', chart);
  });
});

test('runCode: streaming callbacks arrive as the code runs', async () => {
  await withSandbox(async sbx => {
    const seen = [];
    const t0 = Date.now();
    const ex = await sbx.runCode(
      'import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(1)\n"done"',
      {
        onStdout: m => seen.push({ line: m.line, at: Date.now() - t0 }),
        onResult: r => seen.push({ result: r.text, at: Date.now() - t0 }),
      });
    check(ex.text === "'done'", 'result', ex.toJSON());
    const lines = seen.filter(s => s.line !== undefined);
    check(lines.length === 3, 'three stdout callbacks', seen);
    check(lines[2].at - lines[0].at >= 1500, 'they came as printed, not at the end', seen);
    check(seen.some(s => s.result === "'done'"), 'onResult', seen);
  });
});

test('runCode: a client timeout interrupts, and the next call works', async () => {
  await withSandbox(async sbx => {
    await sbx.runCode('count = 0');
    let threw = null;
    const t0 = Date.now();
    try {
      await sbx.runCode('import time\nwhile True:\n    count += 1\n    time.sleep(0.05)', { timeoutMs: 2000 });
    } catch (e) { threw = e; }
    check(threw, 'the SDK times out');
    check(Date.now() - t0 < 10000, 'promptly', Date.now() - t0);
    // The interrupt reached the kernel: the loop stopped, the state survived.
    await sleep(500);
    const a = await sbx.runCode('count', { timeoutMs: 20000 });
    await sleep(500);
    const b = await sbx.runCode('count');
    check(Number(a.text) > 0 && a.text === b.text, 'the loop was interrupted, state kept', [a.text, b.text]);
  });
});

test('code contexts: create, list, isolation, restart, remove', async () => {
  await withSandbox(async sbx => {
    const ctx = await sbx.createCodeContext({ language: 'python' });
    check(ctx.id && ctx.language === 'python' && ctx.cwd === '/home/user', 'context', ctx);
    await sbx.runCode('y = "default"');
    await sbx.runCode('y = "mine"', { context: ctx });
    let ex = await sbx.runCode('y');
    check(ex.text === "'default'", 'default context keeps its own state', ex.toJSON());
    ex = await sbx.runCode('y', { context: ctx });
    check(ex.text === "'mine'", 'the new context has its own', ex.toJSON());
    const list = await sbx.listCodeContexts();
    check(list.length === 2 && list.some(c => c.id === ctx.id), 'list', list);
    await sbx.restartCodeContext(ctx);
    ex = await sbx.runCode('y', { context: ctx });
    check(ex.error && ex.error.name === 'NameError', 'restart cleared its state', ex.toJSON());
    await sbx.removeCodeContext(ctx);
    check((await sbx.listCodeContexts()).length === 1, 'removed');
    let threw = null;
    try { await sbx.runCode('1', { context: ctx }); } catch (e) { threw = e; }
    check(threw instanceof e2b.NotFoundError, 'a removed context is not found', String(threw));
  });
});

test('code contexts share the sandbox: one file tree, one uid, starting in /home/user or their cwd', async () => {
  await withSandbox(async sbx => {
    const out = ex => ex.logs.stdout.join('');
    const where = "import os; print(os.getcwd(), os.path.expanduser('~'), os.getuid())";
    const [cwd, home, uid] = out(await sbx.runCode(where)).trim().split(' ');
    check(cwd === '/home/user' && home === '/home/user' && uid !== '0', 'the default context starts in /home/user, its HOME', [cwd, home, uid]);
    const ctx = await sbx.createCodeContext({ language: 'python' });
    const [ctxCwd, ctxHome, ctxUid] = out(await sbx.runCode(where, { context: ctx })).trim().split(' ');
    check(ctxCwd === '/home/user' && ctxHome === '/home/user' && ctxUid === uid, 'a new context: the same home, the same uid', [ctxCwd, ctxHome, ctxUid]);
    let ex = await sbx.runCode("open('from_ctx.txt', 'w').write('written in the new context')", { context: ctx });
    check(!ex.error, 'the new context writes', ex.toJSON());
    ex = await sbx.runCode("print(open('from_ctx.txt').read(), end='')");
    check(out(ex) === 'written in the new context', 'the default context reads it', ex.toJSON());
    check(await sbx.files.read('/home/user/from_ctx.txt') === 'written in the new context', 'files.read reads it');
    await sbx.files.write('/home/user/from_sdk.txt', 'for every context');
    const cmd = await sbx.commands.run('cat from_ctx.txt; echo " and" > from_cmd.txt');
    check(cmd.stdout === 'written in the new context', 'a command reads it', cmd);
    ex = await sbx.runCode("print(open('from_sdk.txt').read(), open('from_cmd.txt').read(), end='')", { context: ctx });
    check(out(ex) === 'for every context  and\n', 'the new context reads what the SDK and a command wrote', ex.toJSON());
    // Its own kernel all the same: a restart keeps the files, and its removal too.
    await sbx.restartCodeContext(ctx);
    ex = await sbx.runCode("import os; print(sorted(f for f in os.listdir() if f.startswith('from_')))", { context: ctx });
    check(out(ex) === "['from_cmd.txt', 'from_ctx.txt', 'from_sdk.txt']\n", 'a restart keeps the files', ex.toJSON());
    await sbx.removeCodeContext(ctx);
    check(await sbx.files.exists('/home/user/from_ctx.txt'), 'removing a context keeps the sandbox\'s files');
    // cwd: a directory of the sandbox, where the context's code starts.
    await sbx.files.makeDir('/home/user/sub/deeper');
    const sub = await sbx.createCodeContext({ cwd: '/home/user/sub/deeper' });
    check(sub.cwd === '/home/user/sub/deeper', 'the context reports its cwd', sub);
    ex = await sbx.runCode("import os; print(os.getcwd()); open('here.txt', 'w').write('x')", { context: sub });
    check(out(ex) === '/home/user/sub/deeper\n', 'and starts there', ex.toJSON());
    check(await sbx.files.exists('/home/user/sub/deeper/here.txt'), 'its relative paths are there');
    // The SDK's error says only "400 Bad Request"; the body names the reason.
    const h = { 'E2b-Sandbox-Id': sbx.sandboxId, 'X-Access-Token': sbx.envdAccessToken, 'Content-Type': 'application/json' };
    for (const [cwd, why] of [['/home/user/nowhere', /nowhere|no such|not exist/i], ['/etc', /home|outside|permission/i],
                              ['/home/user/from_ctx.txt', /not a directory/], ['../x', /home|outside|permission/i]]) {
      let threw = null;
      try { await sbx.createCodeContext({ cwd }); } catch (e) { threw = e; }
      check(threw instanceof e2b.SandboxError, 'the SDK refuses a cwd that is not a directory of the sandbox: ' + cwd, String(threw));
      const r = await fetch(BASE_URL + '/contexts', { method: 'POST', headers: h, body: JSON.stringify({ cwd }) });
      const j = await r.json();
      check(r.status === 400 && /'cwd'/.test(j.message) && why.test(j.message), 'and says why: ' + cwd, [r.status, j]);
    }
    check((await sbx.listCodeContexts()).length === 2, 'refused contexts were not made');
  });
});

test('a sandbox\'s contexts share its memory limit (the server\'s 2GiB), as a VM\'s processes do', async () => {
  await withSandbox(async sbx => {
    const hold = mib => `x = bytearray(${mib} << 20); x[::4096] = b'1' * len(x[::4096]); print(len(x) >> 20)`;
    let ex = await sbx.runCode(hold(600));
    check(ex.logs.stdout.join('') === '600\n', 'the default context holds 600 MiB', ex.toJSON());
    // 1600 MiB fits a kernel's limit alone, not beside the other context's 600: the larger
    // one, this context's, is the OOM killer's choice.
    const ctx = await sbx.createCodeContext({ language: 'python' });
    ex = await sbx.runCode(hold(1600), { context: ctx });
    check(ex.error && ex.error.name === 'KernelRestarted' && /out of memory \(limit 2GiB\)/.test(ex.error.value),
      'the new context is killed at the sandbox\'s limit', ex.toJSON());
    ex = await sbx.runCode('print(len(x) >> 20)');
    check(ex.logs.stdout.join('') === '600\n', 'the default context keeps its memory', ex.toJSON());
    ex = await sbx.runCode(hold(300), { context: ctx });
    check(ex.logs.stdout.join('') === '300\n', 'the restarted context runs within what is left', ex.toJSON());
  });
});

test('the data plane wants the sandbox token', async () => {
  await withSandbox(async sbx => {
    const res = await fetch(BASE_URL + '/execute', {
      method: 'POST',
      headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'X-Access-Token': 'nope', 'Content-Type': 'application/json' },
      body: JSON.stringify({ code: '1' }),
    });
    check(res.status === 401, 'wrong token 401', res.status);
    const body = await res.json();
    check(body.code === 401 && typeof body.message === 'string', 'E2B error shape', body);
    const user = await fetch(BASE_URL + '/contexts', {
      headers: { 'E2b-Sandbox-Id': sbx.sandboxId, Authorization: `token ${TOKEN}` },
    });
    check(user.status === 401, 'the user token is not the sandbox token', user.status);
    for (const bad of ['{', '[]', '{"code":5}', '{"code":"1","language":"cobol"}']) {
      const r = await fetch(BASE_URL + '/execute', {
        method: 'POST',
        headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'X-Access-Token': sbx.envdAccessToken },
        body: bad,
      });
      check(r.status === 400, `malformed ${bad}`, r.status);
      check((await r.json()).code === 400, 'E2B error shape');
    }
  });
});

// A raw request with a Host header of our choosing, to the server's loopback address.
function requestWithHost(host, path, headers, body) {
  const url = new URL(BASE_URL);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path, method: body ? 'POST' : 'GET',
      headers: { Host: host, ...headers } }, res => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', chunk => { text += chunk; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('--e2b-domain: a host <port>-<id>.DOMAIN names the sandbox, any other host none', async () => {
  const domain = process.env.CALLISTO_E2E_E2B_DOMAIN;  // the server's --e2b-domain
  check(domain, 'CALLISTO_E2E_E2B_DOMAIN names the server\'s --e2b-domain');
  await withSandbox(async sbx => {
    const token = { 'X-Access-Token': sbx.envdAccessToken, 'Content-Type': 'application/json' };
    const run = host => requestWithHost(host, '/execute', token, JSON.stringify({ code: '6*7' }));
    for (const host of [`49999-${sbx.sandboxId}.${domain}`, `49983-${sbx.sandboxId}.${domain.toUpperCase()}:443`]) {
      const r = await run(host);
      check(r.status === 200 && r.text.includes('"text":"42"'), `the code ran through ${host}`, r);
    }
    for (const host of [`49999-${sbx.sandboxId}.other.test`, `49999-${sbx.sandboxId}.x.${domain}`,
      `${sbx.sandboxId}.${domain}`, `port-${sbx.sandboxId}.${domain}`, '127.0.0.1']) {
      const r = await run(host);
      check(r.status === 404 && JSON.parse(r.text).message.includes('no sandbox named'), `${host} names no sandbox`, r);
    }
    // The header still names it, whatever the host.
    const byHeader = await requestWithHost('127.0.0.1', '/execute', { ...token, 'E2b-Sandbox-Id': sbx.sandboxId },
      JSON.stringify({ code: '6*7' }));
    check(byHeader.status === 200 && byHeader.text.includes('"text":"42"'), 'E2b-Sandbox-Id still works', byHeader);
    // The host names the sandbox; its token still lets the request in.
    const wrong = await requestWithHost(`49999-${sbx.sandboxId}.${domain}`, '/execute',
      { 'X-Access-Token': 'nope', 'Content-Type': 'application/json' }, JSON.stringify({ code: '1' }));
    check(wrong.status === 401, 'a wrong token through the host: 401', wrong);
  });
});

test('files: write, read, list, exists, makeDir, rename, getInfo, remove', async () => {
  await withSandbox(async sbx => {
    const info = await sbx.files.write('/home/user/notes/a.txt', 'hello from the SDK\n');
    check(info.path === '/home/user/notes/a.txt' && info.name === 'a.txt' && info.type === 'file', 'write answer', info);
    check(await sbx.files.read('/home/user/notes/a.txt') === 'hello from the SDK\n', 'read back');
    check(await sbx.files.read('notes/a.txt') === 'hello from the SDK\n', 'a relative path is under /home/user');
    const bytes = new Uint8Array([0, 1, 2, 255, 254, 10, 13, 0]);
    await sbx.files.write('bin/data.bin', bytes.buffer);
    const back = await sbx.files.read('bin/data.bin', { format: 'bytes' });
    check(back.length === bytes.length && back.every((b, i) => b === bytes[i]), 'binary safe', Array.from(back));
    // Several files in one form, each named by its filename.
    const many = await sbx.files.write([{ path: 'm/one.txt', data: '1' }, { path: '/home/user/m/two.txt', data: '22' }]);
    check(many.length === 2 && many[1].path === '/home/user/m/two.txt', 'writeFiles answer', many);
    // A stream goes as application/octet-stream (envd >= 0.5.7).
    const { Readable } = await import('node:stream');
    const streamed = await sbx.files.write('s.txt', Readable.toWeb(Readable.from([Buffer.from('str'), Buffer.from('eam')])));
    check(streamed.path === '/home/user/s.txt', 'stream write answer', streamed);
    check(await sbx.files.read('/home/user/s.txt') === 'stream', 'stream written');

    const list = await sbx.files.list('/home/user');
    const names = list.map(e => e.name);
    check(names.includes('notes') && names.includes('s.txt'), 'list', names);
    const notes = list.find(e => e.name === 'notes');
    check(notes.type === 'dir' && notes.path === '/home/user/notes', 'dir entry', notes);
    const deep = await sbx.files.list('/home/user', { depth: 2 });
    check(deep.some(e => e.path === '/home/user/notes/a.txt' && e.type === 'file' && e.size === 19), 'depth 2', deep);

    check(await sbx.files.exists('/home/user/notes/a.txt') === true, 'exists');
    check(await sbx.files.exists('/home/user/nope.txt') === false, 'does not exist');
    check(await sbx.files.makeDir('/home/user/x/y') === true, 'makeDir');
    check(await sbx.files.makeDir('/home/user/x/y') === false, 'makeDir of an existing one');
    const got = await sbx.files.getInfo('/home/user/notes/a.txt');
    check(got.type === 'file' && got.size === 19 && got.permissions === '-rw-r--r--' && got.modifiedTime instanceof Date
      && Math.abs(got.modifiedTime.getTime() - Date.now()) < 600000, 'getInfo', got);
    const moved = await sbx.files.rename('/home/user/notes/a.txt', '/home/user/x/b.txt');
    check(moved.path === '/home/user/x/b.txt' && moved.type === 'file', 'rename', moved);
    check(await sbx.files.exists('/home/user/notes/a.txt') === false, 'renamed away');
    await sbx.files.remove('/home/user/x');
    check(await sbx.files.exists('/home/user/x/b.txt') === false, 'removed with its directory');

    let threw = null;
    try { await sbx.files.read('/home/user/nope.txt'); } catch (e) { threw = e; }
    check(threw instanceof e2b.FileNotFoundError, 'reading a missing file', String(threw));
    threw = null;
    try { await sbx.files.getInfo('/home/user/nope.txt'); } catch (e) { threw = e; }
    check(threw instanceof e2b.FileNotFoundError, 'getInfo of a missing file', String(threw));
    threw = null;
    try { await sbx.files.read('/etc/passwd'); } catch (e) { threw = e; }
    check(threw !== null && !(threw instanceof e2b.FileNotFoundError), 'outside the home is refused', String(threw));
    threw = null;
    try { await sbx.files.list('/home/user/../../etc'); } catch (e) { threw = e; }
    check(threw !== null, 'traversal is refused', String(threw));
  });
});

test('files: one tree with the code, both ways, and links not followed', async () => {
  await withSandbox(async sbx => {
    const ex = await sbx.runCode("open('from_code.txt', 'w').write('written by runCode')\nimport os; os.makedirs('dd', exist_ok=True)");
    check(!ex.error, 'runCode wrote', ex.toJSON());
    check(await sbx.files.read('/home/user/from_code.txt') === 'written by runCode', 'the SDK reads what the code wrote');
    check((await sbx.files.getInfo('/home/user/dd')).type === 'dir', 'and sees its directories');
    await sbx.files.write('/home/user/from_sdk.txt', 'written by files.write');
    const read = await sbx.runCode("print(open('from_sdk.txt').read())");
    check(read.logs.stdout.join('') === 'written by files.write\n', 'the code reads what the SDK wrote', read.toJSON());
    // Code written for E2B names its files by E2B's home.
    const home = await sbx.runCode("print(open('/home/user/from_sdk.txt').read(), end='')\n" +
                                   "open('/home/user/by_home.txt', 'w').write('by /home/user')");
    check(home.logs.stdout.join('') === 'written by files.write' && !home.error, 'the code finds /home/user', home.toJSON());
    check(await sbx.files.read('by_home.txt') === 'by /home/user', 'what it writes there is the same tree');
    const link = await sbx.runCode("import os; os.symlink('/etc/passwd', 'pw'); os.symlink('/etc', 'etc')");
    check(!link.error, 'links made', link.toJSON());
    const pw = await sbx.files.getInfo('/home/user/pw');
    check(pw.type === 'symlink' && pw.symlinkTarget === '/etc/passwd', 'a link is reported as one', pw);
    let threw = null;
    try { await sbx.files.read('/home/user/pw'); } catch (e) { threw = e; }
    check(threw !== null, 'a link is not followed on read', String(threw));
    threw = null;
    try { await sbx.files.list('/home/user/etc'); } catch (e) { threw = e; }
    check(threw !== null, 'nor on list', String(threw));
    threw = null;
    try { await sbx.files.write('/home/user/etc/evil', 'x'); } catch (e) { threw = e; }
    check(threw !== null, 'nor on write', String(threw));
  });
});

test('files: envd answers its bad requests with Connect errors', async () => {
  await withSandbox(async sbx => {
    const h = { 'E2b-Sandbox-Id': sbx.sandboxId, 'X-Access-Token': sbx.envdAccessToken };
    const health = await fetch(BASE_URL + '/health', { headers: h });
    check(health.status === 204, '/health', health.status);
    const rpc = (m, body, type = 'application/json') => fetch(BASE_URL + '/filesystem.Filesystem/' + m, {
      method: 'POST', headers: { ...h, 'Content-Type': type, 'Connect-Protocol-Version': '1' }, body,
    });
    for (const [m, body, code] of [['Stat', '{', 'invalid_argument'], ['Stat', '{}', 'invalid_argument'],
      ['Stat', '{"path":"/etc"}', 'permission_denied'], ['Nope', '{}', 'unimplemented'],
      ['ListDir', '{"path":"/home/user","depth":-1}', 'invalid_argument']]) {
      const r = await rpc(m, body);
      const j = await r.json();
      check(j.code === code, `${m} ${body}`, [r.status, j]);
    }
    check((await rpc('Stat', '{"path":"."}', 'application/proto')).status === 415, 'proto codec refused');
    // process.Process/Start is a server stream: a refusal is 200 with only the end frame.
    const start = (body, type = 'application/connect+json') => fetch(BASE_URL + '/process.Process/Start', {
      method: 'POST', headers: { ...h, 'Content-Type': type, 'Connect-Protocol-Version': '1' }, body,
    });
    const endFrame = async r => {
      const b = Buffer.from(await r.arrayBuffer());
      check(b.length >= 5 && b[0] === 2 && b.readUInt32BE(1) === b.length - 5, 'one end frame', Array.from(b));
      return JSON.parse(b.subarray(5).toString());
    };
    const envelope = json => { const p = Buffer.from(json); const b = Buffer.alloc(5 + p.length); b.writeUInt32BE(p.length, 1); p.copy(b, 5); return b; };
    for (const [body, code] of [[Buffer.from('{"process":{"cmd":"ls"}}'), 'invalid_argument'],
      [envelope('{'), 'invalid_argument'], [envelope('{"process":{"cmd":"ls","cwd":"/etc"}}'), 'permission_denied'],
      [envelope('{"process":{"cmd":"ls"},"pty":{"size":{"cols":80,"rows":24}}}'), 'unimplemented']]) {
      const r = await start(body);
      check(r.status === 200, 'a refused stream is 200', r.status);
      const end = await endFrame(r);
      check(end.error && end.error.code === code, `Start ${body}`, end);
    }
    check((await start(envelope('{}'), 'application/json')).status === 415, 'Start wants connect+json');
    const other = await fetch(BASE_URL + '/process.Process/Nope', { method: 'POST', headers: { ...h, 'Content-Type': 'application/json' }, body: '{}' });
    check((await other.json()).code === 'unimplemented', 'other process methods');
    const noPath = await fetch(BASE_URL + '/files', { headers: h });
    check(noPath.status === 400, 'GET /files without a path', noPath.status);
    const wrongToken = await fetch(BASE_URL + '/files?path=x', { headers: { ...h, 'X-Access-Token': 'nope' } });
    check(wrongToken.status === 401, 'the sandbox token is wanted', wrongToken.status);
  });
});

test('commands.run: bash in the sandbox, output, exit codes, envs, cwd, one tree with files', async () => {
  await withSandbox(async sbx => {
    const r = await sbx.commands.run('echo hello; echo oops >&2; pwd');
    check(r.exitCode === 0 && r.stdout === 'hello\n/home/user\n' && r.stderr === 'oops\n', 'run', r);
    // The kernel's jail and uid: the command and the code are the same user.
    const uid = (await sbx.commands.run('id -u')).stdout.trim();
    const kernelUid = (await sbx.runCode('import os; print(os.getuid())')).logs.stdout.join('').trim();
    check(uid === kernelUid && uid !== '0', 'same uid as the kernel', [uid, kernelUid]);
    let threw = null;
    try { await sbx.commands.run('echo partial; exit 3'); } catch (e) { threw = e; }
    check(threw instanceof e2b.CommandExitError && threw.exitCode === 3 && threw.stdout === 'partial\n', 'a non-zero exit', String(threw));
    const env = await sbx.commands.run('echo "$FOO"', { envs: { FOO: 'bar baz' } });
    check(env.stdout === 'bar baz\n', 'envs', env);
    await sbx.files.makeDir('/home/user/sub');
    const cwd = await sbx.commands.run('pwd', { cwd: '/home/user/sub' });
    check(cwd.stdout === '/home/user/sub\n', 'cwd', cwd);
    await sbx.commands.run('echo from-command > cmd.txt');
    check(await sbx.files.read('/home/user/cmd.txt') === 'from-command\n', 'files.read reads what the command wrote');
    await sbx.files.write('/home/user/for-cmd.txt', 'from-files');
    check((await sbx.commands.run('cat for-cmd.txt')).stdout === 'from-files', 'the command reads what files.write wrote');
    const seen = [];
    await sbx.commands.run('for i in 1 2 3; do echo $i; sleep 0.2; done', { onStdout: d => seen.push(d) });
    check(seen.join('') === '1\n2\n3\n' && seen.length >= 2, 'onStdout as it comes', seen);
    // A client that gives up has the command stopped, and the next one runs.
    const t0 = Date.now();
    threw = null;
    try { await sbx.commands.run('sleep 60', { timeoutMs: 1500 }); } catch (e) { threw = e; }
    check(threw !== null, 'the client timeout ends the call', String(threw));
    const next = await sbx.commands.run('echo next', { timeoutMs: 20000 });
    check(next.stdout === 'next\n' && Date.now() - t0 < 30000, 'the next command runs', [next, Date.now() - t0]);
    threw = null;
    try { await sbx.commands.run('cat /etc/shadow'); } catch (e) { threw = e; }
    check(threw instanceof e2b.CommandExitError && threw.exitCode !== 0, 'the sandbox confines the command', String(threw));
  });
});

test('commands: a process of its own in the kernel\'s sandbox, beside runCode, and as confined', async () => {
  await withSandbox(async sbx => {
    // Beside a running runCode, not queued behind it.
    let codeDone = false;
    const code = sbx.runCode('import time; time.sleep(4); print("slept")').then(r => { codeDone = true; return r; });
    await sleep(500);
    const beside = await sbx.commands.run('echo beside');
    check(beside.stdout === 'beside\n' && !codeDone, 'the command ran while the code ran', [beside, codeDone]);
    check((await code).logs.stdout.join('') === 'slept\n', 'the code ran to its end');
    // The same namespaces, cgroups, limits, ids and seccomp state as the kernel.
    const probe = 'for n in mnt pid net ipc uts user cgroup; do readlink /proc/self/ns/$n; done; ' +
      'cat /proc/self/cgroup /proc/self/limits; id -u; id -g; ' +
      'grep -E "^(Seccomp|NoNewPrivs|CapEff|CapPrm|CapBnd):" /proc/self/status';
    const fromCommand = (await sbx.commands.run(probe)).stdout;
    const fromKernel = (await sbx.runCode(
      `import subprocess; print(subprocess.run(['bash', '-c', ${JSON.stringify(probe)}], capture_output=True, text=True).stdout, end='')`
    )).logs.stdout.join('');
    check(fromCommand.length > 0 && fromCommand === fromKernel, 'the kernel\'s confinement', [fromCommand, fromKernel]);
    check(/Seccomp:\s+2/.test(fromCommand) && /NoNewPrivs:\s+1/.test(fromCommand) &&
      /CapEff:\s+0+\n/.test(fromCommand) && /CapBnd:\s+0+\n/.test(fromCommand), 'seccomp, no_new_privs, no capability', fromCommand);
    // A real pid of the sandbox: the kernel sees the command's process.
    const bg = await sbx.commands.run('exec sleep 30', { background: true });
    check(Number.isInteger(bg.pid) && bg.pid > 1, 'a pid', bg.pid);
    // Read until the process has finished exec'ing: caught between fork and exec, or inside
    // execve, its cmdline reads empty (seen under load).
    const seen = (await sbx.runCode(
      `import time\nfor _ in range(100):\n    c = open('/proc/${bg.pid}/cmdline').read()\n    if c: break\n    time.sleep(0.05)\nprint(c.split('\\0')[0])`
    )).logs.stdout.join('');
    check(/^(sleep|\/bin\/bash)\n$/.test(seen), 'the kernel sees the command by its pid', seen);
    await bg.kill();
  });
});

test('commands: background, stdin, list, connect, kill, and their bad inputs', async () => {
  await withSandbox(async sbx => {
    // A background command with stdin, envs and cwd: its handle, its pid listed.
    await sbx.files.makeDir('/home/user/bg');
    const out = [];
    const cat = await sbx.commands.run('echo "start $WHO in $(pwd)"; cat; echo "stdin closed"', {
      background: true, stdin: true, envs: { WHO: 'cat' }, cwd: '/home/user/bg', onStdout: d => out.push(d),
    });
    check(Number.isInteger(cat.pid) && cat.pid > 1, 'a pid', cat.pid);
    const listed = await sbx.commands.list();
    const mine = listed.find(p => p.pid === cat.pid);
    check(mine && mine.cmd === '/bin/bash' && mine.args[2].startsWith('echo "start') && mine.envs.WHO === 'cat' &&
      mine.cwd === '/home/user/bg', 'listed with its config', listed);
    await sbx.commands.sendStdin(cat.pid, 'line one\n');
    await sbx.commands.sendStdin(cat.pid, new TextEncoder().encode('line two\n'));
    // Another client attaches to the running command and sees what follows.
    const seen = [];
    const attached = await sbx.commands.connect(cat.pid, { onStdout: d => seen.push(d) });
    check(attached.pid === cat.pid, 'connect gives the same pid', attached.pid);
    await sleep(300);
    await sbx.commands.sendStdin(cat.pid, 'line three\n');
    await sbx.commands.closeStdin(cat.pid);
    const done = await cat.wait();
    check(done.exitCode === 0 && done.stdout === 'start cat in /home/user/bg\nline one\nline two\nline three\nstdin closed\n',
      'the background command read its stdin to its end', done);
    check(out.join('') === done.stdout, 'onStdout saw it all', out);
    const after = await attached.wait();
    check(after.stdout.includes('line three\n') && after.exitCode === 0, 'the attached client saw the rest and the end', after);
    check(!(await sbx.commands.list()).some(p => p.pid === cat.pid), 'an ended command is no longer listed');

    // Kill: the handle's, then again (false), and an unknown pid (false).
    const sleeper = await sbx.commands.run('sleep 60', { background: true });
    check(await sleeper.kill() === true, 'kill');
    let threw = null;
    try { await sleeper.wait(); } catch (e) { threw = e; }
    check(threw instanceof e2b.CommandExitError && threw.exitCode !== 0 && /signal: killed/.test(threw.error || ''),
      'a killed command ends by SIGKILL', String(threw && (threw.error || threw)));
    check(await sbx.commands.kill(sleeper.pid) === false, 'killed twice: false');
    check(await sbx.commands.kill(999999) === false, 'an unknown pid: false');
    // A disconnected handle leaves the command running; it is found and killed by pid.
    const detached = await sbx.commands.run('sleep 60', { background: true });
    await detached.disconnect();
    await sleep(300);
    check((await sbx.commands.list()).some(p => p.pid === detached.pid), 'a disconnected command runs on');
    check(await sbx.commands.kill(detached.pid) === true, 'killed by pid');

    // Bad inputs: E2B's errors.
    threw = null;
    try { await sbx.commands.sendStdin(999999, 'x'); } catch (e) { threw = e; }
    check(threw && /not found/i.test(String(threw)), 'stdin to an unknown pid', String(threw));
    threw = null;
    try { await sbx.commands.connect(999999); } catch (e) { threw = e; }
    check(threw && /not found/i.test(String(threw)), 'connect to an unknown pid', String(threw));
    const noStdin = await sbx.commands.run('sleep 60', { background: true });
    threw = null;
    try { await sbx.commands.sendStdin(noStdin.pid, 'x'); } catch (e) { threw = e; }
    check(threw && /stdin/.test(String(threw)), 'stdin to a command started without it', String(threw));
    const h = { 'E2b-Sandbox-Id': sbx.sandboxId, 'X-Access-Token': sbx.envdAccessToken,
      'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' };
    const rpc = (m, body) => fetch(BASE_URL + '/process.Process/' + m, { method: 'POST', headers: h, body });
    for (const [m, body, code] of [
      ['SendSignal', JSON.stringify({ process: { pid: noStdin.pid }, signal: 'SIGNAL_SIGSTOP' }), 'invalid_argument'],
      ['SendSignal', JSON.stringify({ process: { pid: noStdin.pid } }), 'invalid_argument'],
      ['SendSignal', JSON.stringify({ process: { pid: 999999 }, signal: 'SIGNAL_SIGTERM' }), 'not_found'],
      ['SendSignal', '{', 'invalid_argument'],
      ['SendInput', JSON.stringify({ process: { pid: noStdin.pid }, input: { stdin: '%%%' } }), 'invalid_argument'],
      ['CloseStdin', JSON.stringify({ process: { tag: 'none' } }), 'not_found'],
      ['CloseStdin', JSON.stringify({ process: {} }), 'invalid_argument']]) {
      const r = await rpc(m, body);
      const j = await r.json();
      check(r.status !== 200 && j.code === code, `${m} ${body}`, [r.status, j]);
    }
    const term = await rpc('SendSignal', JSON.stringify({ process: { pid: noStdin.pid }, signal: 'SIGNAL_SIGTERM' }));
    check(term.status === 200, 'SIGTERM', term.status);
    threw = null;
    try { await noStdin.wait(); } catch (e) { threw = e; }
    check(threw instanceof e2b.CommandExitError && /signal: terminated/.test(threw.error || ''), 'SIGTERM ends it', String(threw && threw.error));
  });
});

test('commands cannot leave the sandbox: host files, another sandbox, the network, the pids limit', async () => {
  const other = await Sandbox.create({ timeoutMs: 120000 });
  try {
    const secret = 'secret-' + Math.random().toString(36).slice(2);
    await other.files.write('/home/user/' + secret, 'theirs');
    await withSandbox(async sbx => {
      const run = async c => { try { return await sbx.commands.run(c); } catch (e) { return e; } };
      const found = await run(`find / -xdev -name ${secret} 2>/dev/null; find /work /tmp -name ${secret} 2>/dev/null; true`);
      check(found.stdout === '', 'another sandbox\'s file is nowhere', found.stdout);
      for (const c of ['cat /etc/shadow', 'ls /var/lib/callisto', 'ls /root', 'cat /proc/1/environ | grep -a CALLISTO_TOKEN']) {
        const r = await run(c);
        check(r.exitCode !== 0, 'host files out of reach: ' + c, [r.exitCode, r.stdout]);
      }
      const ifaces = await run('tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "');
      check(ifaces.stdout === 'lo\n', 'only loopback', ifaces.stdout);
      const port = new URL(BASE_URL).port || '80';
      const dial = await run(`timeout 5 bash -c 'echo > /dev/tcp/127.0.0.1/${port}'`);
      check(dial.exitCode !== 0, 'the gateway unreachable', dial.exitCode);
      const forks = await run(`python3 -c '
import os, time
pids = []
try:
    for _ in range(2000):
        pid = os.fork()
        if pid == 0:
            time.sleep(5)
            os._exit(0)
        pids.append(pid)
    print("unlimited", len(pids))
except OSError as e:
    print("limited", len(pids))
for pid in pids:
    os.kill(pid, 9)
'`);
      check(/^limited \d+\n$/.test(forks.stdout) && Number(forks.stdout.split(' ')[1]) < 2000, 'the pids limit holds', forks.stdout);
      const after = await run('echo still here');
      check(after.stdout === 'still here\n', 'the sandbox runs on', after);
    });
  } finally {
    await other.kill().catch(() => {});
  }
});

// The server runs with --egress-allow=127.0.0.2:$CALLISTO_E2E_EGRESS_PORT (e2e_tests.cpp); this
// script serves that port and the one after it on loopback. Nothing here leaves loopback.
const EGRESS_PORT = Number(process.env.CALLISTO_E2E_EGRESS_PORT || 0);

test('network on create: allowOut reaches an allowed loopback server, another port is refused, the ceiling is a 403', async () => {
  if (!EGRESS_PORT) { console.log('  no CALLISTO_E2E_EGRESS_PORT: skipped'); return; }
  const http = await import('node:http');
  const servers = [];
  for (const port of [EGRESS_PORT, EGRESS_PORT + 1]) {
    const s = http.createServer((req, res) => res.end(`hello from ${port}`));
    await new Promise((resolve, reject) => { s.once('error', reject); s.listen(port, '127.0.0.2', resolve); });
    servers.push(s);
  }
  try {
    const fetch = port => `
import urllib.request, urllib.error
try:
    print(urllib.request.urlopen('http://127.0.0.2:${port}/', timeout=20).read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode(errors='replace').strip()[:300])
`;
    // E2B's own form for "only these": allowOut, with all other traffic denied.
    await withSandbox(async sbx => {
      const ok = await sbx.runCode(fetch(EGRESS_PORT));
      check(ok.logs.stdout.join('') === `hello from ${EGRESS_PORT}\n`, 'the allowed server reached', ok.toJSON());
      const refused = await sbx.runCode(fetch(EGRESS_PORT + 1));
      const line = refused.logs.stdout.join('');
      check(line.startsWith('403') && line.includes(`port ${EGRESS_PORT + 1} is not allowed`), 'another port refused with its rule', line);
      const info = await sbx.getInfo();
      check(info.allowInternetAccess === false, 'getInfo: no internet beyond the list', info);
      // A context made on the data plane has the sandbox's network too.
      const ctx = await sbx.createCodeContext();
      const other = await sbx.runCode(fetch(EGRESS_PORT), { context: ctx });
      check(other.logs.stdout.join('') === `hello from ${EGRESS_PORT}\n`, 'a second context reaches it too', other.toJSON());
    }, { network: { allowOut: [`127.0.0.2:${EGRESS_PORT}`], denyOut: ({ allTraffic }) => [allTraffic] } });
    // Without network: none, as before.
    await withSandbox(async sbx => {
      const r = await sbx.runCode("import os; print(sorted(k for k in os.environ if 'proxy' in k.lower()))");
      check(r.logs.stdout.join('') === '[]\n', 'no proxy variables without network', r.toJSON());
    });
    const refusal = async opts => { try { await Sandbox.create({ timeoutMs: 60000, ...opts }); return null; } catch (e) { return e; } };
    let e = await refusal({ network: { allowOut: [`127.0.0.2:${EGRESS_PORT + 1}`] } });
    check(e && /asks for more than this server allows/.test(e.message) && e.message.includes(`127.0.0.2:${EGRESS_PORT + 1}`), 'beyond the ceiling: refused naming the rule', String(e));
    e = await refusal({ network: { allowOut: ['pypi.org'], egressProxy: { address: 'proxy.example.com:1080' } } });
    check(e && /egressProxy' cannot be honoured/.test(e.message), 'an option that cannot be honoured: a 400 naming it', String(e));
    e = await refusal({ network: { allowOut: ['8.8.8.0/24'] } });
    check(e && /not address ranges/.test(e.message), 'a range in allowOut refused', String(e));
  } finally {
    for (const s of servers) s.close();
  }
});

test('files.watchDir: events as the sandbox\'s files change, recursive or not, and its refusals', async () => {
  await withSandbox(async sbx => {
    await sbx.files.makeDir('/home/user/w/sub');
    const events = [];
    const handle = await sbx.files.watchDir('/home/user/w', e => events.push(`${e.type} ${e.name}`));
    await sbx.files.write('/home/user/w/a.txt', 'one');
    await sbx.commands.run('echo more >> w/a.txt; chmod 600 w/a.txt; mv w/a.txt w/b.txt; rm w/b.txt; mkdir w/new; touch w/sub/deep.txt');
    await sleep(700);
    await handle.stop();
    for (const want of ['create a.txt', 'write a.txt', 'chmod a.txt', 'rename a.txt', 'create b.txt', 'remove b.txt', 'create new']) {
      check(events.includes(want), 'an event: ' + want, events);
    }
    check(!events.some(e => e.includes('deep.txt')), 'not recursive: nothing from below', events);
    const deep = [];
    const recursive = await sbx.files.watchDir('/home/user/w', e => deep.push(`${e.type} ${e.name}`), { recursive: true });
    await sbx.commands.run('touch w/sub/deeper.txt; mkdir w/sub/made');
    await sleep(500);
    await sbx.commands.run('touch w/sub/made/deepest.txt');
    await sleep(700);
    await recursive.stop();
    for (const want of ['create sub/deeper.txt', 'create sub/made', 'create sub/made/deepest.txt']) {
      check(deep.includes(want), 'a recursive event: ' + want, deep);
    }
    // Refusals: a missing directory, a file, a link (never followed), outside the home.
    await sbx.commands.run('ln -s /etc w/etc-link');
    for (const [path, re] of [['/home/user/nope', /not (exist|found)/i], ['/home/user/w/sub/deeper.txt', /not a directory/],
      ['/home/user/w/etc-link', /not a directory/], ['/etc', /home|outside|permission/i]]) {
      let threw = null;
      try { await sbx.files.watchDir(path, () => {}); } catch (e) { threw = e; }
      check(threw && re.test(String(threw)), 'refused: ' + path, String(threw));
    }
  });
});

test('polling watchers (the Python SDK\'s watch_dir): CreateWatcher, GetWatcherEvents, RemoveWatcher', async () => {
  const other = await Sandbox.create({ timeoutMs: 120000 });
  try {
    await withSandbox(async sbx => {
      // As E2B's synchronous Python SDK sends them: unary Connect calls, JSON codec.
      const call = (box, m, body) => fetch(BASE_URL + '/filesystem.Filesystem/' + m, {
        method: 'POST', body: JSON.stringify(body),
        headers: { 'E2b-Sandbox-Id': box.sandboxId, 'X-Access-Token': box.envdAccessToken,
                   'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' },
      }).then(async r => ({ status: r.status, body: await r.json() }));
      await sbx.files.makeDir('/home/user/p/sub');
      const made = await call(sbx, 'CreateWatcher', { path: '/home/user/p', recursive: true });
      check(made.status === 200 && typeof made.body.watcherId === 'string', 'created', made);
      const id = made.body.watcherId;
      let polled = await call(sbx, 'GetWatcherEvents', { watcherId: id });
      check(polled.status === 200 && polled.body.events.length === 0, 'nothing yet', polled);
      await sbx.files.write('/home/user/p/a.txt', 'one');
      await sbx.runCode("open('p/sub/b.txt', 'w').write('two')");
      await sleep(500);
      polled = await call(sbx, 'GetWatcherEvents', { watcherId: id });
      const seen = polled.body.events.map(e => `${e.type} ${e.name}`);
      // files.write renames its upload into place: a.txt is created whole.
      for (const want of ['EVENT_TYPE_CREATE a.txt', 'EVENT_TYPE_CREATE sub/b.txt', 'EVENT_TYPE_WRITE sub/b.txt'])
        check(seen.includes(want), 'polled: ' + want, seen);
      polled = await call(sbx, 'GetWatcherEvents', { watcherId: id });
      check(polled.body.events.length === 0, 'each event once', polled);
      // Another sandbox cannot poll or remove it, even with the id.
      for (const m of ['GetWatcherEvents', 'RemoveWatcher']) {
        const r = await call(other, m, { watcherId: id });
        check(r.status === 404 && r.body.code === 'not_found', 'another sandbox: ' + m, r);
      }
      const removed = await call(sbx, 'RemoveWatcher', { watcherId: id });
      check(removed.status === 200, 'removed', removed);
      await sbx.files.write('/home/user/p/c.txt', 'three');
      for (const m of ['GetWatcherEvents', 'RemoveWatcher']) {
        const r = await call(sbx, m, { watcherId: id });
        check(r.status === 404 && r.body.code === 'not_found', 'gone: ' + m, r);
      }
      // Bad requests: Connect's errors, as WatchDir's.
      for (const [m, body, code] of [['CreateWatcher', {}, 'invalid_argument'], ['CreateWatcher', { path: '/etc' }, 'permission_denied'],
        ['CreateWatcher', { path: '/home/user/nope' }, 'not_found'], ['CreateWatcher', { path: '/home/user/p/a.txt' }, 'invalid_argument'],
        ['CreateWatcher', { path: '/home/user/p', includeEntry: true }, 'unimplemented'],
        ['GetWatcherEvents', {}, 'invalid_argument'], ['RemoveWatcher', { watcherId: 7 }, 'invalid_argument']]) {
        const r = await call(sbx, m, body);
        check(r.body.code === code, `${m} ${JSON.stringify(body)}`, r);
      }
      // A sandbox's watchers are bounded; they go with it (kill below).
      const ids = [];
      for (let i = 0; i < 64; i++) ids.push((await call(sbx, 'CreateWatcher', { path: '/home/user/p' })).body.watcherId);
      check(ids.every(Boolean), '64 watchers', ids.length);
      const over = await call(sbx, 'CreateWatcher', { path: '/home/user/p' });
      check(over.body.code === 'resource_exhausted', 'the 65th refused', over);
    });
  } finally {
    await other.kill().catch(() => {});
  }
});

test('a sandbox past its timeout is culled with its contexts', async () => {
  const sbx = await Sandbox.create({ timeoutMs: 3000 });
  await sbx.runCode('1');
  const before = await (await fetch(BASE_URL + '/v1/contexts', { headers: { Authorization: `token ${TOKEN}` } })).json();
  await sleep(5500);
  check(!(await sbx.isRunning()), 'isRunning is false');
  let threw = null;
  try { await sbx.runCode('1'); } catch (e) { threw = e; }
  check(threw, 'the culled sandbox refuses code');
  const list = await Sandbox.list().nextItems();
  check(!list.some(s => s.sandboxId === sbx.sandboxId), 'not listed', list);
  const after = await (await fetch(BASE_URL + '/v1/contexts', { headers: { Authorization: `token ${TOKEN}` } })).json();
  check(after.length === before.length - 1, 'its context went with it', [before.length, after.length]);
});

// --------------------------------------------------------------------------

await runTests();
