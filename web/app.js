// Callisto web UI: a small code-interpreter page on the gateway's REST and WebSocket API.
//
// Plain ES module, no build step, no external resources. Kernel output is never injected into
// this page as HTML: text goes through textContent, images through data: URLs on <img>, and
// text/html into an <iframe sandbox=""> (no scripts, opaque origin) via srcdoc.
//
// WebSocket: /api/kernels/{id}/channels?token=…&session_id=… in the legacy JSON format (no
// subprotocol offered): text frames {header, parent_header, metadata, content, channel, buffers}.
//
// The page is split into ES modules under js/, one per job; this file wires them up.

import { kernelAction, onEditorKey, runCode } from './js/actions.js';
import { attach, loadSpecs, refreshKernels, startKernel } from './js/kernels.js';
import { showTokenPanel, takeToken } from './js/rest.js';
import { $, KERNEL_KEY, KERNEL_POLL_MS, state, TOKEN_KEY } from './js/state.js';
import { updateControls } from './js/status.js';

async function main() {
  $('token-form').addEventListener('submit', ev => {
    ev.preventDefault();
    const t = $('token-input').value.trim();
    if (!t) return;
    sessionStorage.setItem(TOKEN_KEY, t);
    $('token-input').value = '';
    boot();
  });
  $('start-kernel').addEventListener('click', startKernel);
  $('refresh-kernels').addEventListener('click', refreshKernels);
  $('interrupt').addEventListener('click', () => kernelAction('interrupt'));
  $('restart').addEventListener('click', () => kernelAction('restart'));
  $('shutdown').addEventListener('click', () => kernelAction('shutdown'));
  $('editor-form').addEventListener('submit', ev => { ev.preventDefault(); runCode(); });
  $('code').addEventListener('keydown', onEditorKey);
  $('clear-log').addEventListener('click', () => {
    $('log').replaceChildren();
    for (const [id, cell] of state.cells) if (cell.el.dataset.state !== 'running') state.cells.delete(id);
    state.displays.clear();
  });
  setInterval(() => { if (!$('app').hidden && !document.hidden) refreshKernels(); }, KERNEL_POLL_MS);
  await boot();
}

async function boot() {
  state.token = takeToken();
  if (!state.token) return showTokenPanel();
  try {
    await loadSpecs();
  } catch (e) {
    if (e.status === 403 || e.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      return showTokenPanel('The server refused this token.');
    }
    showTokenPanel(`Cannot reach the server: ${e.message}`);
    return;
  }
  $('token-panel').hidden = true;
  $('app').hidden = false;
  updateControls();
  const kernels = await refreshKernels();
  // After a reload, reattach to the kernel this tab was using if it still runs.
  const previous = sessionStorage.getItem(KERNEL_KEY);
  const model = previous && kernels?.find(k => k.id === previous);
  if (model && !state.kernelId) attach(model.id, model);
}

main();
