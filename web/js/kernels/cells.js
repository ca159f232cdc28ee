// Cells of the raw kernel view: one per execute_request, found again by the msg_id its
// replies and outputs name as parent.

import { Cell } from '../cells/cell.js';
import { formatClock, formatDuration } from '../format.js';
import { currentLog } from './log.js';
import { state } from './state.js';

const LABELS = { running: 'running', done: 'ok', error: 'error', aborted: 'aborted' };

const messageTime = msg => {
  const t = Date.parse(msg?.header?.date || '');
  return Number.isNaN(t) ? Date.now() : Math.min(t, Date.now());
};

export function createCell(log, msgId, code, { foreign = false, since = Date.now() } = {}) {
  const cell = new Cell({ code, meta: formatClock(new Date(since).toISOString()), foreign });
  cell.el.dataset.msgId = msgId;
  cell.startedAt = since;
  cell.sawError = false;
  cell.reply = null;
  cell.pendingClear = false;
  cell.setState('running', LABELS.running);
  cell.startClock(since, 'running');
  log.cells.set(msgId, cell);
  log.append(cell.el, true);
  return cell;
}

export function finishCell(cell, status, msg) {
  if (cell.state !== 'running') return;
  cell.setState(status, LABELS[status] || status);
  const end = msg ? messageTime(msg) : Date.now();
  cell.stopClock(`ran ${formatDuration(Math.max(0, end - cell.startedAt))}`);
  for (const form of cell.out.querySelectorAll('.stdin-form')) form.remove();
}

// The cell a message belongs to; with `create`, output for a request this page did not send
// (another client, or output replayed after a reload) gets a cell of its own.
export function cellFor(msg, create) {
  const log = currentLog();
  const parentId = msg.parent_header?.msg_id;
  if (!log || !parentId) return null;
  let cell = log.cells.get(parentId);
  if (!cell && create) {
    const foreign = Boolean(msg.parent_header.session) && msg.parent_header.session !== state.sessionId;
    cell = createCell(log, parentId, msg.content?.code ?? '', { foreign, since: messageTime(msg) });
  }
  return cell || null;
}

// Ends every running cell (the kernel died or restarted under it); returns them, so that the
// reason can be filled in once the server says it.
export function failRunningCells(log, reason) {
  const failed = [...log.cells.values()].filter(cell => cell.state === 'running');
  for (const cell of failed) {
    finishCell(cell, 'aborted');
    if (reason) cell.setReason(reason);
  }
  return failed;
}
