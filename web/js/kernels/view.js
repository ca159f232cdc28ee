// The raw kernel view: Jupyter kernels on /api/kernels, their WebSocket, one log each.
// Start a kernel, attach to any listed one, run code, interrupt, restart, shut down.

import { api } from '../api.js';
import { $, el } from '../dom.js';
import { HELD_BY, shortId } from '../format.js';
import { bindEditor, takeCode } from '../ui/editor.js';
import { setPill } from '../ui/pill.js';
import { createCell, failRunningCells } from './cells.js';
import { currentLog, dropAllLogs, dropLog, logFor, notice, showLog } from './log.js';
import { connectView as connectMessages } from './messages.js';
import { connect, connectView as connectSocket, disconnect, isConnected, message, send,
         setConnection, socketDebug } from './socket.js';
import { KERNEL_KEY, resetSessionId, state } from './state.js';

const POLL_MS = 15_000;
let pollTimer = null;

// ---- the kernel list ---------------------------------------------------------------------

async function loadSpecs() {
  const data = await api('GET', '/api/kernelspecs');
  state.specs = data.kernelspecs || {};
  const names = Object.keys(state.specs).sort();
  $('kn-spec').replaceChildren(...names.map(name => el('option', {
    value: name, selected: name === data.default, text: state.specs[name]?.spec?.display_name || name })));
  $('kn-start').disabled = names.length === 0;
  if (!names.length) $('kn-spec').append(el('option', { value: '', text: 'no kernelspecs found' }));
}

// What holds a kernel: the server says (callisto.held_by, for admins); otherwise a kernel of
// one of the caller's contexts is at least known to be a context's.
function heldBy(k, contextKernels) {
  const held = k.callisto?.held_by;
  if (held) return HELD_BY[held] || held;
  return contextKernels.has(k.id) ? HELD_BY.context : '';
}

function kernelItem(k, contextKernels) {
  const current = k.id === state.kernelId;
  const held = heldBy(k, contextKernels);
  const conns = typeof k.connections === 'number' ? ` · ${k.connections} conn` : '';
  return el('li', { class: current ? 'current' : '', 'data-kernel-id': k.id, title: k.id },
    el('div', { class: 'item-main' },
       el('span', { class: 'item-title' }, el('code', { text: shortId(k.id) }), ` ${k.name}`,
          held ? el('span', { class: 'badge held', text: held }) : null),
       el('span', { class: 'item-sub kstate' }, el('span', { text: k.execution_state }), conns)),
    current ? el('span', { class: 'muted small-text', text: 'attached' })
            : el('button', { type: 'button', class: 'small attach', text: 'Attach',
                             onclick: () => attach(k.id, k) }));
}

async function contextKernelIds() {
  try {
    return new Set((await api('GET', '/v1/contexts')).map(c => c.kernel_id));
  } catch {
    return new Set();
  }
}

export async function refreshKernels() {
  let kernels;
  try {
    kernels = await api('GET', '/api/kernels');
  } catch {
    return null;  // transient: the next poll tries again (a refused token signs out)
  }
  const contextKernels = await contextKernelIds();
  const list = $('kn-list');
  list.replaceChildren(...kernels.map(k => kernelItem(k, contextKernels)));
  if (!kernels.length) list.append(el('li', { class: 'empty', text: 'No kernels running.' }));
  return kernels;
}

// ---- attaching ---------------------------------------------------------------------------

function showKernelInfo(c) {
  const lang = c.language_info || {};
  const impl = c.implementation ? `${c.implementation} ${c.implementation_version || ''}`.trim() : '';
  $('kn-info').textContent = [lang.name && `${lang.name} ${lang.version || ''}`.trim(), impl]
    .filter(Boolean).join(' · ');
}

export function setKernelState(s, detail) {
  state.kernelState = s;
  setPill($('kn-state'), s, s === 'none' ? 'no kernel' : s, detail ? `kernel: ${s} — ${detail}` : `kernel: ${s}`);
  const listed = state.kernelId && document.querySelector(`#kn-list li[data-kernel-id="${CSS.escape(state.kernelId)}"] .kstate`);
  if (listed && s !== 'none') listed.firstChild.textContent = s;
  updateControls();
}

function updateControls() {
  const attached = state.kernelId !== null;
  $('kn-code').disabled = !attached;
  $('kn-run').disabled = !(isConnected() && state.kernelState !== 'dead');
  $('kn-interrupt').disabled = !attached || state.kernelState === 'dead';
  $('kn-restart').disabled = !attached;
  $('kn-shutdown').disabled = !attached;
}

export async function attach(id, model) {
  detach();
  state.kernelId = id;
  state.kernelName = model?.name || '';
  sessionStorage.setItem(KERNEL_KEY, id);
  logFor(id);
  showLog(id);
  $('kn-title').textContent = `${state.kernelName || 'kernel'} · ${shortId(id)}`;
  $('kn-title').title = id;
  $('kn-info').textContent = '';
  setKernelState(model?.execution_state || 'unknown');
  connect();
  refreshKernels();
  $('kn-code').focus();
}

// Leaves the kernel running; its log stays, to be shown again if it is attached again.
export function detach() {
  disconnect('detached');
  const log = currentLog();
  if (log) failRunningCells(log);
  state.kernelId = null;
  state.kernelName = '';
  sessionStorage.removeItem(KERNEL_KEY);
  showLog(null);
  $('kn-title').textContent = 'No kernel attached';
  $('kn-title').removeAttribute('title');
  $('kn-info').textContent = '';
  setConnection('none');
  setKernelState('none');
}

