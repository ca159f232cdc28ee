// Plain text output (streams, text/plain, tracebacks): ANSI colours, carriage returns
// (progress bars), the gateway's truncation markers, folding, and a copy button.

import { el } from '../dom.js';
import { formatBytes } from '../format.js';
import { ansiToFragment, stripAnsi } from './ansi.js';
import { collapsible } from './collapse.js';
import { copyButton } from './copy.js';

// The /v1 output budget keeps a stream's head and tail with this line between them.
const TRUNCATION_MARKER = /\[\.\.\. (\d+) bytes truncated \.\.\.\]/g;

// A carriage return overwrites the current line, as a terminal would.
export function applyCarriageReturns(text) {
  if (!text.includes('\r')) return text;
  return text.replace(/\r\n/g, '\n').split('\n')
    .map(line => { const i = line.lastIndexOf('\r', line.length - 2); return i < 0 ? line : line.slice(i + 1); })
    .join('\n').replace(/\r$/, '');
}

function truncationMarker(bytes) {
  return el('span', { class: 'trunc-marker', role: 'note',
                      text: `✂ ${formatBytes(bytes)} cut here — the server keeps the head and the tail` });
}

// Text → nodes: coloured spans, and each truncation marker as a marker element.
export function textFragment(text) {
  const frag = document.createDocumentFragment();
  let last = 0;
  TRUNCATION_MARKER.lastIndex = 0;
  for (let m; (m = TRUNCATION_MARKER.exec(text));) {
    frag.append(ansiToFragment(text.slice(last, m.index)), truncationMarker(Number(m[1])));
    last = TRUNCATION_MARKER.lastIndex;
  }
  frag.append(ansiToFragment(text.slice(last)));
  return frag;
}

// A text block that can be rewritten as a stream grows: {el, set(text), text()}.
export function textBlock(className, what = 'output') {
  const pre = el('pre', { class: className });
  const fold = collapsible(pre);
  let raw = '';
  const block = el('div', { class: 'text-block' }, fold.el,
                   copyButton(() => stripAnsi(raw), what));
  return {
    el: block,
    set(text) {
      raw = applyCarriageReturns(text);
      pre.replaceChildren(textFragment(raw));
      fold.update(raw);
    },
    text: () => raw,
  };
}

export function renderText(text, className = 'out-text', what = 'output') {
  const block = textBlock(className, what);
  block.set(text);
  return block.el;
}
