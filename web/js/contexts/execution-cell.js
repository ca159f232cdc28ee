// One /v1 execution as a cell: driven live by its events (queued → start → output → end), or
// drawn whole from a finished Execution (history after a reload, or an end whose output the
// server cut). Shows the elapsed time, the final status, why it ended, and what was cut.

import { Cell } from '../cells/cell.js';
import { el } from '../dom.js';
import { formatBytes, formatClock, formatDuration } from '../format.js';
import { renderTraceback } from '../render/error.js';
import { renderBundle } from '../render/mime.js';

const STATUS_LABEL = {
  sending: 'sending…', queued: 'queued', running: 'running', ok: 'ok', error: 'error',
  timeout: 'timed out', interrupted: 'interrupted', refused: 'refused',
};
const FINAL = new Set(['ok', 'error', 'timeout', 'interrupted', 'refused']);

// Errors the gateway (not the code) raised, named for people; their value says why.
const GATEWAY_ERRORS = {
  KernelDead: 'Kernel died', KernelDied: 'Kernel died', KernelRestarted: 'Kernel restarted',
  MemoryError: 'Out of memory', ContextClosed: 'Context closed', GatewayRestarted: 'Gateway restarted',
  AuditUnavailable: 'Not run: the audit log is unavailable', Timeout: 'Timed out', TimeoutError: 'Timed out',
};

export const isFinal = status => FINAL.has(status);

function statePreservedText(preserved) {
  if (preserved === undefined) return '';
  return preserved ? 'state preserved: variables kept' : 'state lost: the kernel was restarted, variables are gone';
}

// The label under the head: why the cell ended as it did, or nothing for a plain ok/error.
function endReason(x, timeout) {
  const preserved = statePreservedText(x.state_preserved);
  const gateway = x.error && GATEWAY_ERRORS[x.error.name];
  if (gateway) return [`${gateway}: ${x.error.value}`, 'error'];
  if (x.status === 'timeout')
    return [`Timed out${timeout ? ` after ${timeout} s` : ''}; ${preserved || 'interrupted'}`, 'warn'];
  if (x.status === 'interrupted') return [`Interrupted; ${preserved || 'cancelled before it ran'}`, 'warn'];
  return ['', ''];
}

function finalClock(x) {
  const ran = formatDuration(x.duration_ms);
  // A queue of a few milliseconds is no news; a real wait behind other cells is.
  return x.queue_ms >= 100 ? `queued ${formatDuration(x.queue_ms)} · ran ${ran}` : `ran ${ran}`;
}

export class ExecutionCell {
  // `fileCard(path, bytes, mime)` draws results the server moved to files.
  constructor({ code, timeout = null, language = null, createdAt = null, fileCard }) {
    this.id = null;
    this.timeout = timeout;
    this.fileCard = fileCard;
    this.createdAt = createdAt || new Date().toISOString();
    const meta = [language, timeout ? `timeout ${timeout} s` : null, formatClock(this.createdAt)]
      .filter(Boolean).join(' · ');
    this.cell = new Cell({ code, meta });
    this.el = this.cell.el;
    this.el.dataset.createdAt = this.createdAt;
    this.setStatus('sending');
    this.cell.startClock(Date.now(), 'waiting');
  }

  get status() { return this.cell.state; }
  get finished() { return isFinal(this.status); }

  setStatus(status) {
    this.cell.setState(status, STATUS_LABEL[status] || status);
  }

  bind(executionId) {
    this.id = executionId;
    this.el.dataset.executionId = executionId;
  }

  // Buttons for the running/queued cell (interrupt, cancel), cleared when it ends.
  setActions(...buttons) { this.cell.setActions(...buttons); }

