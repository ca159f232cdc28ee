// Every request to the gateway. The token lives here and in sessionStorage only: REST calls
// send it as `Authorization: token T`, uploads and downloads too (XMLHttpRequest, fetch + a
// blob), and WebSockets (which cannot carry headers) offer it as a subprotocol, so it never
// appears in a URL, a link, an <img src>, the address bar or a server log line.

let token = '';
let onAuthLost = () => {};

export class ApiError extends Error {
  constructor(status, message, { method = '', path = '' } = {}) {
    super(message);
    this.status = status;
    this.method = method;
    this.path = path;
  }
}

export function setToken(value) { token = value || ''; }
export const hasToken = () => token !== '';

// Called with a sentence when the server refuses the token: the page goes back to sign-in.
export function onAuthFailure(fn) { onAuthLost = fn; }

function authHeaders(extra = {}) {
  return { Authorization: `token ${token}`, ...extra };
}

function errorMessage(data, fallback) {
  return (data && typeof data === 'object' && (data.message || data.reason)) || fallback;
}

// 401 is always a token the server does not take (wrong, or revoked since sign-in). 403 is
// the same except on admin-only routes, where it only means "not an admin".
function checkAuth(status, adminOnly, message) {
  if (!token) return;  // signed out meanwhile: nothing more to say
  if (status === 401 || (status === 403 && !adminOnly)) {
    onAuthLost(status === 401
      ? 'The server refused the token (401): it is wrong or no longer valid. Sign in again.'
      : `The server refused this token (403): ${message}`);
  }
}

async function failure(res, method, path, adminOnly) {
  const text = await res.text().catch(() => '');
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  const message = errorMessage(data, res.statusText || `HTTP ${res.status}`);
  checkAuth(res.status, adminOnly, message);
  return new ApiError(res.status, message, { method, path });
}

// JSON in, JSON out. Throws ApiError with the server's own sentence on a non-2xx answer.
export async function api(method, path, body, { adminOnly = false } = {}) {
  if (!token) throw new ApiError(0, 'not signed in', { method, path });
  const init = { method, headers: authHeaders(), cache: 'no-store' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, `the server did not answer (${e.message})`, { method, path });
  }
  if (!res.ok) throw await failure(res, method, path, adminOnly);
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

// A file's bytes, fetched with the token in the header (never a ?token= link).
export async function apiBlob(path) {
  let res;
  try {
    res = await fetch(path, { headers: authHeaders(), cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, `the server did not answer (${e.message})`, { method: 'GET', path });
  }
  if (!res.ok) throw await failure(res, 'GET', path, false);
  return res.blob();
}

// An upload with progress: fetch cannot report upload progress, XMLHttpRequest can.
// Resolves with the parsed answer; rejects with ApiError. `onProgress(loaded, total)`.
export function xhrSend(method, path, body, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, path);
    xhr.setRequestHeader('Authorization', `token ${token}`);
    xhr.upload.onprogress = ev => { if (ev.lengthComputable) onProgress?.(ev.loaded, ev.total); };
    xhr.onerror = () => reject(new ApiError(0, 'the upload was cut off', { method, path }));
    xhr.onload = () => {
      let data = null;
      try { data = xhr.responseText ? JSON.parse(xhr.responseText) : null; } catch { data = null; }
      if (xhr.status >= 200 && xhr.status < 300) return resolve(data);
      const message = errorMessage(data, xhr.statusText || `HTTP ${xhr.status}`);
      checkAuth(xhr.status, false, message);
      reject(new ApiError(xhr.status, message, { method, path }));
    };
    xhr.send(body);
  });
}

// A WebSocket to ws(s)://host/path?params. The token travels in Sec-WebSocket-Protocol as
// "callisto.token.<hex of its UTF-8 bytes>", beside "callisto.auth", which the gateway
// selects (a browser fails a handshake whose offer gets no protocol back); the token entry is
// never selected, so it is never echoed (gateway/http/websocket_subprotocols.hpp).
export function openSocket(path, params = {}) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const query = new URLSearchParams(params).toString();
  const url = `${scheme}//${location.host}${path}${query ? `?${query}` : ''}`;
  const hex = Array.from(new TextEncoder().encode(token), b => b.toString(16).padStart(2, '0')).join('');
  return new WebSocket(url, ['callisto.auth', `callisto.token.${hex}`]);
}
