// The admin console: every kernel and context on the server (a kernel with its network
// allowance and egress activity), the E2B sandboxes, the warm pool, culled kernels, activity
// over the last hour and the latest audited executions. Refreshes every few seconds while it is on screen and
// the tab is visible.

import { api, ApiError } from '../api.js';
import { $, mapLimited } from '../dom.js';
import { formatClock, shortId } from '../format.js';
import { noticeNode } from '../ui/notice.js';
import { activityCharts } from './chart.js';
import { renderKernels } from './kernels-table.js';
import { renderAudit, renderContexts, renderCulled, renderPool, renderServer } from './panels.js';
import { renderSandboxes } from './sandboxes-table.js';

const REFRESH_MS = 3000;
const PSS_REFRESH_LIMIT = 24;  // kernels whose memory is re-read per refresh

let timer = null;
let loading = null;

// The list answers the last PSS read; GET /api/kernels/{id} reads it again (at most every
// 5 s on the server), so each refresh asks for the kernels' own models.
async function withMemory(kernels) {
  const fresh = await mapLimited(kernels.slice(0, PSS_REFRESH_LIMIT), 4, k =>
    api('GET', `/api/kernels/${encodeURIComponent(k.id)}`).catch(() => null));
  const byId = new Map(fresh.filter(Boolean).map(k => [k.id, k]));
  return kernels.map(k => byId.get(k.id) || k);
}

async function load() {
  const [overview, kernels, contexts] = await Promise.all([
    api('GET', '/v1/admin/overview', undefined, { adminOnly: true }),
    api('GET', '/api/kernels'),
    api('GET', '/v1/contexts'),
  ]);
  return { overview, kernels: await withMemory(kernels), contexts };
}

function render({ overview, kernels, contexts }) {
  renderServer($('adm-server'), overview.server, kernels);
  $('adm-charts').replaceChildren(...activityCharts(overview.history));
  renderPool($('adm-pool'), overview.pool || []);
  renderKernels($('adm-kernels'), kernels, act, overview.network?.kernels || []);
  renderContexts($('adm-contexts'), contexts);
  renderSandboxes($('adm-sandboxes'), overview.sandboxes || [], killSandbox);
  renderCulled($('adm-culled'), overview.culled || []);
  renderAudit($('adm-audit'), overview.audit || { enabled: false });
  $('adm-updated').textContent = `updated ${formatClock()}`;
  $('adm-error').replaceChildren();
}

function showError(e) {
  const text = e instanceof ApiError && e.status === 403
    ? 'Only admins can see the console.' : 'Could not refresh the console.';
  $('adm-error').replaceChildren(noticeNode(text, 'error', e.message));
}

// One refresh at a time: a slow server is not asked again before it answered.
export function refreshAdmin() {
  if (!loading) {
    loading = load().then(render, showError).finally(() => { loading = null; });
  }
  return loading;
}

const ACTIONS = {
  interrupt: { confirm: null, run: id => api('POST', `/api/kernels/${id}/interrupt`), done: 'Interrupt sent to' },
  restart: { confirm: 'Restart kernel %s? Its variables are lost.', run: id => api('POST', `/api/kernels/${id}/restart`), done: 'Restarted' },
  kill: { confirm: 'Kill kernel %s? Whoever uses it loses it.', run: id => api('DELETE', `/api/kernels/${id}`), done: 'Killed' },
};

async function act(what, kernel) {
  const action = ACTIONS[what];
  const label = `${shortId(kernel.id)} (${kernel.name}, ${kernel.callisto?.owner || 'unknown owner'})`;
  if (action.confirm && !confirm(action.confirm.replace('%s', label))) return;
  try {
    await action.run(encodeURIComponent(kernel.id));
    $('adm-message').replaceChildren(noticeNode(`${action.done} kernel ${label}.`));
  } catch (e) {
    $('adm-message').replaceChildren(noticeNode(`Could not ${what} kernel ${label}.`, 'error', e.message));
  }
  refreshAdmin();
}

// E2B's own kill (DELETE /sandboxes/{id}): an admin may kill anyone's; its contexts go with it.
async function killSandbox(sandbox) {
  const label = `${shortId(sandbox.id)} (${sandbox.template}, ${sandbox.owner})`;
  if (!confirm(`Kill sandbox ${label}? Its contexts and commands end.`)) return;
  try {
    await api('DELETE', `/sandboxes/${encodeURIComponent(sandbox.id)}`);
    $('adm-message').replaceChildren(noticeNode(`Killed sandbox ${label}.`));
  } catch (e) {
    $('adm-message').replaceChildren(noticeNode(`Could not kill sandbox ${label}.`, 'error', e.message));
  }
  refreshAdmin();
}

function schedule() {
  clearInterval(timer);
  timer = null;
  if (!$('adm-auto').checked) return;
  timer = setInterval(() => { if (!document.hidden) refreshAdmin(); }, REFRESH_MS);
}

export function initAdmin() {
  $('adm-refresh').addEventListener('click', refreshAdmin);
  $('adm-auto').addEventListener('change', schedule);
  // Back in a visible tab: refresh at once rather than on the next tick.
  document.addEventListener('visibilitychange', () => { if (timer && !document.hidden) refreshAdmin(); });
}

export function showAdmin() {
  refreshAdmin();
  schedule();
}

export function hideAdmin() {
  clearInterval(timer);
  timer = null;
}
