// One context as the playground shows it: its own log of cells (so two contexts never mix
// their output), its events WebSocket while selected, and its history from the server.

import { api, ApiError } from '../api.js';
import { el, keepScrolled, mapLimited, uuid } from '../dom.js';
import { shortId } from '../format.js';
import { fileCard } from '../files/card.js';
import { noticeNode } from '../ui/notice.js';
import * as codeCache from './code-cache.js';
import { EventsSocket } from './events-socket.js';
import { cellFromExecution, ExecutionCell, isFinal } from './execution-cell.js';

const byCreation = (a, b) => Date.parse(a.created_at) - Date.parse(b.created_at);

export class ContextSession {
  // hooks: onEnd(execution), onConnection(state, detail), onGone(reason)
  constructor(model, container, hooks) {
    this.id = model.id;
    this.model = model;
    this.hooks = hooks;
    this.cells = new Map();     // execution id → ExecutionCell
    this.pending = new Map();   // request id → ExecutionCell not yet acknowledged
    this.followed = new Set();  // execution ids this connection already receives
    this.socket = null;
    this.log = el('div', { class: 'log context-log', 'data-context-id': this.id, 'aria-live': 'polite',
                           'aria-label': `Output of context ${shortId(this.id)}` });
    container.append(this.log);
    this.fileCard = (path, bytes, mime) => fileCard(this.id, path, bytes, mime);
  }

  get path() { return `/v1/contexts/${encodeURIComponent(this.id)}`; }
  get connected() { return this.socket !== null && this.socket.open; }

  show() {
    this.log.hidden = false;
    this.connect();
    this.sync();
  }

  hide() {
    this.log.hidden = true;
    this.socket?.close();
    this.socket = null;
  }

  dispose() {
    this.hide();
    for (const cell of this.cells.values()) cell.dispose();
    this.log.remove();
  }

  notice(text, kind, detail) {
    keepScrolled(this.log, () => this.log.append(noticeNode(text, kind, detail)), true);
  }

  // ---- the socket ------------------------------------------------------------------------

  connect() {
    this.socket?.close();
    this.followed.clear();
    this.socket = new EventsSocket(this.id, {
      onMessage: msg => this.onMessage(msg),
      onOpen: reconnected => this.onOpen(reconnected),
      onState: (state, detail) => this.hooks.onConnection(state, detail),
      onGone: reason => this.hooks.onGone(reason),
      checkGone: () => this.checkGone(),
    });
    this.socket.connect();
  }

  onOpen(reconnected) {
    this.followed.clear();
    if (reconnected) {
      this.notice('Reconnected to the context.');
      this.sync();
    } else {
      this.followUnfinished();
    }
  }

  async checkGone() {
    try {
      await api('GET', this.path);
      return null;
    } catch (e) {
      if (e instanceof ApiError && (e.status === 404 || e.status === 410)) return e.message;
      return null;  // unreachable for now: keep trying
    }
  }

  onMessage(msg) {
    if (msg.type === 'queued' && msg.request_id && this.pending.has(msg.request_id)) {
      return this.acknowledge(msg);
    }
    if (msg.type === 'error' && !msg.execution_id) return this.refused(msg);
    const cell = this.cells.get(msg.execution_id);
    if (!cell) return;
    keepScrolled(this.log, () => cell.onEvent(msg));
    if (msg.type === 'start') this.setCellActions(cell);
    if (msg.type === 'end') this.ended(cell, msg.execution);
  }

  acknowledge(msg) {
    const cell = this.pending.get(msg.request_id);
    this.pending.delete(msg.request_id);
    cell.bind(msg.execution_id);
    this.cells.set(msg.execution_id, cell);
    this.followed.add(msg.execution_id);
    codeCache.remember(this.id, msg.execution_id, cell.submitted);
    cell.onEvent(msg);
    this.setCellActions(cell);
  }

