// What the kernel's channels say (iopub, shell, stdin), drawn into the attached kernel's log.

import { el } from '../dom.js';
import { asText } from '../format.js';
import { stripAnsi } from '../render/ansi.js';
import { renderTraceback } from '../render/error.js';
import { renderBundle } from '../render/mime.js';
import { cellFor, createCell, failRunningCells, finishCell } from './cells.js';
import { currentLog, notice } from './log.js';

// What the view module provides (kernel state pill, death reason, sending); set once at
// start-up so that this module does not import the view (which imports it).
const view = {
  setKernelState() {}, explainKernelLoss() {}, replyToInput() { return false; }, focusEditor() {},
};
export function connectView(hooks) { Object.assign(view, hooks); }

// Adds output to a cell, first honouring a clear_output(wait=True) that was waiting for it.
function addTo(cell, fn) {
  currentLog().update(() => {
    if (cell.pendingClear) { cell.pendingClear = false; cell.clearOutput(); }
    fn();
  });
}

function onStatus(msg) {
  const s = msg.content?.execution_state;
  view.setKernelState(s);
  if (s === 'idle') {
    const cell = cellFor(msg, false);
    if (cell) finishCell(cell, cell.reply || (cell.sawError ? 'error' : 'done'), msg);
  } else if (s === 'restarting') {
    // The gateway's own restarting status (no parent): the process died under the running
    // cell (out of memory, a crash) and comes back empty.
    const lost = msg.parent_header?.msg_id ? [] : failRunningCells(currentLog(), 'Kernel restarted while this ran; its state is lost.');
    notice('Kernel restarting…', 'warn');
    view.explainKernelLoss(lost, 'Kernel restarted');
  } else if (s === 'dead') {
    // The gateway closes the socket next (code 1000, with the reason), and that close says so
    // once; here only the cells the death took down are ended and labelled with the reason.
    const lost = failRunningCells(currentLog(), 'Kernel died while this ran.');
    if (lost.length) view.explainKernelLoss(lost, 'Kernel died');
  }
}

function outputContainer(type, c) {
  const body = renderBundle(c.data, c.metadata);
  if (type !== 'execute_result') return el('div', { class: 'out-display' }, body);
  const prompt = c.execution_count != null ? `Out[${c.execution_count}]:` : 'Out:';
  return el('div', { class: 'out-result' }, el('span', { class: 'prompt', text: prompt }), body);
}

function onDisplay(type, msg) {
  const log = currentLog();
  const c = msg.content || {};
  const container = outputContainer(type, c);
  const displayId = c.transient?.display_id;
  if (displayId) {
    if (!log.displays.has(displayId)) log.displays.set(displayId, new Set());
    log.displays.get(displayId).add(container);
  }
  const cell = cellFor(msg, true);
  if (cell) addTo(cell, () => cell.addOutput(container));
  else log.append(container);
}

function onError(msg) {
  const c = msg.content || {};
  if (c.ename === 'CallistoProtocolError') {
    // The gateway refused a frame this page (or another client) sent; the connection stays.
    notice('The gateway rejected a message:', 'error', c.evalue || asText(c.traceback));
    return;
  }
  const cell = cellFor(msg, true);
  if (!cell) return notice('Kernel error', 'error', stripAnsi(asText(c.traceback)));
  cell.sawError = true;
  addTo(cell, () => cell.addOutput(renderTraceback(c.ename, c.evalue, c.traceback)));
}

function onStream(msg) {
  const c = msg.content || {};
  const cell = cellFor(msg, true);
  if (cell) addTo(cell, () => cell.appendStream(c.name, asText(c.text)));
  else notice(`Kernel ${c.name}:`, c.name === 'stderr' ? 'warn' : 'info', asText(c.text));
}

export function onIopub(type, msg) {
  const log = currentLog();
  if (!log) return;
  const seq = msg.metadata?.callisto_seq;
  if (typeof seq === 'number') log.lastSeq = Math.max(log.lastSeq ?? 0, seq);
  const c = msg.content || {};
  switch (type) {
    case 'status': return onStatus(msg);
    case 'execute_input': return cellFor(msg, true)?.setCount(c.execution_count);
    case 'stream': return onStream(msg);
    case 'execute_result':
    case 'display_data': return onDisplay(type, msg);
    case 'update_display_data': {
      const targets = log.displays.get(c.transient?.display_id);
      if (targets) for (const t of targets) t.replaceChildren(renderBundle(c.data, c.metadata));
      return;
    }
    case 'clear_output': {
      const cell = cellFor(msg, false);
      if (!cell) return;
      if (c.wait) cell.pendingClear = true; else log.update(() => cell.clearOutput());
      return;
    }
    case 'error': return onError(msg);
    default: // comm_*, debug_event, …: not shown
  }
}

export function onShell(type, msg, showKernelInfo) {
  const c = msg.content || {};
  if (type === 'kernel_info_reply') return showKernelInfo(c);
  if (type !== 'execute_reply') return;
  const cell = cellFor(msg, false);
  if (!cell) return;
  cell.setCount(c.execution_count);
  cell.reply = c.status === 'ok' ? 'done' : c.status === 'aborted' ? 'aborted' : 'error';
  // iopub idle normally finishes the cell; a reply after idle says how it ended.
  if (cell.state !== 'running') cell.setState(cell.reply, cell.reply === 'done' ? 'ok' : cell.reply);
}

// input(): a field in the cell; the answer goes back on the stdin channel.
export function onStdin(type, msg) {
  if (type !== 'input_request') return;
  const c = msg.content || {};
  const cell = cellFor(msg, false) || createCell(currentLog(), msg.parent_header?.msg_id || 'stdin', '', { foreign: true });
  const input = el('input', { type: c.password ? 'password' : 'text', class: 'stdin-input',
                              autocomplete: 'off', spellcheck: 'false', 'aria-label': c.prompt || 'input' });
  const form = el('form', { class: 'stdin-form' },
    el('label', { text: c.prompt || '' }), input,
    el('button', { type: 'submit', class: 'small', text: 'Send' }));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    if (!view.replyToInput(input.value, msg.header)) {
      notice('Not connected: the answer was not sent.', 'error');
      return;
    }
    const echo = el('pre', { class: 'out-stream stdout stdin-echo' });
    echo.append(c.prompt || '', el('b', { text: c.password ? '········' : input.value }));
    form.replaceWith(echo);
    view.focusEditor();
  });
  addTo(cell, () => cell.addOutput(form));
  input.focus();
}
