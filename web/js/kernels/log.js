// One log per kernel: its cells, its display ids and the last output sequence number seen, so
// a second kernel's cells never land under the first's, and a reconnect (or a reload, from 0)
// asks the gateway to replay what was missed (?since=).

import { $, el, keepScrolled } from '../dom.js';
import { shortId } from '../format.js';
import { noticeNode } from '../ui/notice.js';
import { state } from './state.js';

class KernelLog {
  constructor(kernelId) {
    this.kernelId = kernelId;
    this.cells = new Map();     // execute_request msg_id → Cell
    this.displays = new Map();  // display_id → Set of output containers
    this.lastSeq = null;        // the last metadata.callisto_seq received; null: none yet
    this.el = el('div', { class: 'log kernel-log', 'data-kernel-id': kernelId, 'aria-live': 'polite',
                          'aria-label': `Output of kernel ${shortId(kernelId)}` });
    $('kn-logs').append(this.el);
  }

  append(node, force = false) {
    keepScrolled(this.el, () => this.el.append(node), force);
  }

  // Runs fn (which changes a cell) keeping the log pinned to its bottom if it was there.
  update(fn) {
    keepScrolled(this.el, fn);
  }

  notice(text, kind, detail) {
    this.append(noticeNode(text, kind, detail), true);
  }

  clear() {
    for (const [id, cell] of this.cells) {
      if (cell.state === 'running') continue;
      cell.dispose();
      this.cells.delete(id);
    }
    this.displays.clear();
    this.el.replaceChildren(...[...this.cells.values()].map(c => c.el));
  }

  dispose() {
    for (const cell of this.cells.values()) cell.dispose();
    this.el.remove();
  }
}

export function logFor(kernelId) {
  let log = state.logs.get(kernelId);
  if (!log) { log = new KernelLog(kernelId); state.logs.set(kernelId, log); }
  return log;
}

export const currentLog = () => (state.kernelId ? logFor(state.kernelId) : null);

export function showLog(kernelId) {
  for (const log of state.logs.values()) log.el.hidden = log.kernelId !== kernelId;
  $('kn-empty').hidden = kernelId !== null;
}

// A notice in the attached kernel's log, or the view's own area when none is attached.
export function notice(text, kind = 'info', detail) {
  const log = currentLog();
  if (log) log.notice(text, kind, detail);
  else $('kn-logs').append(noticeNode(text, kind, detail));
}

export function dropLog(kernelId) {
  state.logs.get(kernelId)?.dispose();
  state.logs.delete(kernelId);
}

export function dropAllLogs() {
  for (const id of [...state.logs.keys()]) dropLog(id);
}
