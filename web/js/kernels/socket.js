// The attached kernel's Jupyter WebSocket (legacy JSON format): connecting with ?since= to
// get the output missed while away, reconnecting with backoff, sending, decoding frames.

import { api, openSocket } from '../api.js';
import { shortId } from '../format.js';
import { setConnectionPill } from '../ui/pill.js';
import { $, uuid } from '../dom.js';
import { logFor, notice } from './log.js';
import { onIopub, onShell, onStdin } from './messages.js';
import { state } from './state.js';

// What the view provides: the kernel info line, detaching, the kernel list, the state pill.
const view = { showKernelInfo() {}, detach() {}, refreshKernels() {}, setKernelState() {}, updateControls() {} };
export function connectView(hooks) { Object.assign(view, hooks); }

export const isConnected = () => state.ws !== null && state.ws.readyState === WebSocket.OPEN;

export function setConnection(conn, detail) {
  setConnectionPill($('kn-conn'), conn, detail);
  view.updateControls();
}

export function connect() {
  clearTimeout(state.reconnectTimer);
  state.reconnectTimer = null;
  const id = state.kernelId;
  if (!id) return;
  // since=0 on a log that saw nothing yet (a reload): the gateway replays the output it kept.
  const log = logFor(id);
  const params = { session_id: state.sessionId, since: String(log.lastSeq ?? 0) };
  const reconnecting = state.reconnectAttempt > 0;
  setConnection(reconnecting ? 'reconnecting' : 'connecting',
                reconnecting ? `attempt ${state.reconnectAttempt}` : undefined);
  const ws = openSocket(`/api/kernels/${encodeURIComponent(id)}/channels`, params);
  ws.binaryType = 'arraybuffer';
  state.ws = ws;
  ws.onopen = () => {
    if (state.ws !== ws) return;
    if (reconnecting) notice('Reconnected.');
    state.reconnectAttempt = 0;
    setConnection('connected');
    send(message('kernel_info_request', {}, 'shell'));
    view.refreshKernels();
  };
  ws.onmessage = ev => { if (state.ws === ws) handleFrame(ev.data); };
  ws.onclose = ev => {
    if (state.ws !== ws) return;   // replaced or closed on purpose
    state.ws = null;
    if (ev.code === 1000) return closedForGood(id, ev.reason);
    scheduleReconnect(id, ev);
  };
}

// 1000 is the gateway's close for a kernel shut down, culled or dead for good: nothing to
// reconnect to.
function closedForGood(id, reason) {
  notice(`Kernel ${shortId(id)} is gone${reason ? `: ${reason}` : ''}.`, 'error');
  setConnection('closed', reason);
  view.setKernelState('dead', reason);
  view.refreshKernels();
}

// Before reconnecting, REST says whether the kernel is still there (a failed handshake's
// status is invisible to a page): dead and gone kernels are not retried.
async function kernelGone(id) {
  try {
    const model = await api('GET', `/api/kernels/${encodeURIComponent(id)}`);
    if (model.execution_state !== 'dead') return false;
    view.setKernelState('dead', model.reason);
    setConnection('closed');
    notice(`Kernel ${shortId(id)} is dead${model.reason ? `: ${model.reason}` : ''}.`, 'error');
    return true;
  } catch (e) {
    if (e.status === 404 || e.status === 410) {
      notice(`Kernel ${shortId(id)} no longer exists${e.status === 410 ? ' (culled)' : ''}.`, 'error');
      view.detach();
      view.refreshKernels();
      return true;
    }
    if (e.status === 401 || e.status === 403) { view.detach(); return true; }
    return false;  // unreachable for now: keep backing off
  }
}

function scheduleReconnect(id, ev) {
  const attempt = ++state.reconnectAttempt;
  const delayMs = Math.min(15_000, 500 * 2 ** (attempt - 1));
  const why = `code ${ev.code}${ev.reason ? `: ${ev.reason}` : ''}`;
  if (attempt === 1) notice(`Connection to the kernel lost (${why}); reconnecting…`, 'warn');
  setConnection('reconnecting', `retrying in ${Math.round(delayMs / 100) / 10} s (attempt ${attempt})`);
  state.reconnectTimer = setTimeout(async () => {
    if (state.kernelId !== id) return;
    if (await kernelGone(id)) return;
    if (state.kernelId === id) connect();
  }, delayMs);
}

export function disconnect(reason) {
  clearTimeout(state.reconnectTimer);
  state.reconnectTimer = null;
  state.reconnectAttempt = 0;
  const ws = state.ws;
  state.ws = null;   // a close from now on is expected
  if (ws) ws.close(1000, reason);
}

export function message(msgType, content, channel, parentHeader = {}) {
  return {
    header: { msg_id: uuid(), username: 'callisto-web', session: state.sessionId,
              date: new Date().toISOString(), msg_type: msgType, version: '5.3' },
    parent_header: parentHeader,
    metadata: {},
    content,
    channel,
    buffers: [],
  };
}

export function send(msg) {
  if (!isConnected()) return false;
  state.ws.send(JSON.stringify(msg));
  return true;
}

// Text frames are JSON; binary frames (messages with buffers) carry the JSON in their first
// part: uint32 count, uint32 offsets…, then the parts.
function decodeFrame(data) {
  if (typeof data === 'string') return JSON.parse(data);
  const frame = new DataView(data);
  const n = frame.getUint32(0);
  const start = frame.getUint32(4);
  const end = n > 1 ? frame.getUint32(8) : data.byteLength;
  return JSON.parse(new TextDecoder().decode(new Uint8Array(data, start, end - start)));
}

function handleFrame(data) {
  let msg;
  try {
    msg = decodeFrame(data);
  } catch (e) {
    notice('Received a frame that is not a Jupyter message.', 'warn', String(e));
    return;
  }
  const type = msg.header?.msg_type || msg.msg_type;
  if (msg.channel === 'iopub') onIopub(type, msg);
  else if (msg.channel === 'shell') onShell(type, msg, view.showKernelInfo);
  else if (msg.channel === 'stdin') onStdin(type, msg);
}

// Test hooks.
export const socketDebug = {
  sendRaw(text) { if (isConnected()) state.ws.send(text); return isConnected(); },
  dropConnection() { if (state.ws) state.ws.close(4000, 'dropped for testing'); },
};
