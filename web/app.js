// Callisto web UI: a small code-interpreter page on the gateway's REST and WebSocket API.
//
// Plain ES module, no build step, no external resources. Kernel output is never injected into
// this page as HTML: text goes through textContent, images through data: URLs on <img>, and
// text/html into an <iframe sandbox=""> (no scripts, opaque origin) via srcdoc.
//
// WebSocket: /api/kernels/{id}/channels?token=…&session_id=… in the legacy JSON format (no
// subprotocol offered): text frames {header, parent_header, metadata, content, channel, buffers}.

const TOKEN_KEY = 'callisto.token';
const KERNEL_KEY = 'callisto.kernel';
const MAX_STREAM_CHARS = 500_000;   // per output block; older text is dropped beyond that
const KERNEL_POLL_MS = 15_000;
const MIME_ORDER = ['image/png', 'image/jpeg', 'image/gif', 'image/svg+xml', 'text/html',
                    'text/markdown', 'text/latex', 'text/plain'];

const $ = id => document.getElementById(id);

const state = {
  token: '',
  sessionId: uuid(),
  specs: {},
  kernelId: null,
  kernelName: '',
  kernelState: 'none',
  ws: null,
  reconnectAttempt: 0,
  reconnectTimer: null,
  cells: new Map(),      // execute_request msg_id -> cell
  displays: new Map(),   // display_id -> Set of output containers
};

// ---------------------------------------------------------------------------------------------
// Small helpers

function uuid() {
  // crypto.randomUUID needs a secure context; getRandomValues works on plain http too.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map(x => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  node.append(...children.filter(c => c !== null && c !== undefined));
  return node;
}

const shortId = id => String(id).slice(0, 8);
const asText = v => (Array.isArray(v) ? v.join('') : String(v ?? ''));

// ANSI escape codes → spans with classes for the basic 16 colours and bold; every other escape
// sequence is dropped. Text is only ever set through text nodes.
function ansiToFragment(input) {
  const text = String(input)
    .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, '')      // OSC (titles, hyperlinks)
    .replace(/\x1b\[[0-9;?]*[A-Za-ln-z@`]/g, '');            // CSI other than SGR (…m)
  const frag = document.createDocumentFragment();
  const re = /\x1b\[([0-9;]*)m/g;
  let fg = null, bold = false, last = 0, m;
  const push = s => {
    s = s.replace(/\x1b/g, '');
    if (!s) return;
    if (fg === null && !bold) { frag.append(s); return; }
    const cls = [fg !== null ? `ansi-${fg}` : '', bold ? 'ansi-bold' : ''].join(' ').trim();
    frag.append(el('span', { class: cls, text: s }));
  };
  while ((m = re.exec(text))) {
    push(text.slice(last, m.index));
    last = re.lastIndex;
    const codes = m[1] ? m[1].split(';').map(Number) : [0];
    for (let i = 0; i < codes.length; i++) {
      const c = codes[i];
      if (c === 0) { fg = null; bold = false; }
      else if (c === 1) bold = true;
      else if (c === 22) bold = false;
      else if (c === 39) fg = null;
      else if ((c >= 30 && c <= 37) || (c >= 90 && c <= 97)) fg = c;
      else if (c === 38 || c === 48) {            // extended colours: skip their arguments
        if (codes[i + 1] === 5) i += 2; else if (codes[i + 1] === 2) i += 4;
      }
    }
  }
  push(text.slice(last));
  return frag;
}

const stripAnsi = s => String(s).replace(/\x1b\[[0-9;?]*[A-Za-z@`]/g, '')
                                .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, '');

// Carriage returns overwrite the current line (progress bars).
function applyCarriageReturns(text) {
  if (!text.includes('\r')) return text;
  return text.replace(/\r\n/g, '\n').split('\n')
    .map(line => { const i = line.lastIndexOf('\r', line.length - 2); return i < 0 ? line : line.slice(i + 1); })
    .join('\n').replace(/\r$/, '');
}

// ---------------------------------------------------------------------------------------------
// Token and REST

