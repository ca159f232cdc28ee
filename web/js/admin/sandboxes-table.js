// Every E2B sandbox on the server (the overview's sandboxes): owner, template (and the
// kernelspec it runs when the name is not the kernelspec's), when it started and ends, its
// contexts and running commands; with kill.

import { el } from '../dom.js';
import { formatClock, formatDuration, msSince, shortId } from '../format.js';
import { fillTable } from '../ui/table.js';

function template(s) {
  return el('span', {}, s.template,
    s.kernelspec && s.kernelspec !== s.template ? el('span', { class: 'muted', text: ` (${s.kernelspec})` }) : null);
}

function ends(s) {
  const left = Date.parse(s.end_at) - Date.now();
  return el('span', { title: s.end_at, text: left > 0 ? `in ${formatDuration(left)}` : 'now' });
}

function contexts(s) {
  if (!s.contexts?.length) return null;
  return el('span', {}, ...s.contexts.map(id => el('code', { title: id, 'data-context-id': id, text: `${shortId(id)} ` })));
}

const COLUMNS = kill => [
  { label: 'Sandbox', cell: s => el('code', { title: s.id, text: shortId(s.id) }) },
  { label: 'Owner', class: 'owner', cell: s => s.owner },
  { label: 'Template', class: 'template', cell: template },
  { label: 'Started', cell: s => el('span', { title: s.started_at, text: `${formatClock(s.started_at)} (${formatDuration(msSince(s.started_at))} ago)` }) },
  { label: 'Ends', cell: ends },
  { label: 'Contexts', class: 'contexts', cell: contexts },
  { label: 'Commands', class: 'num commands', cell: s => s.commands },
  { label: 'Actions', cell: s => el('span', { class: 'row-actions' }, el('button', {
    type: 'button', class: 'small danger', text: 'Kill', 'data-action': 'kill',
    'aria-label': `Kill sandbox ${shortId(s.id)}`, onclick: () => kill(s) })) },
];

export function renderSandboxes(table, sandboxes, kill) {
  fillTable(table, COLUMNS(kill), sandboxes, { empty: 'No E2B sandboxes.', key: s => ({ 'data-sandbox-id': s.id }) });
}
