// The token and the REST calls.

import { $, state, TOKEN_KEY } from './state.js';

export function takeToken() {
  const url = new URL(location.href);
  const fromUrl = url.searchParams.get('token');
  if (fromUrl !== null) {
    if (fromUrl) sessionStorage.setItem(TOKEN_KEY, fromUrl);
    url.searchParams.delete('token');
    history.replaceState(history.state, '', url.pathname + url.search + url.hash);
  }
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export async function api(method, path, body) {
  const init = { method, headers: { Authorization: `token ${state.token}` }, cache: 'no-store' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let data = null;
  if (text) { try { data = JSON.parse(text); } catch { data = text; } }
  if (!res.ok) {
    const why = (data && typeof data === 'object' && (data.message || data.reason)) || res.statusText;
    const err = new Error(`${method} ${path}: ${res.status} ${why}`);
    err.status = res.status;
    throw err;
  }
  return data;
}

export function showTokenPanel(message) {
  $('app').hidden = true;
  $('token-panel').hidden = false;
  $('token-error').hidden = !message;
  $('token-error').textContent = message || '';
  $('token-input').focus();
}
