// The raw kernel view's state: which kernel is attached, its socket, and one log per kernel.

import { uuid } from '../dom.js';

export const KERNEL_KEY = 'callisto.kernel';
const SESSION_KEY = 'callisto.kernel-session';

// The Jupyter session id survives a reload of the tab, so replayed output of this tab's own
// requests is recognised as its own, not "from another client".
function sessionId() {
  let id = sessionStorage.getItem(SESSION_KEY);
  if (!id) { id = uuid(); sessionStorage.setItem(SESSION_KEY, id); }
  return id;
}

export const state = {
  sessionId: sessionId(),
  specs: {},
  kernelId: null,
  kernelName: '',
  kernelState: 'none',
  ws: null,
  reconnectAttempt: 0,
  reconnectTimer: null,
  logs: new Map(),   // kernel id → KernelLog
};

export function resetSessionId() {
  sessionStorage.removeItem(SESSION_KEY);
  state.sessionId = sessionId();
}
