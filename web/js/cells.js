// Cells: one per execution, and their outputs.

import { ansiToFragment, applyCarriageReturns, asText, el } from './dom.js';
import { MAX_STREAM_CHARS, MIME_ORDER, state } from './state.js';
import { appendToLog, keepScrolled } from './status.js';

export function createCell(msgId, code, foreign = false) {
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

export function finishCell(cell, status) {
  cell.el.dataset.state = status;
  for (const form of cell.out.querySelectorAll('.stdin-form')) form.remove();
}

export function setCount(cell, n) {
  if (typeof n === 'number') cell.countEl.textContent = `In [${n}]`;
}

export function addOutput(cell, node) {
  keepScrolled(() => {
    if (cell.pendingClear) clearCell(cell);
    cell.out.append(node);
    cell.stream = null;
  });
}

export function clearCell(cell) {
  cell.pendingClear = false;
  cell.out.replaceChildren();
  cell.stream = null;
}

export function appendStream(cell, name, text) {
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
export function renderBundle(data = {}, metadata = {}) {
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
export function htmlFrame(html) {
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

export function renderError(content) {
  const tb = Array.isArray(content.traceback) && content.traceback.length
    ? content.traceback.join('\n') : `${content.ename}: ${content.evalue}`;
  return el('pre', { class: 'out-error' }, ansiToFragment(tb));
}

// The cell a message belongs to; output for a request of another client gets its own cell.
export function cellFor(msg, create) {
  const parentId = msg.parent_header?.msg_id;
  if (!parentId) return null;
  let cell = state.cells.get(parentId);
  if (!cell && create) cell = createCell(parentId, msg.content?.code ?? '', true);
  return cell || null;
}