async function startKernel() {
  const name = $('kn-spec').value;
  const button = $('kn-start');
  button.disabled = true;
  button.textContent = 'Starting…';
  try {
    const model = await api('POST', '/api/kernels', name ? { name } : {});
    await attach(model.id, model);
    notice(`Started kernel ${shortId(model.id)} (${model.name}).`);
  } catch (e) {
    notice('Could not start a kernel.', 'error', e.message);
  } finally {
    button.disabled = false;
    button.textContent = 'Start';
    refreshKernels();
  }
}

// The kernel died or restarted: the server's model says why ("kernel process killed: out of
// memory (limit 256MiB)"); the cells it took down get that as their reason label.
async function explainKernelLoss(cells, what) {
  const id = state.kernelId;
  if (!id) return;
  try {
    const model = await api('GET', `/api/kernels/${encodeURIComponent(id)}`);
    if (model.reason && state.kernelId === id) {
      $('kn-state').title = `kernel: ${model.execution_state} — ${model.reason}`;
      notice(`${what}: ${model.reason}`, 'error');
      for (const cell of cells) cell.setReason(`${what}: ${model.reason}`);
    }
  } catch { /* gone already */ }
  refreshKernels();
}

// ---- running and kernel actions ----------------------------------------------------------

function run({ keep }) {
  if (!isConnected()) { notice('Not connected to a kernel.', 'warn'); return; }
  const code = takeCode($('kn-code'), keep);
  if (!code) return;
  const msg = message('execute_request', { code, silent: false, store_history: true,
                                           user_expressions: {}, allow_stdin: true,
                                           stop_on_error: true }, 'shell');
  createCell(currentLog(), msg.header.msg_id, code);
  send(msg);
}

async function interrupt() {
  const id = state.kernelId;
  if (!id) return;
  try {
    await api('POST', `/api/kernels/${encodeURIComponent(id)}/interrupt`);
    notice('Interrupt sent.');
  } catch (e) {
    notice('Interrupt failed.', 'error', e.message);
  }
}

async function restart() {
  const id = state.kernelId;
  if (!id || !confirm('Restart the kernel? Its variables will be lost.')) return;
  setKernelState('restarting');
  failRunningCells(currentLog(), 'Stopped by the restart.');
  try {
    const model = await api('POST', `/api/kernels/${encodeURIComponent(id)}/restart`);
    if (state.kernelId !== id) return;
    setKernelState(model.execution_state || 'idle');
    notice('Kernel restarted.');
    send(message('kernel_info_request', {}, 'shell'));
  } catch (e) {
    notice('Restart failed.', 'error', e.message);
  }
  refreshKernels();
}

async function shutdown() {
  const id = state.kernelId;
  if (!id || !confirm('Shut the kernel down?')) return;
  disconnect('shutting down');
  setConnection('closed');
  try {
    await api('DELETE', `/api/kernels/${encodeURIComponent(id)}`);
    if (state.kernelId === id) detach();
    dropLog(id);
    notice(`Kernel ${shortId(id)} shut down.`);
  } catch (e) {
    notice('Shut down failed.', 'error', e.message);
    if (state.kernelId === id) connect();
  }
  refreshKernels();
}

// ---- life cycle --------------------------------------------------------------------------

export function initKernelsView() {
  connectMessages({
    setKernelState, explainKernelLoss,
    replyToInput: (value, parent) => send(message('input_reply', { value }, 'stdin', parent)),
    focusEditor: () => $('kn-code').focus(),
  });
  connectSocket({ showKernelInfo, detach, refreshKernels, setKernelState, updateControls });
  $('kn-start').addEventListener('click', startKernel);
  $('kn-refresh').addEventListener('click', refreshKernels);
  $('kn-interrupt').addEventListener('click', interrupt);
  $('kn-restart').addEventListener('click', restart);
  $('kn-shutdown').addEventListener('click', shutdown);
  $('kn-editor').addEventListener('submit', ev => { ev.preventDefault(); run({ keep: false }); });
  $('kn-clear').addEventListener('click', () => currentLog()?.clear());
  bindEditor($('kn-code'), { run, interrupt });
}

export async function startKernelsView() {
  try {
    await loadSpecs();
  } catch (e) {
    notice('Could not list the kernelspecs.', 'error', e.message);
  }
  // After a reload, reattach to the kernel this tab was using if it still runs.
  const previous = sessionStorage.getItem(KERNEL_KEY);
  detach();
  const kernels = await refreshKernels();
  const model = previous && kernels?.find(k => k.id === previous);
  if (model) attach(model.id, model);
}

export function stopKernelsView() {
  hideKernelsView();
  detach();
  dropAllLogs();
  resetSessionId();
}

export function showKernelsView() {
  clearInterval(pollTimer);
  pollTimer = setInterval(() => { if (!document.hidden) refreshKernels(); }, POLL_MS);
  refreshKernels();
}

export function hideKernelsView() {
  clearInterval(pollTimer);
  pollTimer = null;
}

export const kernelsDebug = {
  get kernelId() { return state.kernelId; },
  get sessionId() { return state.sessionId; },
  ...socketDebug,
};
