// ANSI SGR escape codes (tracebacks, coloured logs) → <span>s. The 16 basic colours become
// classes (themed in css/output.css); 256-colour and true-colour codes become an inline colour
// set through the CSSOM (allowed by the page's CSP, unlike style attributes in markup). Every
// other escape sequence is dropped; text only ever enters the page as text nodes.

import { el } from '../dom.js';

const OSC = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g;          // window titles, hyperlinks
const CSI_NOT_SGR = /\x1b\[[0-9;?]*[A-Za-ln-z@`]/g;         // cursor moves, erase line, …
const SGR = /\x1b\[([0-9;]*)m/g;

export const stripAnsi = s => String(s).replace(OSC, '').replace(/\x1b\[[0-9;?]*[A-Za-z@`]/g, '');

// xterm's 256-colour palette: 16 named, a 6×6×6 cube, 24 greys.
function color256(n) {
  if (n < 16) return { index: n < 8 ? n : n - 8 + 60 };  // 60: the bright offset (90 - 30)
  if (n < 232) {
    const c = n - 16;
    const level = v => (v === 0 ? 0 : 55 + v * 40);
    return { rgb: [level(Math.floor(c / 36)), level(Math.floor(c / 6) % 6), level(c % 6)] };
  }
  const g = 8 + (n - 232) * 10;
  return { rgb: [g, g, g] };
}

function freshStyle() {
  return { fg: null, bg: null, bold: false, dim: false, italic: false, underline: false };
}

// Reads one extended colour (38;5;n or 38;2;r;g;b) starting at codes[i]; returns the colour
// and how many codes it used.
function extendedColor(codes, i) {
  if (codes[i + 1] === 5 && codes[i + 2] !== undefined) return [color256(codes[i + 2]), 3];
  if (codes[i + 1] === 2 && codes[i + 4] !== undefined)
    return [{ rgb: [codes[i + 2], codes[i + 3], codes[i + 4]] }, 5];
  return [null, 1];
}

function applyCodes(style, codes) {
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i];
    if (c === 0) Object.assign(style, freshStyle());
    else if (c === 1) style.bold = true;
    else if (c === 2) style.dim = true;
    else if (c === 3) style.italic = true;
    else if (c === 4) style.underline = true;
    else if (c === 22) { style.bold = false; style.dim = false; }
    else if (c === 23) style.italic = false;
    else if (c === 24) style.underline = false;
    else if (c === 39) style.fg = null;
    else if (c === 49) style.bg = null;
    else if (c >= 30 && c <= 37) style.fg = { index: c - 30 };
    else if (c >= 90 && c <= 97) style.fg = { index: c - 90 + 60 };
    else if (c >= 40 && c <= 47) style.bg = { index: c - 40 };
    else if (c >= 100 && c <= 107) style.bg = { index: c - 100 + 60 };
    else if (c === 38 || c === 48) {
      const [color, used] = extendedColor(codes, i);
      if (color) style[c === 38 ? 'fg' : 'bg'] = color;
      i += used - 1;
    }
  }
}

// Class names for what a stylesheet can theme; the rest as CSSOM colours.
function styledSpan(style, text) {
  const classes = [];
  if (style.fg?.index !== undefined) classes.push(`ansi-fg-${style.fg.index}`);
  if (style.bg?.index !== undefined) classes.push(`ansi-bg-${style.bg.index}`);
  if (style.bold) classes.push('ansi-bold');
  if (style.dim) classes.push('ansi-dim');
  if (style.italic) classes.push('ansi-italic');
  if (style.underline) classes.push('ansi-underline');
  if (style.fg?.rgb || style.bg?.rgb) classes.push('ansi-rgb');
  const span = el('span', { class: classes.join(' '), text });
  if (style.fg?.rgb) span.style.color = `rgb(${style.fg.rgb.join(',')})`;
  if (style.bg?.rgb) span.style.backgroundColor = `rgb(${style.bg.rgb.join(',')})`;
  return span;
}

const isPlain = s => !s.fg && !s.bg && !s.bold && !s.dim && !s.italic && !s.underline;

export function ansiToFragment(input) {
  const text = String(input).replace(OSC, '').replace(CSI_NOT_SGR, '');
  const frag = document.createDocumentFragment();
  const style = freshStyle();
  const push = s => {
    s = s.replace(/\x1b/g, '');
    if (s) frag.append(isPlain(style) ? document.createTextNode(s) : styledSpan(style, s));
  };
  let last = 0;
  SGR.lastIndex = 0;
  for (let m; (m = SGR.exec(text));) {
    push(text.slice(last, m.index));
    last = SGR.lastIndex;
    applyCodes(style, m[1] ? m[1].split(';').map(Number) : [0]);
  }
  push(text.slice(last));
  return frag;
}
