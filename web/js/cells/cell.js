// A cell: the code, a head (count, status, elapsed time, reason), the outputs and notes.
// Both the playground (/v1 executions) and the raw kernel view (Jupyter messages) draw their
// cells with this; they differ only in what drives it.

import { el } from '../dom.js';
import { formatDuration } from '../format.js';
import { copyButton } from '../render/copy.js';
import { textBlock } from '../render/text.js';
import { every } from '../ui/ticker.js';

// Per output block: past this, the middle is dropped (the head and the tail say the most),
// so a runaway stream cannot grow the page without bound. The /v1 budgets keep less.
const MAX_STREAM_CHARS = 2_000_000;

function keepHeadAndTail(text) {
  if (text.length <= MAX_STREAM_CHARS) return text;
  const half = MAX_STREAM_CHARS / 2;
  const dropped = text.length - MAX_STREAM_CHARS;
  return `${text.slice(0, half)}\n[… ${dropped.toLocaleString()} characters not shown here …]\n${text.slice(-half)}`;
}

export class Cell {
  constructor({ code = '', meta = '', foreign = false } = {}) {
    this.code = code;
    this.countEl = el('span', { class: 'count', text: 'In [*]' });
    this.badge = el('span', { class: 'badge status-badge' });
    this.clockEl = el('span', { class: 'clock', 'aria-label': 'elapsed time' });
    this.reasonEl = el('span', { class: 'reason', hidden: true });
    this.actions = el('span', { class: 'cell-actions' });
    this.metaEl = el('span', { class: 'cell-meta', text: meta });
    this.out = el('div', { class: 'cell-output' });
    this.notes = el('div', { class: 'cell-notes' });
    this.el = el('article', { class: 'cell' },
      el('header', { class: 'cell-head' }, this.countEl, this.badge, this.clockEl,
         foreign ? el('span', { class: 'muted', text: 'from another client' }) : null,
         el('span', { class: 'spacer' }), this.metaEl, this.actions),
      this.reasonEl,
      this.codeBlock(code),
      this.out,
      this.notes);
    this.stream = null;
    this.stopTicking = null;
  }

  codeBlock(code) {
    if (!code) return el('div', { class: 'cell-code empty', text: '(code not known to this page)' });
    return el('div', { class: 'cell-code' }, el('pre', { text: code }),
              copyButton(() => code, 'code'));
  }

  setState(state, label = state) {
    this.el.dataset.state = state;
    this.badge.textContent = label;
    this.badge.dataset.state = state;
  }

  get state() { return this.el.dataset.state; }

  setCount(n) {
    if (typeof n === 'number') this.countEl.textContent = `In [${n}]`;
  }

  // A label under the head for why a cell ended as it did (killed, timed out, restarted).
  setReason(text, kind = 'error') {
    this.reasonEl.hidden = !text;
    this.reasonEl.textContent = text || '';
    this.reasonEl.dataset.kind = kind;
  }

  // Counts up from `sinceMs` (a Date.now() value) with a prefix, until stopClock().
  startClock(sinceMs, prefix) {
    this.stopClock();
    this.stopTicking = every(() => {
      this.clockEl.textContent = `${prefix} ${formatDuration(Math.max(0, Date.now() - sinceMs))}`;
    });
  }

  stopClock(text) {
    if (this.stopTicking) this.stopTicking();
    this.stopTicking = null;
    if (text !== undefined) this.clockEl.textContent = text;
  }

  addOutput(node) {
    this.out.append(node);
    this.stream = null;
  }

  clearOutput() {
    this.out.replaceChildren();
    this.notes.replaceChildren();
    this.stream = null;
  }

  // Consecutive chunks of one stream grow one block; another stream or output starts anew.
  appendStream(name, text) {
    let s = this.stream;
    if (!s || s.name !== name || s.block.el !== this.out.lastElementChild) {
      const kind = name === 'stderr' ? 'stderr' : 'stdout';
      s = { name, raw: '', block: textBlock(`out-stream ${kind}`, name) };
      this.out.append(s.block.el);
    }
    s.raw = keepHeadAndTail(s.raw + text);
    s.block.set(s.raw);
    this.stream = s;
  }

  addNote(node) {
    this.notes.append(node);
  }

  setActions(...buttons) {
    this.actions.replaceChildren(...buttons.filter(Boolean));
  }

  dispose() {
    this.stopClock();
  }
}