  // One message from the events WebSocket (or a line of the NDJSON stream).
  onEvent(ev) {
    switch (ev.type) {
      case 'queued':
        this.setStatus('queued');
        this.cell.startClock(Date.now(), 'queued');
        return;
      case 'following':   // the execution's events follow from its start: draw them anew
        this.cell.clearOutput();
        return;
      case 'start':
        this.setStatus('running');
        this.cell.startClock(Date.now(), 'running');
        return;
      case 'interrupting':
        this.cell.badge.textContent = 'interrupting…';
        return;
      case 'stdout':
      case 'stderr':
        this.cell.appendStream(ev.type, ev.text || '');
        return;
      case 'result':
        this.cell.addOutput(this.resultNode(ev));
        return;
      case 'error':
        this.cell.addOutput(renderTraceback(ev.name, ev.value, ev.traceback));
        return;
      case 'end':
        this.finish(ev.execution, { redraw: wasCut(ev.execution) });
        return;
      default:
    }
  }

  resultNode(result) {
    return el('div', { class: 'out-display' }, renderBundle(result.data, result.metadata, { fileCard: this.fileCard }));
  }

  // Draws every output of a finished or running Execution, replacing what is there.
  drawOutputs(x) {
    this.cell.clearOutput();
    if (x.stdout) this.cell.appendStream('stdout', x.stdout);
    if (x.stderr) this.cell.appendStream('stderr', x.stderr);
    for (const r of x.results || []) this.cell.addOutput(this.resultNode(r));
    if (x.error) this.cell.addOutput(renderTraceback(x.error.name, x.error.value, x.error.traceback));
  }

  // The end: status, count, time, reason and what was cut. `redraw` when the live output is
  // not the whole story (the server cut it: the Execution has head, marker and tail).
  finish(x, { redraw = false } = {}) {
    if (redraw) this.drawOutputs(x);
    this.setStatus(x.status);
    this.cell.setCount(x.execution_count);
    this.cell.stopClock(finalClock(x));
    const [reason, kind] = endReason(x, this.timeout);
    this.cell.setReason(reason, kind);
    this.el.dataset.statePreserved = x.state_preserved === undefined ? '' : String(x.state_preserved);
    this.drawTruncation(x.truncated);
    if (x.restored) this.cell.addNote(el('p', { class: 'note', text: 'Restored after a gateway restart: output shortened.' }));
    this.setActions();
  }

  // The server's truncated counts, as such: bytes cut from each stream, results moved to
  // files (with a link) or dropped.
  drawTruncation(t) {
    if (!t) return;
    const items = [];
    if (t.stdout_bytes > 0) items.push(el('li', { text: `stdout: ${formatBytes(t.stdout_bytes)} cut from the middle` }));
    if (t.stderr_bytes > 0) items.push(el('li', { text: `stderr: ${formatBytes(t.stderr_bytes)} cut from the middle` }));
    for (const r of t.results || []) {
      items.push(r.moved_to
        ? el('li', {}, `${r.mime} result (${formatBytes(r.bytes)}) moved to `, el('code', { text: r.moved_to }))
        : el('li', { text: `${r.mime} result (${formatBytes(r.bytes)}) dropped: over the result caps` }));
    }
    if (items.length) {
      this.cell.addNote(el('div', { class: 'truncation', role: 'note' },
        el('strong', { text: 'Truncated output' }), el('ul', {}, items)));
    }
  }

  // The server refused the submission (queue full, bad field): the cell says why.
  refuse(message) {
    this.setStatus('refused');
    this.cell.stopClock('');
    this.cell.setReason(message, 'error');
    this.setActions();
  }

  // A running or queued execution seen from history: its clock counts from when it began.
  resume(x) {
    this.setStatus(x.status);
    const began = Date.parse(x.created_at) + (x.status === 'running' ? x.queue_ms || 0 : 0);
    this.cell.startClock(Number.isNaN(began) ? Date.now() : Math.min(began, Date.now()), x.status);
    this.drawOutputs(x);
  }

  dispose() { this.cell.dispose(); }
}

const wasCut = x => Boolean(x && x.truncated &&
  (x.truncated.stdout_bytes > 0 || x.truncated.stderr_bytes > 0 || (x.truncated.results || []).length));

// A finished execution from GET, drawn whole.
export function cellFromExecution(x, { code, fileCard }) {
  const cell = new ExecutionCell({ code, language: x.language, createdAt: x.created_at, fileCard });
  cell.bind(x.id);
  if (isFinal(x.status)) {
    cell.drawOutputs(x);
    cell.finish(x);
  } else {
    cell.resume(x);
  }
  return cell;
}
