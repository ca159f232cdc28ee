// What the kernel's channels say: iopub, shell and stdin messages.

import { addOutput, appendStream, cellFor, clearCell, createCell, finishCell, renderBundle, renderError, setCount } from './cells.js';
import { asText, el, stripAnsi, uuid } from './dom.js';
import { refreshKernels } from './kernels.js';
import { api } from './rest.js';
import { $, state } from './state.js';
import { appendToLog, keepScrolled, notice, setKernelState } from './status.js';
import { message, send } from './websocket.js';

export function onIopub(type, msg) {
  const c = msg.content || {};
  switch (type) {
    case 'status': {
      const s = c.execution_state;
      const serverMade = !msg.parent_header || !msg.parent_header.msg_id;
      setKernelState(s);
      if (s === 'idle') {
        const cell = cellFor(msg, false);
        if (cell && cell.el.dataset.state === 'running') finishCell(cell, cell.reply || 'done');
      } else if (s === 'restarting') {
        notice('Kernel restarting…', 'warn');
      } else if (s === 'dead') {
        for (const cell of state.cells.values()) if (cell.el.dataset.state === 'running') finishCell(cell, 'aborted');
        notice(serverMade ? 'The kernel died (reported by the gateway).' : 'The kernel died.', 'error');
        showDeathReason();
      }
      return;
    }
    case 'execute_input': {
      const cell = cellFor(msg, msg.parent_header?.session !== state.sessionId);
      if (cell) setCount(cell, c.execution_count);
      return;
    }
    case 'stream': {
      const cell = cellFor(msg, true);
      if (cell) appendStream(cell, c.name, asText(c.text));
      else notice(`Kernel ${c.name}:`, c.name === 'stderr' ? 'warn' : 'info', asText(c.text));
      return;
    }
    case 'execute_result':
    case 'display_data': {
      const cell = cellFor(msg, true);
      const body = renderBundle(c.data, c.metadata);
      const container = type === 'execute_result'
        ? el('div', { class: 'out-result' },
             el('span', { class: 'prompt', text: c.execution_count != null ? `Out[${c.execution_count}]:` : 'Out:' }), body)
        : el('div', { class: 'out-display' }, body);
      const displayId = c.transient?.display_id;
      if (displayId) {
        if (!state.displays.has(displayId)) state.displays.set(displayId, new Set());
        state.displays.get(displayId).add(container);
      }
      if (cell) addOutput(cell, container); else appendToLog(container);
      return;
    }
    case 'update_display_data': {
      const targets = state.displays.get(c.transient?.display_id);
      if (targets) for (const t of targets) t.replaceChildren(renderBundle(c.data, c.metadata));
      return;
    }
    case 'clear_output': {
      const cell = cellFor(msg, false);
      if (!cell) return;
      if (c.wait) cell.pendingClear = true; else keepScrolled(() => clearCell(cell));
      return;
    }
    case 'error': {
      if (c.ename === 'CallistoProtocolError') {
        // The gateway refused a frame this page (or another client) sent; the connection stays.
        notice('The gateway rejected a message:', 'error', c.evalue || asText(c.traceback));
        return;
      }
      const cell = cellFor(msg, true);
      if (cell) addOutput(cell, renderError(c));
      else notice('Kernel error', 'error', stripAnsi(asText(c.traceback)));
      return;
    }
    default:
      return; // comm_*, debug_event, …: not shown
  }
}

export function onShell(type, msg) {
  const c = msg.content || {};
  if (type === 'kernel_info_reply') {
    const lang = c.language_info || {};
    const impl = c.implementation ? `${c.implementation} ${c.implementation_version || ''}`.trim() : '';
    $('kernel-info').textContent = [lang.name && `${lang.name} ${lang.version || ''}`.trim(), impl]
      .filter(Boolean).join(' · ');
    return;
  }
  if (type === 'execute_reply') {
    const cell = cellFor(msg, false);
    if (!cell) return;
    setCount(cell, c.execution_count);
    cell.reply = c.status === 'ok' ? 'done' : c.status === 'aborted' ? 'aborted' : 'error';
    // iopub idle normally finishes the cell; a reply after idle (or without it) does too.
    if (cell.el.dataset.state === 'running' && state.kernelState === 'idle') finishCell(cell, cell.reply);
    else if (cell.el.dataset.state !== 'running') cell.el.dataset.state = cell.reply;
  }
}

export function onStdin(type, msg) {
  if (type !== 'input_request') return;
  const c = msg.content || {};
  let cell = cellFor(msg, false);
  if (!cell) cell = createCell(msg.parent_header?.msg_id || uuid(), '', true);
  const input = el('input', { type: c.password ? 'password' : 'text', class: 'stdin-input',
                              autocomplete: 'off', spellcheck: 'false', 'aria-label': c.prompt || 'input' });
  const form = el('form', { class: 'stdin-form' },
    el('label', { text: c.prompt || '' }), input,
    el('button', { type: 'submit', class: 'small', text: 'Send' }));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    const value = input.value;
    if (!send(message('input_reply', { value }, 'stdin', msg.header))) {
      notice('Not connected: the answer was not sent.', 'error');
      return;
    }
    const echo = el('pre', { class: 'out-stream stdout stdin-echo' });
    echo.append(c.prompt || '', el('b', { text: c.password ? '········' : value }));
    form.replaceWith(echo);
    $('code').focus();
  });
  addOutput(cell, form);
  input.focus();
}

export async function showDeathReason() {
  const id = state.kernelId;
  if (!id) return;
  try {
    const model = await api('GET', `/api/kernels/${encodeURIComponent(id)}`);
    if (model.reason && state.kernelId === id) {
      $('kernel-status').title = `kernel: dead — ${model.reason}`;
      notice(`Reason: ${model.reason}`, 'error');
    }
  } catch { /* gone already */ }
  refreshKernels();
}
