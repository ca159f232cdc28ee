// The admin console's smaller panels: the server, the warm pool, contexts, culled kernels and
// the latest executions from the audit log.

import { el } from '../dom.js';
import { formatBytes, formatClock, formatDuration, msSince, shortId } from '../format.js';
import { fillTable } from '../ui/table.js';

export function renderServer(node, server, kernels) {
  const busy = kernels.filter(k => k.execution_state === 'busy').length;
  const fact = (label, value) => el('div', { class: 'fact' }, el('span', { class: 'fact-label', text: label }),
                                    el('span', { class: 'fact-value', text: value }));
  node.replaceChildren(
    fact('Version', server.version),
    fact('Up for', formatDuration(msSince(server.started_at))),
    fact('Sandbox', server.sandbox ? 'on' : 'off (development)'),
    fact('Kernels', `${kernels.length} (${busy} busy)`));
}

export function renderPool(node, pool) {
  if (!pool.length) {
    node.replaceChildren(el('p', { class: 'muted', text: 'No warm pool configured (--pool-size=0).' }));
    return;
  }
  node.replaceChildren(...pool.map(p => el('div', { class: 'pool-row', 'data-kernelspec': p.kernelspec },
    el('span', { class: 'pool-name', text: p.kernelspec }),
    el('meter', { min: 0, max: Math.max(p.target, 1), value: p.ready, 'aria-label': `${p.kernelspec} pool` }),
    el('span', { class: 'muted', text: `${p.ready} of ${p.target} ready` }))));
}

export function renderContexts(table, contexts) {
  fillTable(table, [
    { label: 'Context', cell: c => el('code', { title: c.id, text: shortId(c.id) }) },
    { label: 'Owner', class: 'owner', cell: c => c.owner },
    { label: 'Kernel', cell: c => el('span', {}, `${c.kernel} `, el('code', { class: 'muted', title: c.kernel_id, text: shortId(c.kernel_id) })) },
    { label: 'Policy', cell: c => (c.one_shot ? `${c.policy}, one-shot` : c.policy) },
    { label: 'State', cell: c => el('span', { class: 'badge', 'data-state': c.running ? 'busy' : c.state,
                                               text: c.running ? 'running' : c.state }) },
    { label: 'Queued', class: 'num', cell: c => c.queued },
    { label: 'Kernel uses', class: 'num', cell: c => c.kernel_uses },
    { label: 'Age', class: 'num', cell: c => formatDuration(msSince(c.created_at)) },
  ], contexts, { empty: 'No contexts.', key: c => ({ 'data-context-id': c.id }) });
}

export function renderCulled(table, culled) {
  fillTable(table, [
    { label: 'When', cell: c => formatClock(c.culled_at) },
    { label: 'Kernel', cell: c => el('span', {}, el('code', { title: c.id, text: shortId(c.id) }), ` ${c.name}`) },
    { label: 'Owner', cell: c => c.owner },
    { label: 'Why', cell: c => c.reason },
  ], culled, { empty: 'No kernel was culled recently.' });
}

export function renderAudit(node, audit) {
  if (!audit.enabled) {
    node.replaceChildren(el('p', { class: 'muted', text: 'No audit log configured (start the server with --audit-log=FILE to record every execution).' }));
    return;
  }
  const table = el('table', { class: 'data-table audit-table' });
  fillTable(table, [
    { label: 'Started', cell: a => formatClock(a.started) },
    { label: 'User', cell: a => a.user },
    { label: 'API', cell: a => a.api },
    { label: 'Kernel', cell: a => el('code', { title: a.kernel_id, text: shortId(a.kernel_id) }) },
    { label: 'Status', cell: a => el('span', { class: 'badge', 'data-state': a.status, text: a.status }) },
    { label: 'Took', class: 'num', cell: a => formatDuration(a.duration_seconds * 1000) },
    { label: 'Output', class: 'num', cell: a => formatBytes(a.output_bytes) },
    { label: 'Code', cell: a => (a.code === undefined
      ? el('span', { class: 'muted', title: a.code_sha256, text: `sha256 ${a.code_sha256.slice(0, 12)}…` })
      : el('code', { class: 'code-snippet', title: a.code, text: a.code.split('\n')[0] })) },
  ], audit.latest || [], { empty: 'No executions recorded yet.' });
  node.replaceChildren(el('div', { class: 'table-scroll' }, table));
}
