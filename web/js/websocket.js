// The kernel's WebSocket: connecting, reconnecting, sending, decoding frames.

import { onIopub, onShell, onStdin } from './channels.js';
import { shortId, uuid } from './dom.js';
import { detach, refreshKernels } from './kernels.js';
import { api, showTokenPanel } from './rest.js';
import { state } from './state.js';
import { isConnected, notice, setConn, setKernelState } from './status.js';

export function connect() {
  clearTimeout(state.reconnectTimer);
  state.reconnectTimer = null;
  const id = state.kernelId;
  if (!id) return;
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const url = `${scheme}//${location.host}/api/kernels/${encodeURIComponent(id)}/channels` +
              `?token=${encodeURIComponent(state.token)}&session_id=${state.sessionId}`;
  const reconnecting = state.reconnectAttempt > 0;
  setConn(reconnecting ? 'reconnecting' : 'connecting',
          reconnecting ? `reconnecting… (attempt ${state.reconnectAttempt})` : undefined);
  const ws = new WebSocket(url);
  ws.binaryType = 'arraybuffer';
  state.ws = ws;
  ws.onopen = () => {
    if (state.ws !== ws) return;
    if (reconnecting) notice('Reconnected.');
    state.reconnectAttempt = 0;
    setConn('connected');
    send(message('kernel_info_request', {}, 'shell'));
    refreshKernels();
  };
  ws.onmessage = ev => { if (state.ws === ws) handleFrame(ev.data); };
  ws.onclose = ev => {
    if (state.ws !== ws) return;   // replaced or closed on purpose
    state.ws = null;
    scheduleReconnect(id, ev);
  };
}

export function scheduleReconnect(id, ev) {
  const attempt = ++state.reconnectAttempt;
  const delayMs = Math.min(15_000, 500 * 2 ** (attempt - 1));
  const why = `code ${ev.code}${ev.reason ? `: ${ev.reason}` : ''}`;
  if (attempt === 1) notice(`Connection to the kernel lost (${why}); reconnecting…`, 'warn');
  setConn('reconnecting', `reconnecting in ${Math.round(delayMs / 100) / 10} s (attempt ${attempt})`);
  state.reconnectTimer = setTimeout(async () => {
    if (state.kernelId !== id) return;
    try {
      const model = await api('GET', `/api/kernels/${encodeURIComponent(id)}`);
      if (state.kernelId !== id) return;
      if (model.execution_state === 'dead') {
        setKernelState('dead', model.reason);
        setConn('closed');
        notice(`Kernel ${shortId(id)} is dead${model.reason ? `: ${model.reason}` : ''}.`, 'error');
        return;
      }
    } catch (e) {
      if (state.kernelId !== id) return;
      if (e.status === 404) {
        notice(`Kernel ${shortId(id)} no longer exists.`, 'error');
        detach();
        refreshKernels();
        return;
      }
      if (e.status === 401 || e.status === 403) { detach(); return showTokenPanel('The server refused the token.'); }
      // Server unreachable: keep backing off.
      state.ws = null;
      return scheduleReconnect(id, { code: ev.code, reason: 'server unreachable' });
    }
    connect();
  }, delayMs);
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

// Text frames are JSON; binary frames (messages with buffers) carry the JSON in their first part:
// uint32 count, uint32 offsets…, then the parts.
export function decodeFrame(data) {
  if (typeof data === 'string') return JSON.parse(data);
  const view = new DataView(data);
  const n = view.getUint32(0);
  const start = view.getUint32(4);
  const end = n > 1 ? view.getUint32(8) : data.byteLength;
  return JSON.parse(new TextDecoder().decode(new Uint8Array(data, start, end - start)));
}

export function handleFrame(data) {
  let msg;
  try {
    msg = decodeFrame(data);
  } catch (e) {
    notice('Received a frame that is not a Jupyter message.', 'warn', String(e));
    return;
  }
  const type = msg.header?.msg_type || msg.msg_type;
  if (msg.channel === 'iopub') onIopub(type, msg);
  else if (msg.channel === 'shell') onShell(type, msg);
  else if (msg.channel === 'stdin') onStdin(type, msg);
}
