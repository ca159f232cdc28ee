// What the user does: run code, interrupt, restart, shut down; and the test hooks.

import { createCell, finishCell } from './cells.js';
import { shortId } from './dom.js';
import { detach, refreshKernels } from './kernels.js';
import { api } from './rest.js';
import { $, state } from './state.js';
import { isConnected, notice, setConn, setKernelState } from './status.js';
import { connect, message, send } from './websocket.js';

export function runCode() {
  const editor = $('code');
  const code = editor.value;
  if (!code.trim()) return;
  if (!isConnected()) { notice('Not connected to a kernel.', 'warn'); return; }
  const msg = message('execute_request', { code, silent: false, store_history: true,
                                           user_expressions: {}, allow_stdin: true,
                                           stop_on_error: true }, 'shell');
  createCell(msg.header.msg_id, code);
  send(msg);
  editor.value = '';
}

export async function kernelAction(what) {
  const id = state.kernelId;
  if (!id) return;
  const path = `/api/kernels/${encodeURIComponent(id)}`;
  try {
    if (what === 'interrupt') {
      await api('POST', `${path}/interrupt`);
      notice('Interrupt sent.');
    } else if (what === 'restart') {
      if (!confirm('Restart the kernel? Its variables will be lost.')) return;
      setKernelState('restarting');
      for (const cell of state.cells.values()) if (cell.el.dataset.state === 'running') finishCell(cell, 'aborted');
      const model = await api('POST', `${path}/restart`);
      if (state.kernelId !== id) return;
      setKernelState(model.execution_state || 'idle');
      notice('Kernel restarted.');
      send(message('kernel_info_request', {}, 'shell'));
    } else if (what === 'shutdown') {
      if (!confirm('Shut the kernel down?')) return;
      const ws = state.ws;
      state.ws = null;           // a close from now on is expected
      if (ws) ws.close(1000, 'shutting down');
      setConn('closed');
      await api('DELETE', path);
      if (state.kernelId === id) detach();
      notice(`Kernel ${shortId(id)} shut down.`);
    }
  } catch (e) {
    notice(`${what} failed.`, 'error', e.message);
    if (what === 'shutdown' && state.kernelId === id && !state.ws) connect();
  } finally {
    refreshKernels();
  }
}

export function onEditorKey(ev) {
  const editor = ev.target;
  if (ev.key === 'Enter' && (ev.shiftKey || ev.ctrlKey || ev.metaKey)) {
    ev.preventDefault();
    runCode();
  } else if (ev.key === 'Tab' && !ev.shiftKey && !ev.ctrlKey && !ev.altKey) {
    ev.preventDefault();
    editor.setRangeText('    ', editor.selectionStart, editor.selectionEnd, 'end');
  }
}

// Hooks for the headless browser test (and for poking at the page from the console).
window.callistoDebug = {
  get kernelId() { return state.kernelId; },
  get sessionId() { return state.sessionId; },
  sendRaw(text) { if (isConnected()) state.ws.send(text); return isConnected(); },
  dropConnection() { if (state.ws) state.ws.close(4000, 'dropped for testing'); },
};
