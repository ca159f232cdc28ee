// The three views (playground, kernels, admin) as tabs in the header, chosen by the URL's
// hash so that the back button and a reload keep the view. Each view can be told when it is
// shown or hidden (the admin console refreshes only while shown).

import { $ } from '../dom.js';

const hooks = new Map();  // name → {show(), hide()}
let current = null;
let allowed = new Set();

export function registerView(name, { show = () => {}, hide = () => {} } = {}) {
  hooks.set(name, { show, hide });
}

export const currentView = () => current;

function nameFromHash() {
  const name = location.hash.replace(/^#/, '');
  return allowed.has(name) ? name : 'playground';
}

export function showView(name) {
  if (!allowed.has(name)) name = 'playground';
  if (name === current) return;
  if (current) hooks.get(current)?.hide();
  current = name;
  for (const section of document.querySelectorAll('.view'))
    section.hidden = section.dataset.view !== name;
  for (const tab of document.querySelectorAll('#views-nav a')) {
    if (tab.dataset.view === name) tab.setAttribute('aria-current', 'page');
    else tab.removeAttribute('aria-current');
  }
  hooks.get(name)?.show();
}

// After sign-in: which views this user has (admin or not), then the one the URL names.
export function startViews({ admin }) {
  allowed = new Set(admin ? ['playground', 'kernels', 'admin'] : ['playground', 'kernels']);
  $('views-nav').querySelector('[data-view="admin"]').hidden = !admin;
  current = null;
  showView(nameFromHash());
}

export function stopViews() {
  if (current) hooks.get(current)?.hide();
  current = null;
}

export function initViews() {
  window.addEventListener('hashchange', () => { if (allowed.size) showView(nameFromHash()); });
}
