// The context's events WebSocket (GET /v1/contexts/{id}/events): one connection carries every
// execution of the context, submitted here or elsewhere (follow). It reconnects with backoff
// when dropped; a close with code 1000 means the context is gone and ends it for good.

import { openSocket } from '../api.js';

const MAX_BACKOFF_MS = 15_000;

export class EventsSocket {
  // handlers: onMessage(msg), onOpen(reconnected), onState(state, detail), onGone(reason),
  // checkGone() → Promise<string|null> (asks the REST API whether the context still exists).
  constructor(contextId, handlers) {
    this.contextId = contextId;
    this.handlers = handlers;
    this.ws = null;
    this.attempt = 0;
    this.timer = null;
    this.closed = false;
  }

  get open() { return this.ws !== null && this.ws.readyState === WebSocket.OPEN; }

  connect() {
    if (this.closed) return;
    const reconnecting = this.attempt > 0;
    this.handlers.onState(reconnecting ? 'reconnecting' : 'connecting');
    const ws = openSocket(`/v1/contexts/${encodeURIComponent(this.contextId)}/events`);
    this.ws = ws;
    ws.onopen = () => {
      if (this.ws !== ws) return;
      this.attempt = 0;
      this.handlers.onState('connected');
      this.handlers.onOpen(reconnecting);
    };
    ws.onmessage = ev => {
      if (this.ws !== ws || typeof ev.data !== 'string') return;
      let msg;
      try { msg = JSON.parse(ev.data); } catch { return; }
      this.handlers.onMessage(msg);
    };
    ws.onclose = ev => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (ev.code === 1000 && ev.reason) return this.gone(ev.reason);
      this.retry(ev);
    };
  }

  gone(reason) {
    this.closed = true;
    this.handlers.onState('closed', reason);
    this.handlers.onGone(reason);
  }

  // Before reconnecting, the REST API says whether there is still something to connect to
  // (the handshake's own 404 or 401 is invisible to a page).
  retry(ev) {
    const attempt = ++this.attempt;
    const delay = Math.min(MAX_BACKOFF_MS, 500 * 2 ** (attempt - 1));
    this.handlers.onState('reconnecting', `code ${ev.code}; retrying in ${Math.round(delay / 100) / 10} s`);
    this.timer = setTimeout(async () => {
      if (this.closed) return;
      const reason = await this.handlers.checkGone();
      if (this.closed) return;
      if (reason) return this.gone(reason);
      this.connect();
    }, delay);
  }

  send(message) {
    if (!this.open) return false;
    this.ws.send(JSON.stringify(message));
    return true;
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    const ws = this.ws;
    this.ws = null;
    if (ws) ws.close(1000, 'closed by the page');
  }

  // Tests drop the connection to check that the page reconnects and follows.
  drop() { if (this.ws) this.ws.close(4000, 'dropped for testing'); }
}