function takeToken() {
  const url = new URL(location.href);
  const fromUrl = url.searchParams.get('token');
  if (fromUrl !== null) {
    if (fromUrl) sessionStorage.setItem(TOKEN_KEY, fromUrl);
    url.searchParams.delete('token');
    history.replaceState(history.state, '', url.pathname + url.search + url.hash);
  }
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

async function api(method, path, body) {
  const init = { method, headers: { Authorization: `token ${state.token}` }, cache: 'no-store' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let data = null;
  if (text) { try { data = JSON.parse(text); } catch { data = text; } }
  if (!res.ok) {
    const why = (data && typeof data === 'object' && (data.message || data.reason)) || res.statusText;
    const err = new Error(`${method} ${path}: ${res.status} ${why}`);
    err.status = res.status;
    throw err;
  }
  return data;
}

function showTokenPanel(message) {
  $('app').hidden = true;
  $('token-panel').hidden = false;
  $('token-error').hidden = !message;
  $('token-error').textContent = message || '';
  $('token-input').focus();
}

// ---------------------------------------------------------------------------------------------
// Status indicators and notices

function setConn(conn, detail) {
  const labels = { none: 'not connected', connecting: 'connecting…', connected: 'connected',
                   reconnecting: 'reconnecting…', closed: 'disconnected', failed: 'connection failed' };
  const pill = $('conn-state');
  pill.dataset.state = conn;
  pill.textContent = detail || labels[conn] || conn;
  pill.title = `WebSocket: ${detail || labels[conn] || conn}`;
  updateControls();
}

function setKernelState(s, detail) {
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

function isConnected() {
  return state.ws !== null && state.ws.readyState === WebSocket.OPEN;
}

function updateControls() {
  const attached = state.kernelId !== null;
  const usable = isConnected() && state.kernelState !== 'dead';
  $('code').disabled = !attached;
  $('run').disabled = !usable;
  $('interrupt').disabled = !attached || state.kernelState === 'dead';
  $('restart').disabled = !attached;
  $('shutdown').disabled = !attached;
}

function notice(text, kind = 'info', detail) {
  const node = el('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : undefined },
                  el('span', { text }));
  if (detail) node.append(el('pre', {}, ansiToFragment(detail)));
  appendToLog(node, true);
  return node;
}

function appendToLog(node, forceScroll = false) {
  const log = $('log');
  const nearBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  log.append(node);
  if (nearBottom || forceScroll) log.scrollTop = log.scrollHeight;
}

function keepScrolled(fn) {
  const log = $('log');
  const nearBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  fn();
  if (nearBottom) log.scrollTop = log.scrollHeight;
}

// ---------------------------------------------------------------------------------------------
// Kernelspecs and kernels

async function loadSpecs() {
  const data = await api('GET', '/api/kernelspecs');
  state.specs = data.kernelspecs || {};
  const select = $('spec-select');
  select.replaceChildren();
  const names = Object.keys(state.specs).sort();
  for (const name of names) {
    const display = state.specs[name]?.spec?.display_name || name;
    select.append(el('option', { value: name, text: display, selected: name === data.default }));
  }
  $('start-kernel').disabled = names.length === 0;
  if (names.length === 0) select.append(el('option', { value: '', text: 'no kernelspecs found' }));
}

async function refreshKernels() {
  let kernels;
  try {
    kernels = await api('GET', '/api/kernels');
  } catch (e) {
    if (e.status === 403) return showTokenPanel('The server refused the token.');
    return; // transient: the next poll tries again
  }
  const list = $('kernel-list');
  list.replaceChildren();
  if (!kernels.length) list.append(el('li', { class: 'empty', text: 'none running' }));
  for (const k of kernels) {
    const current = k.id === state.kernelId;
    const conns = typeof k.connections === 'number' ? ` · ${k.connections} conn` : '';
    list.append(el('li', { class: current ? 'current' : '', 'data-kernel-id': k.id, title: k.id },
      el('div', { class: 'kmain' },
         el('div', {}, el('span', { class: 'kid', text: shortId(k.id) }), ` ${k.name}`),
         el('div', { class: 'kstate' }, el('span', { text: k.execution_state }), conns)),
      current ? el('span', { class: 'muted', text: 'attached' })
              : el('button', { type: 'button', class: 'small attach', text: 'Attach',
                               onclick: () => attach(k.id, k) })));
  }
  return kernels;
}

async function startKernel() {
  const name = $('spec-select').value;
  const button = $('start-kernel');
  button.disabled = true;
  button.textContent = 'Starting…';
  setKernelState('starting');
  try {
    const model = await api('POST', '/api/kernels', name ? { name } : {});
    notice(`Started kernel ${shortId(model.id)} (${model.name}).`);
    await attach(model.id, model);
  } catch (e) {
    setKernelState(state.kernelId ? state.kernelState : 'none');
    notice('Could not start a kernel.', 'error', e.message);
  } finally {
    button.disabled = false;
    button.textContent = 'Start';
    refreshKernels();
  }
}

async function attach(id, model) {
  detach();
  state.kernelId = id;
  state.kernelName = model?.name || '';
  sessionStorage.setItem(KERNEL_KEY, id);
  $('kernel-label').textContent = `${state.kernelName || 'kernel'} · ${shortId(id)}`;
  $('kernel-label').title = id;
  $('kernel-info').textContent = '';
  setKernelState(model?.execution_state || 'unknown');
  connect();
  refreshKernels();
  $('code').focus();
}

function detach() {
  clearTimeout(state.reconnectTimer);
  state.reconnectTimer = null;
  state.reconnectAttempt = 0;
  const ws = state.ws;
  state.ws = null;
  if (ws) ws.close(1000, 'detached');
  state.kernelId = null;
  state.kernelName = '';
  sessionStorage.removeItem(KERNEL_KEY);
  for (const cell of state.cells.values()) if (cell.el.dataset.state === 'running') finishCell(cell, 'aborted');
  $('kernel-label').textContent = 'no kernel';
  $('kernel-label').removeAttribute('title');
  $('kernel-info').textContent = '';
  setConn('none');
  setKernelState('none');
}

// ---------------------------------------------------------------------------------------------
// WebSocket

function connect() {
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

function scheduleReconnect(id, ev) {
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
      if (e.status === 403) { detach(); return showTokenPanel('The server refused the token.'); }
      // Server unreachable: keep backing off.
      state.ws = null;
      return scheduleReconnect(id, { code: ev.code, reason: 'server unreachable' });
    }
    connect();
  }, delayMs);
}

function message(msgType, content, channel, parentHeader = {}) {
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

function send(msg) {
  if (!isConnected()) return false;
  state.ws.send(JSON.stringify(msg));
  return true;
}

// Text frames are JSON; binary frames (messages with buffers) carry the JSON in their first part:
// uint32 count, uint32 offsets…, then the parts.
function decodeFrame(data) {
  if (typeof data === 'string') return JSON.parse(data);
  const view = new DataView(data);
  const n = view.getUint32(0);
  const start = view.getUint32(4);
  const end = n > 1 ? view.getUint32(8) : data.byteLength;
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
  else if (msg.channel === 'shell') onShell(type, msg);
  else if (msg.channel === 'stdin') onStdin(type, msg);
}

// ---------------------------------------------------------------------------------------------
// Cells

function createCell(msgId, code, foreign = false) {
  const count = el('span', { class: 'count', text: 'In [*]' });
  const out = el('div', { class: 'cell-output' });
  const node = el('div', { class: 'cell', 'data-state': 'running', 'data-msg-id': msgId },
    el('div', { class: 'cell-head' }, count,
       foreign ? el('span', { text: 'from another client' }) : null,
       el('span', { class: 'spacer' }),
       el('span', { class: 'time', text: new Date().toLocaleTimeString() })),
    el('pre', { class: 'cell-code', text: code }),
    out);
  const cell = { el: node, out, countEl: count, stream: null, pendingClear: false, reply: null };
  state.cells.set(msgId, cell);
  appendToLog(node, true);
  return cell;
}

function finishCell(cell, status) {
  cell.el.dataset.state = status;
  for (const form of cell.out.querySelectorAll('.stdin-form')) form.remove();
}

function setCount(cell, n) {
  if (typeof n === 'number') cell.countEl.textContent = `In [${n}]`;
}

function addOutput(cell, node) {
  keepScrolled(() => {
    if (cell.pendingClear) clearCell(cell);
    cell.out.append(node);
    cell.stream = null;
  });
}

function clearCell(cell) {
  cell.pendingClear = false;
  cell.out.replaceChildren();
  cell.stream = null;
}

function appendStream(cell, name, text) {
  keepScrolled(() => {
    if (cell.pendingClear) clearCell(cell);
    let s = cell.stream;
    if (!s || s.name !== name || s.node !== cell.out.lastElementChild) {
      s = { name, raw: '', node: el('pre', { class: `out-stream ${name === 'stderr' ? 'stderr' : 'stdout'}` }) };
      cell.out.append(s.node);
    }
    s.raw += text;
    if (s.raw.length > MAX_STREAM_CHARS) s.raw = '[… earlier output dropped …]\n' + s.raw.slice(-MAX_STREAM_CHARS);
    s.node.replaceChildren(ansiToFragment(applyCarriageReturns(s.raw)));
    cell.stream = s;
  });
}

// The richest MIME type this page can show safely.
function renderBundle(data = {}, metadata = {}) {
  for (const mime of MIME_ORDER) {
    if (data[mime] === undefined || data[mime] === null) continue;
    const value = asText(data[mime]);
    const meta = metadata[mime] || {};
    if (mime === 'image/png' || mime === 'image/jpeg' || mime === 'image/gif') {
      const b64 = value.replace(/\s+/g, '');
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) continue;
      return el('img', { class: 'out-image', alt: asText(data['text/plain']) || 'image output',
                         src: `data:${mime};base64,${b64}`, width: meta.width, height: meta.height });
    }
    if (mime === 'image/svg+xml') {
      // As an <img>, SVG cannot run scripts or reach the page.
      return el('img', { class: 'out-image', alt: 'SVG output',
                         src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(value)}` });
    }
    if (mime === 'text/html') return htmlFrame(value);
    return el('pre', { class: 'out-text' }, ansiToFragment(value));
  }
  return el('pre', { class: 'out-text muted', text: `[output of type ${Object.keys(data).join(', ') || 'none'}]` });
}

// Kernel HTML goes into a sandboxed frame: no scripts, no same-origin access, no forms.
function htmlFrame(html) {
  const rows = (html.match(/<tr[\s>]/gi) || []).length;
  const blocks = (html.match(/<(?:br|p|li|div|h[1-6]|pre)[\s>/]/gi) || []).length;
  const height = Math.max(48, Math.min(420, 24 + rows * 25 + blocks * 20));
  const doc = '<!doctype html><html><head><meta charset="utf-8"><style>' +
    'body{margin:6px;font:13px/1.4 system-ui,"DejaVu Sans",sans-serif;color:#1d232b}' +
    'table{border-collapse:collapse}th,td{padding:3px 9px;border-bottom:1px solid #e3e6ea;text-align:right}' +
    'thead th{border-bottom:1px solid #b9bfc7}' +
    '</style></head><body>' + html + '</body></html>';
  return el('iframe', { class: 'out-html', sandbox: '', srcdoc: doc, height, title: 'HTML output',
                        referrerpolicy: 'no-referrer' });
}

function renderError(content) {
  const tb = Array.isArray(content.traceback) && content.traceback.length
    ? content.traceback.join('\n') : `${content.ename}: ${content.evalue}`;
  return el('pre', { class: 'out-error' }, ansiToFragment(tb));
}

// The cell a message belongs to; output for a request of another client gets its own cell.
function cellFor(msg, create) {
  const parentId = msg.parent_header?.msg_id;
  if (!parentId) return null;
  let cell = state.cells.get(parentId);
  if (!cell && create) cell = createCell(parentId, msg.content?.code ?? '', true);
  return cell || null;
}

// ---------------------------------------------------------------------------------------------
// Channels

function onIopub(type, msg) {
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

function onShell(type, msg) {
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

function onStdin(type, msg) {
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

async function showDeathReason() {
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

// ---------------------------------------------------------------------------------------------
// Actions

function runCode() {
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

async function kernelAction(what) {
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

function onEditorKey(ev) {
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

// ---------------------------------------------------------------------------------------------
// Start

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
