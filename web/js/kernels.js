// Kernelspecs and kernels: listing, starting, attaching, detaching.

import { finishCell } from './cells.js';
import { el, shortId } from './dom.js';
import { api, showTokenPanel } from './rest.js';
import { $, KERNEL_KEY, state } from './state.js';
import { notice, setConn, setKernelState } from './status.js';
import { connect } from './websocket.js';

export async function loadSpecs() {
  const data = await api('GET', '/api/kernelspecs');
  state.specs = data.kernelspecs || {};
  const select = $('spec-select');
  select.replaceChildren();
  const names = Object.keys(state.specs).sort();
  for (const name of names) {
    const display = state.specs[name]?.spec?.display_name || name;
    select.append(el('option', { value: name, text: display, selected: name === data.default }));
  }
  $('start-kernel').disabled = names.length === 0;
  if (names.length === 0) select.append(el('option', { value: '', text: 'no kernelspecs found' }));
}

export async function refreshKernels() {
  let kernels;
  try {
    kernels = await api('GET', '/api/kernels');
  } catch (e) {
    if (e.status === 401 || e.status === 403) return showTokenPanel('The server refused the token.');
    return; // transient: the next poll tries again
  }
  const list = $('kernel-list');
  list.replaceChildren();
  if (!kernels.length) list.append(el('li', { class: 'empty', text: 'none running' }));
  for (const k of kernels) {
    const current = k.id === state.kernelId;
    const conns = typeof k.connections === 'number' ? ` · ${k.connections} conn` : '';
    list.append(el('li', { class: current ? 'current' : '', 'data-kernel-id': k.id, title: k.id },
      el('div', { class: 'kmain' },
         el('div', {}, el('span', { class: 'kid', text: shortId(k.id) }), ` ${k.name}`),
         el('div', { class: 'kstate' }, el('span', { text: k.execution_state }), conns)),
      current ? el('span', { class: 'muted', text: 'attached' })
              : el('button', { type: 'button', class: 'small attach', text: 'Attach',
                               onclick: () => attach(k.id, k) })));
  }
  return kernels;
}

export async function startKernel() {
  const name = $('spec-select').value;
  const button = $('start-kernel');
  button.disabled = true;
  button.textContent = 'Starting…';
  setKernelState('starting');
  try {
    const model = await api('POST', '/api/kernels', name ? { name } : {});
    notice(`Started kernel ${shortId(model.id)} (${model.name}).`);
    await attach(model.id, model);
  } catch (e) {
    setKernelState(state.kernelId ? state.kernelState : 'none');
    notice('Could not start a kernel.', 'error', e.message);
  } finally {
    button.disabled = false;
    button.textContent = 'Start';
    refreshKernels();
  }
}

export async function attach(id, model) {
  detach();
  state.kernelId = id;
  state.kernelName = model?.name || '';
  sessionStorage.setItem(KERNEL_KEY, id);
  $('kernel-label').textContent = `${state.kernelName || 'kernel'} · ${shortId(id)}`;
  $('kernel-label').title = id;
  $('kernel-info').textContent = '';
  setKernelState(model?.execution_state || 'unknown');
  connect();
  refreshKernels();
  $('code').focus();
}

export function detach() {
  clearTimeout(state.reconnectTimer);
  state.reconnectTimer = null;
  state.reconnectAttempt = 0;
  const ws = state.ws;
  state.ws = null;
  if (ws) ws.close(1000, 'detached');
  state.kernelId = null;
  state.kernelName = '';
  sessionStorage.removeItem(KERNEL_KEY);
  for (const cell of state.cells.values()) if (cell.el.dataset.state === 'running') finishCell(cell, 'aborted');
  $('kernel-label').textContent = 'no kernel';
  $('kernel-label').removeAttribute('title');
  $('kernel-info').textContent = '';
  setConn('none');
  setKernelState('none');
}
