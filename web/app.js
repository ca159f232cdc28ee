// Callisto web UI: plain ES modules, no build step, no framework, nothing from elsewhere.
// This file only wires the modules together: signing in and out, and the three views —
// the playground (/v1 contexts), the raw Jupyter kernels, and the admin console.

import { hideAdmin, initAdmin, showAdmin } from './js/admin/console.js';
import { onAuthFailure, setToken } from './js/api.js';
import { forgetSession, initialToken, rememberToken, showApp, showSignIn, whoami } from './js/auth.js';
import { hidePlayground, initPlayground, playgroundDebug, showPlayground, startPlayground,
         stopPlayground } from './js/contexts/playground.js';
import { $ } from './js/dom.js';
import { initFiles } from './js/files/panel.js';
import { hideKernelsView, initKernelsView, kernelsDebug, showKernelsView, startKernelsView,
         stopKernelsView } from './js/kernels/view.js';
import { initViews, registerView, startViews, stopViews } from './js/ui/views.js';

let signedIn = false;

async function signIn(token) {
  setToken(token);
  let who;
  try {
    who = await whoami();
  } catch (e) {
    // A refused token already brought the sign-in panel back (onAuthFailure).
    if (e.status !== 401 && e.status !== 403) showSignIn(`Cannot reach the server: ${e.message}`);
    return;
  }
  rememberToken(token);
  signedIn = true;
  showApp(who);
  startViews(who);
  await Promise.all([startPlayground(who), startKernelsView()]);
}

function signOut(message) {
  if (signedIn) {
    stopViews();
    stopPlayground();
    stopKernelsView();
  }
  signedIn = false;
  forgetSession();
  showSignIn(message);
}

function main() {
  initPlayground();
  initFiles();
  initKernelsView();
  initAdmin();
  initViews();
  registerView('playground', { show: showPlayground, hide: hidePlayground });
  registerView('kernels', { show: showKernelsView, hide: hideKernelsView });
  registerView('admin', { show: showAdmin, hide: hideAdmin });
  onAuthFailure(message => signOut(message));
  $('signin-form').addEventListener('submit', ev => {
    ev.preventDefault();
    const token = $('signin-token').value.trim();
    if (token) signIn(token);
  });
  $('sign-out').addEventListener('click', () => signOut('Signed out.'));
  const token = initialToken();
  if (token) signIn(token); else showSignIn();
}

// Hooks for the headless browser tests (and for poking at the page from the console).
window.callistoDebug = {
  get kernelId() { return kernelsDebug.kernelId; },
  get sessionId() { return kernelsDebug.sessionId; },
  sendRaw: text => kernelsDebug.sendRaw(text),
  dropConnection: () => kernelsDebug.dropConnection(),
  get contextId() { return playgroundDebug.contextId; },
  dropEvents: () => playgroundDebug.dropConnection(),
};

main();
