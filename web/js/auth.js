// Signing in and out. The token is kept in this tab's sessionStorage (gone when the tab
// closes, never shared with other tabs or sent anywhere but the Authorization header).

import { api, ApiError, setToken } from './api.js';
import { $ } from './dom.js';

const TOKEN_KEY = 'callisto.token';
const SESSION_PREFIX = 'callisto.';

// The server's start-up line prints URL?token=T: take it once, then strip it from the
// address bar (and so from history and bookmarks) before anything else runs.
export function initialToken() {
  const url = new URL(location.href);
  const fromUrl = url.searchParams.get('token');
  if (fromUrl !== null) {
    if (fromUrl) sessionStorage.setItem(TOKEN_KEY, fromUrl);
    url.searchParams.delete('token');
    history.replaceState(history.state, '', url.pathname + url.search + url.hash);
  }
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function rememberToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
  setToken(value);
}

// Forgets the token and everything this tab remembered for it (selected context and kernel,
// cached cell code): the next person to sign in here starts clean.
export function forgetSession() {
  setToken('');
  for (const key of Object.keys(sessionStorage))
    if (key.startsWith(SESSION_PREFIX)) sessionStorage.removeItem(key);
}

// {user, admin}. A gateway without /v1/whoami (older than the admin console) still works,
// without the admin view.
export async function whoami() {
  try {
    const who = await api('GET', '/v1/whoami');
    return { user: who.user || 'unknown', admin: who.admin === true };
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return { user: 'token holder', admin: false };
    throw e;
  }
}

export function showSignIn(message = '') {
  $('app').hidden = true;
  $('identity').hidden = true;
  $('signin-panel').hidden = false;
  const error = $('signin-error');
  error.hidden = !message;
  error.textContent = message;
  $('signin-token').value = '';
  $('signin-token').focus();
}

export function showApp(who) {
  $('signin-panel').hidden = true;
  $('app').hidden = false;
  $('identity').hidden = false;
  $('identity-name').textContent = who.user;
  $('identity-role').textContent = who.admin ? 'admin' : 'user';
  $('identity-role').dataset.role = who.admin ? 'admin' : 'user';
}
