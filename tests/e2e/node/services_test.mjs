// End-to-end test of a kernel gateway through @jupyterlab/services, the client
// library JupyterLab itself uses. Reads CALLISTO_URL and CALLISTO_TOKEN;
// exits 0 only when every test passed, and prints "N passed, M failed".
//
//   CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T node services_test.mjs [name-substring]
//
// Each kernel test runs twice: with the v1.kernel.websocket.jupyter.org
// subprotocol (what @jupyterlab/services offers) and with the legacy JSON
// format (a WebSocket class that offers no subprotocol).

import {
  KernelAPI, KernelSpecAPI, STEP_MS, check, checkStartListShutdown, checkSubprotocol, run,
  runTests, settings, sleep, streamText, test, waitReady, withKernel, withTimeout,
} from './services_harness.mjs';

test('kernelspecs', async () => {
  const specs = await withTimeout(KernelSpecAPI.getSpecs(settings('v1')), STEP_MS, 'getSpecs');
  check(typeof specs.default === 'string', 'default kernelspec', specs.default);
  check(specs.kernelspecs.python3, 'python3 listed', Object.keys(specs.kernelspecs));
  check(specs.kernelspecs.python3.language === 'python', 'language', specs.kernelspecs.python3);
});

for (const protocol of ['v1', 'legacy']) {
  test(`execute_${protocol}`, () => withKernel('python3', protocol, async kernel => {
    checkSubprotocol(kernel, protocol);
    const info = await waitReady(kernel);
    check(info.content.status === 'ok', 'kernel_info ok', info.content);
    check(info.content.language_info.name === 'python', 'python kernel', info.content.language_info);
    const spec = await withTimeout(kernel.spec, STEP_MS, 'kernel.spec');
    check(spec && spec.name === 'python3', 'kernel.spec', spec);

    const a = await run(kernel, 'print(1+1)');
    check(a.reply.content.status === 'ok', 'print status', a.reply.content);
    check(streamText(a.iopub) === '2\n', 'stream "2"', streamText(a.iopub));

    const b = await run(kernel, '1/0');
    check(b.reply.content.status === 'error', 'error status', b.reply.content);
    check(b.reply.content.ename === 'ZeroDivisionError', 'reply ename', b.reply.content.ename);
    const err = b.iopub.find(m => m.header.msg_type === 'error');
    check(err && err.content.ename === 'ZeroDivisionError', 'iopub error', err && err.content);
    check(err.content.traceback.length > 0, 'traceback');
  }));

  test(`interrupt_restart_${protocol}`, () => withKernel('python3', protocol, async kernel => {
    const future = kernel.requestExecute({ code: 'import time\nprint("zz", flush=True)\ntime.sleep(30)' });
    let started;
    const startedP = new Promise(r => { started = r; });
    future.onIOPub = msg => { if (msg.header.msg_type === 'stream') started(); };
    await withTimeout(startedP, STEP_MS, 'sleep started');
    await sleep(200);
    const t0 = Date.now();
    await withTimeout(kernel.interrupt(), STEP_MS, 'interrupt');
    const reply = await withTimeout(future.done, 10000, 'interrupted execute_reply');
    const dt = Date.now() - t0;
    check(dt <= 2000, `reply within 2 s of the interrupt (took ${dt} ms)`);
    check(reply.content.status === 'error' && reply.content.ename === 'KeyboardInterrupt',
      'KeyboardInterrupt', reply.content);

    await sleep(500); // ipykernel aborts requests that arrive right after an error
    const s = await run(kernel, 'x_e2e = 5\nx_e2e');
    const res = s.iopub.find(m => m.header.msg_type === 'execute_result');
    check(res && res.content.data['text/plain'] === '5', 'state set', res && res.content);

    await withTimeout(kernel.restart(), 60000, 'restart');
    await waitReady(kernel, 60000);
    const after = await run(kernel, 'x_e2e');
    check(after.reply.content.status === 'error' && after.reply.content.ename === 'NameError',
      'NameError after restart', after.reply.content);
  }));
}

test('shutdown_and_list', () => checkStartListShutdown('python3', async (model, s) => {
  const got = await withTimeout(KernelAPI.getKernelModel(model.id, s), STEP_MS, 'getKernelModel');
  check(got && got.id === model.id, 'getKernelModel', got);
}));

runTests();