  refused(msg) {
    const cell = msg.request_id && this.pending.get(msg.request_id);
    if (cell) {
      this.pending.delete(msg.request_id);
      cell.refuse(msg.message || 'refused');
    } else {
      this.notice('The server refused a message.', 'error', msg.message);
    }
  }

  ended(cell, execution) {
    this.followed.delete(cell.id);
    this.hooks.onEnd(execution);
  }

  // ---- running ---------------------------------------------------------------------------

  // Submits code; false when the socket is not open (the caller keeps the code).
  run({ code, timeout, language }) {
    if (!this.connected) return false;
    const requestId = uuid();
    const message = { type: 'execute', request_id: requestId, code, keep_ansi: true };
    if (timeout) message.timeout = timeout;
    if (language) message.language = language;
    const cell = new ExecutionCell({ code, timeout, language, fileCard: this.fileCard });
    cell.submitted = { code, timeout, language };
    this.pending.set(requestId, cell);
    keepScrolled(this.log, () => this.log.append(cell.el), true);
    if (!this.socket.send(message)) {
      this.pending.delete(requestId);
      cell.refuse('not connected');
    }
    return true;
  }

  runningCell() {
    return [...this.cells.values()].find(c => c.status === 'running') || null;
  }

  // DELETE interrupts a running execution and cancels a queued one; its end event follows.
  async stop(cell) {
    if (!cell?.id) return;
    try {
      await api('DELETE', `${this.path}/executions/${encodeURIComponent(cell.id)}`);
    } catch (e) {
      this.notice('Could not interrupt the execution.', 'error', e.message);
    }
  }

  interrupt() {
    const cell = this.runningCell();
    if (cell) this.stop(cell);
    return Boolean(cell);
  }

  setCellActions(cell) {
    if (cell.finished) return cell.setActions();
    const label = cell.status === 'running' ? 'Interrupt' : 'Cancel';
    cell.setActions(el('button', { type: 'button', class: 'small', text: label,
                                   onclick: () => this.stop(cell) }));
  }

  // ---- history ---------------------------------------------------------------------------

  // Brings the log in line with the server: executions this page has not drawn (a reload,
  // another client) or whose end it missed are fetched and drawn; unfinished ones followed.
  async sync() {
    let summaries;
    try {
      summaries = (await api('GET', `${this.path}/executions`)).sort(byCreation);
    } catch (e) {
      if (!(e instanceof ApiError && (e.status === 404 || e.status === 410)))
        this.notice('Could not load the history of this context.', 'error', e.message);
      return;
    }
    const stale = summaries.filter(s => {
      const cell = this.cells.get(s.id);
      return !cell || (!cell.finished && isFinal(s.status));
    });
    const executions = await mapLimited(stale, 4, s =>
      api('GET', `${this.path}/executions/${encodeURIComponent(s.id)}`).catch(() => null));
    keepScrolled(this.log, () => { for (const x of executions) if (x) this.place(x); }, true);
    this.followUnfinished();
  }

  place(x) {
    const known = this.cells.get(x.id);
    if (known) {
      if (isFinal(x.status)) known.finish(x, { redraw: true });
      return;
    }
    const submitted = codeCache.recall(this.id, x.id) || {};
    const cell = cellFromExecution(x, { code: submitted.code, fileCard: this.fileCard });
    cell.timeout = submitted.timeout || null;
    this.cells.set(x.id, cell);
    this.insertInOrder(cell);
    this.setCellActions(cell);
  }

  insertInOrder(cell) {
    const at = Date.parse(cell.createdAt);
    const later = [...this.log.querySelectorAll(':scope > .cell')]
      .find(node => Date.parse(node.dataset.createdAt) > at);
    if (later) later.before(cell.el); else this.log.append(cell.el);
  }

  followUnfinished() {
    if (!this.connected) return;
    for (const cell of this.cells.values()) {
      if (cell.finished || !cell.id || this.followed.has(cell.id)) continue;
      this.followed.add(cell.id);
      this.socket.send({ type: 'follow', execution_id: cell.id });
    }
  }
}
