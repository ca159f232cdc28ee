// Every kernel on the server, as an admin sees it: owner, what holds it, state, idle time,
// age, executions, connections, memory (PSS), network (its egress rules and what its proxy
// carried, from the overview's network.kernels; "none" for a kernel not listed there); with
// interrupt, restart and kill.

import { el } from '../dom.js';
import { formatBytes, formatDuration, HELD_BY, msSince, shortId } from '../format.js';
import { fillTable } from '../ui/table.js';

function idle(k) {
  if (k.execution_state === 'busy') return el('span', { class: 'badge', 'data-state': 'busy', text: 'busy' });
  return formatDuration(msSince(k.last_activity));
}

function heldBy(k) {
  const c = k.callisto || {};
  if (!c.held_by) return '–';
  return el('span', {},
    el('span', { class: 'badge held', 'data-held': c.held_by, text: HELD_BY[c.held_by] || c.held_by }),
    c.context_id ? el('code', { class: 'muted', title: c.context_id, text: ` ${shortId(c.context_id)}` }) : null);
}

// The kernel's network allowance and egress activity, or "none".
function network(entry) {
  if (!entry) return el('span', { class: 'muted', 'data-network': 'none', text: 'none' });
  const c = entry.connections || {};
  const b = entry.bytes || {};
  const counts = `${c.allowed ?? 0} allowed · ${c.refused ?? 0} refused` +
    (c.open ? ` · ${c.open} open` : '') + ` · ↑${formatBytes(b.up ?? 0)} ↓${formatBytes(b.down ?? 0)}`;
  return el('span', { 'data-network': 'allow' },
    el('span', { class: 'network-rules' }, ...entry.allow.map(rule => el('code', { text: rule }))),
    el('span', { class: 'muted network-activity', title: 'connections ended by decision; bytes up (to destinations) and down',
                 text: counts }));
}

function actionButtons(k, act) {
  const button = (what, label, cls = '') => el('button', {
    type: 'button', class: `small ${cls}`, text: label, 'data-action': what,
    'aria-label': `${label} kernel ${shortId(k.id)}`, onclick: () => act(what, k) });
  return el('span', { class: 'row-actions' },
            button('interrupt', 'Interrupt'), button('restart', 'Restart'), button('kill', 'Kill', 'danger'));
}

const COLUMNS = (act, networks) => [
  { label: 'Kernel', cell: k => el('span', {}, el('code', { title: k.id, text: shortId(k.id) }), ` ${k.name}`) },
  { label: 'Owner', class: 'owner', cell: k => k.callisto?.owner },
  { label: 'Held by', cell: heldBy },
  { label: 'State', cell: k => el('span', { class: 'badge', 'data-state': k.execution_state, title: k.reason || '',
                                            text: k.execution_state }) },
  { label: 'Idle', class: 'num', cell: idle },
  { label: 'Age', class: 'num', cell: k => formatDuration(msSince(k.callisto?.started)) },
  { label: 'Runs', class: 'num', cell: k => k.callisto?.executions },
  { label: 'Conns', class: 'num', cell: k => k.connections },
  { label: 'Memory', class: 'num memory', cell: k => formatBytes(k.callisto?.pss_bytes ?? NaN) },
  { label: 'Network', class: 'network', cell: k => network(networks.get(k.id)) },
  { label: 'Actions', cell: k => actionButtons(k, act) },
];

// network: the overview's network.kernels (each networked kernel's rules and counts).
export function renderKernels(table, kernels, act, network = []) {
  const sorted = [...kernels].sort((a, b) =>
    String(a.callisto?.owner).localeCompare(String(b.callisto?.owner)) || a.id.localeCompare(b.id));
  const networks = new Map(network.map(n => [n.kernel_id, n]));
  fillTable(table, COLUMNS(act, networks), sorted, { empty: 'No kernels running.', key: k => ({ 'data-kernel-id': k.id }) });
}
