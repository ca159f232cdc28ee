// Status indicators, notices and the log.

import { ansiToFragment, el } from './dom.js';
import { $, state } from './state.js';

export function setConn(conn, detail) {
  const labels = { none: 'not connected', connecting: 'connecting…', connected: 'connected',
                   reconnecting: 'reconnecting…', closed: 'disconnected', failed: 'connection failed' };
  const pill = $('conn-state');
  pill.dataset.state = conn;
  pill.textContent = detail || labels[conn] || conn;
  pill.title = `WebSocket: ${detail || labels[conn] || conn}`;
  updateControls();
}

export function setKernelState(s, detail) {
  state.kernelState = s;
  const pill = $('kernel-status');
  pill.dataset.state = s;
  pill.textContent = s === 'none' ? 'no kernel' : s;
  pill.title = detail ? `kernel: ${s} — ${detail}` : `kernel: ${s}`;
  const listed = state.kernelId && document.querySelector(
    `#kernel-list li[data-kernel-id="${CSS.escape(state.kernelId)}"] .kstate`);
  if (listed && s !== 'none') listed.firstChild.textContent = s;
  updateControls();
}

export function isConnected() {
  return state.ws !== null && state.ws.readyState === WebSocket.OPEN;
}

export function updateControls() {
  const attached = state.kernelId !== null;
  const usable = isConnected() && state.kernelState !== 'dead';
  $('code').disabled = !attached;
  $('run').disabled = !usable;
  $('interrupt').disabled = !attached || state.kernelState === 'dead';
  $('restart').disabled = !attached;
  $('shutdown').disabled = !attached;
}

export function notice(text, kind = 'info', detail) {
  const node = el('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : undefined },
                  el('span', { text }));
  if (detail) node.append(el('pre', {}, ansiToFragment(detail)));
  appendToLog(node, true);
  return node;
}

export function appendToLog(node, forceScroll = false) {
  const log = $('log');
  const nearBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  log.append(node);
  if (nearBottom || forceScroll) log.scrollTop = log.scrollHeight;
}

export function keepScrolled(fn) {
  const log = $('log');
  const nearBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  fn();
  if (nearBottom) log.scrollTop = log.scrollHeight;
}
