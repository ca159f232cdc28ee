// The playground's side list: the kernels a context can be created with, and the contexts.

import { api } from '../api.js';
import { el } from '../dom.js';
import { formatClock, formatDateTime, shortId } from '../format.js';

// Kernel choices from GET /v1/languages: each kernelspec with what it runs.
export async function loadKernelChoices(select) {
  const info = await api('GET', '/v1/languages');
  const kernels = [...(info.kernels || [])].sort((a, b) => a.name.localeCompare(b.name));
  select.replaceChildren(...kernels.map(k => el('option', {
    value: k.name, selected: k.name === info.default_kernel,
    text: `${k.display_name || k.name} — ${(k.languages || []).join(', ') || k.language}`,
  })));
  if (!kernels.length) select.append(el('option', { value: '', text: 'no kernels installed' }));
  return kernels;
}

const isPaused = c => c.state === 'paused' || c.state === 'resuming';

function contextSummary(c) {
  if (isPaused(c)) {
    const expiry = c.expires_at ? ` · deleted ${formatDateTime(c.expires_at)}` : '';
    return `${c.state} since ${formatClock(c.paused_at)}${expiry}`;
  }
  const activity = c.running ? 'running' : c.state;
  const queue = c.queued ? ` · ${c.queued} queued` : '';
  return `${activity}${queue} · ${c.policy} · since ${formatClock(c.created_at)}`;
}

// An admin sees everyone's contexts: the owner is named when it is someone else.
// A paused context holds no kernel: choosing it resumes it (its own button says so).
function contextItem(c, current, { onSelect, onClose, onResume, me }) {
  const paused = isPaused(c);
  const select = el('button', { type: 'button', class: 'item-main', 'aria-current': c.id === current ? 'true' : undefined,
                                title: paused ? `context ${c.id}, paused: choose it to resume it`
                                  : `context ${c.id}, kernel ${c.kernel_id}`,
                                onclick: () => (paused ? onResume(c.id) : onSelect(c.id)) },
    el('span', { class: 'item-title' }, el('span', { text: c.kernel }), ' ',
       el('code', { class: 'muted', text: shortId(c.id) }),
       c.owner && c.owner !== me ? el('span', { class: 'badge owner', text: c.owner }) : null),
    el('span', { class: 'item-sub', text: contextSummary(c) }));
  const close = el('button', { type: 'button', class: 'icon-button danger', text: '×',
                               title: 'Close this context', 'aria-label': `Close context ${shortId(c.id)}`,
                               onclick: () => onClose(c.id) });
  const resume = paused
    ? el('button', { type: 'button', class: 'icon-button', text: '▶', title: 'Resume this context',
                     'aria-label': `Resume context ${shortId(c.id)}`, disabled: c.state === 'resuming',
                     onclick: () => onResume(c.id) })
    : null;
  return el('li', { class: c.id === current ? 'current' : '', 'data-context-id': c.id, 'data-state': c.state },
            select, resume, close);
}

export function renderContextList(list, contexts, current, handlers) {
  list.replaceChildren(...contexts.map(c => contextItem(c, current, handlers)));
  if (!contexts.length) list.append(el('li', { class: 'empty', text: 'No contexts yet.' }));
}
