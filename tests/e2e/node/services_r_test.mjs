// End-to-end test of an R kernel (Debian's r-cran-irkernel, kernelspec `ir`) through
// @jupyterlab/services, the client library JupyterLab itself uses. Reads CALLISTO_URL and
// CALLISTO_TOKEN; exits 0 only when every test passed, and prints "N passed, M failed".
//
//   CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T node services_r_test.mjs [name-substring]
//
// The kernel test runs twice: with the v1.kernel.websocket.jupyter.org subprotocol (what
// @jupyterlab/services offers) and with the legacy JSON format (a WebSocket class that offers
// no subprotocol). IRkernel publishes a cell's value as display_data, not execute_result.

import {
  KernelSpecAPI, STEP_MS, check, checkStartListShutdown, checkSubprotocol, run, runTests,
  settings, sleep, streamText, test, waitReady, withKernel, withTimeout,
} from './services_harness.mjs';

const KERNEL = 'ir';
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

test('kernelspec_ir', async () => {
  const specs = await withTimeout(KernelSpecAPI.getSpecs(settings('v1')), STEP_MS, 'getSpecs');
  check(specs.kernelspecs[KERNEL], 'ir listed', Object.keys(specs.kernelspecs));
  check(specs.kernelspecs[KERNEL].language === 'R', 'language R', specs.kernelspecs[KERNEL]);
});

for (const protocol of ['v1', 'legacy']) {
  test(`r_execute_${protocol}`, () => withKernel(KERNEL, protocol, async kernel => {
    checkSubprotocol(kernel, protocol);
    const info = await waitReady(kernel);
    check(info.content.status === 'ok', 'kernel_info ok', info.content);
    check(info.content.language_info.name === 'R', 'an R kernel', info.content.language_info);
    const spec = await withTimeout(kernel.spec, STEP_MS, 'kernel.spec');
    check(spec && spec.name === KERNEL, 'kernel.spec', spec);

    const a = await run(kernel, 'cat("hello from R\\n")');
    check(a.reply.content.status === 'ok', 'cat status', a.reply.content);
    check(streamText(a.iopub) === 'hello from R\n', 'stdout stream', streamText(a.iopub));

    const b = await run(kernel, 'stop("x")');
    check(b.reply.content.status === 'error', 'error status', b.reply.content);
    const err = b.iopub.find(m => m.header.msg_type === 'error');
    check(err, 'iopub error', b.iopub.map(m => m.header.msg_type));
    check(err.content.evalue.includes('x'), 'evalue', err.content);
    check(Array.isArray(err.content.traceback) && err.content.traceback.join('\n').includes('stop("x")'),
      'the traceback shows the call', err.content.traceback);

    await sleep(300);
    const c = await run(kernel, 'plot(1:3)');
    check(c.reply.content.status === 'ok', 'plot status', c.reply.content);
    const pngs = c.iopub.filter(m => m.header.msg_type === 'display_data' && m.content.data['image/png']);
    check(pngs.length === 1, 'one display_data with image/png', c.iopub.map(m => m.header.msg_type));
    const png = Buffer.from(pngs[0].content.data['image/png'], 'base64');
    check(png.subarray(0, 8).equals(PNG_SIGNATURE), 'it decodes to a PNG', png.subarray(0, 8));

    const d = await run(kernel, 'cat(6 * 7, "\\n")');
    check(streamText(d.iopub) === '42 \n', 'the kernel goes on after the plot', streamText(d.iopub));
  }));
}

test('r_shutdown', () => checkStartListShutdown(KERNEL));

runTests();
