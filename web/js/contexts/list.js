// The playground's side list: the kernels a context can be created with, and the contexts.

import { api } from '../api.js';
import { el } from '../dom.js';
import { formatClock, shortId } from '../format.js';

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

function contextSummary(c) {
  const activity = c.running ? 'running' : c.state;
  const queue = c.queued ? ` · ${c.queued} queued` : '';
  return `${activity}${queue} · ${c.policy} · since ${formatClock(c.created_at)}`;
}

// An admin sees everyone's contexts: the owner is named when it is someone else.
function contextItem(c, current, { onSelect, onClose, me }) {
  const select = el('button', { type: 'button', class: 'item-main', 'aria-current': c.id === current ? 'true' : undefined,
                                title: `context ${c.id}, kernel ${c.kernel_id}`, onclick: () => onSelect(c.id) },
    el('span', { class: 'item-title' }, el('span', { text: c.kernel }), ' ',
       el('code', { class: 'muted', text: shortId(c.id) }),
       c.owner && c.owner !== me ? el('span', { class: 'badge owner', text: c.owner }) : null),
    el('span', { class: 'item-sub', text: contextSummary(c) }));
  const close = el('button', { type: 'button', class: 'icon-button danger', text: '×',
                               title: 'Close this context', 'aria-label': `Close context ${shortId(c.id)}`,
                               onclick: () => onClose(c.id) });
  return el('li', { class: c.id === current ? 'current' : '', 'data-context-id': c.id, 'data-state': c.state },
            select, close);
}

export function renderContextList(list, contexts, current, handlers) {
  list.replaceChildren(...contexts.map(c => contextItem(c, current, handlers)));
  if (!contexts.length) list.append(el('li', { class: 'empty', text: 'No contexts yet.' }));
}
