// Small helpers: ids, elements, ANSI colour codes as spans, carriage returns.

export function uuid() {
  // crypto.randomUUID needs a secure context; getRandomValues works on plain http too.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map(x => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export function el(tag, attrs = {}, ...children) {
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

export const shortId = id => String(id).slice(0, 8);
export const asText = v => (Array.isArray(v) ? v.join('') : String(v ?? ''));

// ANSI escape codes → spans with classes for the basic 16 colours and bold; every other escape
// sequence is dropped. Text is only ever set through text nodes.
export function ansiToFragment(input) {
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

export const stripAnsi = s => String(s).replace(/\x1b\[[0-9;?]*[A-Za-z@`]/g, '')
                                .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, '');

// Carriage returns overwrite the current line (progress bars).
export function applyCarriageReturns(text) {
  if (!text.includes('\r')) return text;
  return text.replace(/\r\n/g, '\n').split('\n')
    .map(line => { const i = line.lastIndexOf('\r', line.length - 2); return i < 0 ? line : line.slice(i + 1); })
    .join('\n').replace(/\r$/, '');
}
