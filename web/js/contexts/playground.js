// The playground: contexts on the /v1 API. Create one (kernel and policy, or from a
// snapshot), switch between them, run cells as executions with their own events, interrupt,
// restart, snapshot, fork, pause and resume, close.

import { api } from '../api.js';
import { $, el } from '../dom.js';
import { formatBytes, formatDuration, shortId } from '../format.js';
import { refreshFiles, showFilesFor } from '../files/panel.js';
import { bindEditor, takeCode } from '../ui/editor.js';
import { noticeNode } from '../ui/notice.js';
import { setConnectionPill, setPill } from '../ui/pill.js';
import * as codeCache from './code-cache.js';
import { loadKernelChoices, renderContextList } from './list.js';
import { ContextSession } from './session.js';

const SELECTED_KEY = 'callisto.context';
const POLL_MS = 5000;

const sessions = new Map();  // context id → ContextSession
let contexts = [];           // the last GET /v1/contexts
let current = null;          // the selected ContextSession
let pollTimer = null;
let shown = false;
let me = '';                 // the signed-in user's name

const currentModel = () => (current ? contexts.find(c => c.id === current.id) || current.model : null);

// ---- the context list --------------------------------------------------------------------

function renderList() {
  renderContextList($('pg-contexts'), contexts, current?.id,
                    { onSelect: select, onClose: closeContext, onResume: resumeContext, me });
}

export async function refreshContexts() {
  try {
    contexts = (await api('GET', '/v1/contexts')).filter(c => !c.one_shot)
      .sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at));
  } catch {
    return;  // a transient failure: the next poll tries again (a refused token signs out)
  }
  renderList();
  if (current && !contexts.some(c => c.id === current.id)) forgetSession(current.id, 'This context no longer exists.');
  updateBar();
}

function forgetSession(id, why, kind = 'warn') {
  const session = sessions.get(id);
  if (!session) return;
  sessions.delete(id);
  session.dispose();
  codeCache.forget(id);
  if (current?.id === id) {
    current = null;
    sessionStorage.removeItem(SELECTED_KEY);
    showFilesFor(null);
    if (why) $('pg-logs').append(noticeNode(why, kind));
  }
  updateBar();
}

export function select(id) {
  if (current?.id === id) return;
  current?.hide();
  const model = contexts.find(c => c.id === id);
  if (!model) return;
  if (model.state === 'paused' || model.state === 'resuming') return resumeContext(id);
  let session = sessions.get(id);
  if (!session) {
    session = new ContextSession(model, $('pg-logs'), {
      onEnd: () => afterExecution(id),
      onConnection: (state, detail) => { if (current?.id === id) { setConnectionPill($('pg-conn'), state, detail); updateBar(); } },
      onGone: reason => {
        // Paused (here, by another client, or by --pause-idle): its state is kept.
        if (/paused/.test(reason)) forgetSession(id, `Context ${shortId(id)} was paused: resume it from the list.`, 'info');
        else forgetSession(id, `Context ${shortId(id)} closed: ${reason}`);
        refreshContexts();
      },
    });
    sessions.set(id, session);
  }
  current = session;
  sessionStorage.setItem(SELECTED_KEY, id);
  $('pg-empty').hidden = true;
  session.show();
  showFilesFor(id);
  renderList();
  fillLanguages(model);
  updateBar();
  $('pg-code').focus();
}

// A file the code wrote shows up without a manual refresh.
function afterExecution(id) {
  if (current?.id === id) refreshFiles();
  refreshContexts();
}

async function createContext(ev) {
  ev.preventDefault();
  const button = $('pg-create-button');
  const body = { kernel: $('pg-kernel').value || null };
  if ($('pg-policy').value) body.policy = $('pg-policy').value;
  const fromSnapshot = $('pg-snapshot').value;
  if (fromSnapshot) body.from_snapshot = fromSnapshot;
  button.disabled = true;
  button.textContent = 'Starting…';
  try {
    const model = await api('POST', '/v1/contexts', body);
    contexts.push(model);
    select(model.id);
    if (model.restored) {
      current?.notice(`Restored from snapshot ${shortId(model.restored.snapshot_id)} in ` +
                      `${formatDuration(model.restored.duration_ms)}${notCarried(model.restored)}`);
    }
    $('pg-snapshot').value = '';
    refreshContexts();
  } catch (e) {
    $('pg-logs').append(noticeNode('Could not create a context.', 'error', e.message));
  } finally {
    button.disabled = false;
    button.textContent = 'Create context';
  }
}

async function closeContext(id) {
  if (!confirm(`Close context ${shortId(id)}? Its kernel stops and its files are deleted.`)) return;
  try {
    await api('DELETE', `/v1/contexts/${encodeURIComponent(id)}`);
  } catch (e) {
    if (e.status !== 404 && e.status !== 410) {
      (current?.log || $('pg-logs')).append(noticeNode('Could not close the context.', 'error', e.message));
      return;
    }
  }
  forgetSession(id);
  $('pg-empty').hidden = sessions.size > 0 && current !== null;
  refreshContexts();
}

// ---- snapshots, forks, pause and resume ---------------------------------------------------

// What a snapshot could not carry (a generator, a socket), named: it is gone in the copy.
function notCarried(report) {
  const lost = (report?.not_carried || []).map(n => (n.name ? `${n.name} (${n.type})` : String(n)));
  return lost.length ? `; not carried: ${lost.join(', ')}` : '.';
}

// The user's snapshots, to restore one into a new context; the field is hidden when the
// server keeps none (404) or there are none yet.
export async function loadSnapshots() {
  let list = [];
  try {
    list = await api('GET', '/v1/snapshots');
  } catch {
    list = [];
  }
  const choice = $('pg-snapshot');
  const chosen = choice.value;
  choice.replaceChildren(el('option', { value: '', text: 'none: a new, empty context' }),
    ...list.map(s => el('option', { value: s.id, selected: s.id === chosen,
                                    text: `${shortId(s.id)} · ${formatBytes(s.size)} · of ${shortId(s.context_id)}` })));
  $('pg-snapshot-field').hidden = list.length === 0;
}

async function snapshotContext() {
  if (!current) return;
  const session = current;
  try {
    const s = await api('POST', `${session.path}/snapshots`);
    session.notice(`Snapshot ${shortId(s.id)} saved (${formatBytes(s.size)})${notCarried(s)} ` +
                   'Restore it from "New context".');
  } catch (e) {
    session.notice('No snapshot was taken.', 'error', e.message);
  }
  loadSnapshots();
}

async function forkContext() {
  if (!current) return;
  const session = current;
  const answer = prompt('How many copies of this context? (1 to 16)', '1');
  if (answer === null) return;
  try {
    const made = await api('POST', `${session.path}/fork`, { count: Number(answer) });
    const ids = made.contexts.map(c => shortId(c.id)).join(', ');
    session.notice(`Forked into ${made.contexts.length} new context${made.contexts.length === 1 ? '' : 's'}: ${ids}` +
                   `${notCarried(made.snapshot)}`);
  } catch (e) {
    session.notice('The context was not forked.', 'error', e.message);
  }
  refreshContexts();
}

async function pauseContext() {
  if (!current) return;
  const session = current;
  const id = session.id;
  try {
    const model = await api('POST', `${session.path}/pause`);
    const p = model.paused || {};
    forgetSession(id);
    $('pg-logs').append(noticeNode(
      `Context ${shortId(id)} paused: ${formatBytes(p.size)} of state saved and its kernel stopped` +
      `${notCarried(p)} Resume it from the list.`, 'info'));
  } catch (e) {
    session.notice('The context was not paused.', 'error', e.message);
  }
  refreshContexts();
}

export async function resumeContext(id) {
  const model = contexts.find(c => c.id === id);
  if (model) model.state = 'resuming';
  renderList();
  try {
    const live = await api('POST', `/v1/contexts/${encodeURIComponent(id)}/resume`);
    const i = contexts.findIndex(c => c.id === id);
    if (i >= 0) contexts[i] = live; else contexts.push(live);
    select(id);
    if (live.resumed) current?.notice(`Resumed in ${formatDuration(live.resumed.duration_ms)}: its variables and files are back.`);
  } catch (e) {
    $('pg-logs').append(noticeNode(`Context ${shortId(id)} was not resumed.`, 'error', e.message));
  }
  refreshContexts();
}

// ---- the selected context ----------------------------------------------------------------

function fillLanguages(model) {
  const langs = model.languages || [];
  $('pg-language').replaceChildren(...langs.map((l, i) => el('option', { value: i === 0 ? '' : l, text: l })));
  $('pg-language-field').hidden = langs.length < 2;
}

function updateBar() {
  const model = currentModel();
  const usable = Boolean(current?.connected);
  $('pg-title').textContent = model ? `${model.kernel} · ${shortId(model.id)}` : 'No context selected';
  $('pg-title').title = model ? `context ${model.id}\nkernel ${model.kernel_id}` : '';
  $('pg-details').textContent = model
    ? `${model.policy} policy · kernel used ${model.kernel_uses} time${model.kernel_uses === 1 ? '' : 's'}` : '';
  if (model) setPill($('pg-state'), model.running ? 'busy' : model.state, model.running ? 'running' : model.state, 'kernel state');
  else setPill($('pg-state'), 'none', 'no context');
  if (!current) {
    setConnectionPill($('pg-conn'), 'none');
    $('pg-language-field').hidden = true;
  }
  $('pg-run').disabled = !usable;
  $('pg-code').disabled = !current;
  $('pg-interrupt').disabled = !current;
  $('pg-restart').disabled = !current;
  for (const button of ['pg-snapshot-button', 'pg-fork', 'pg-pause']) $(button).disabled = !usable;
  $('pg-close').disabled = !current;
  $('pg-empty').hidden = current !== null;
}

function run({ keep }) {
  if (!current) return;
  const editor = $('pg-code');
  if (!current.connected) {
    current.notice('Not connected to the context yet; the code was not run.', 'warn');
    return;
  }
  const code = takeCode(editor, keep);
  if (!code) return;
  const timeout = Number($('pg-timeout').value) || null;
  current.run({ code, timeout, language: $('pg-language').value || null });
}

function interrupt() {
  if (current && !current.interrupt()) current.notice('Nothing is running.');
}

async function restart() {
  if (!current) return;
  if (!confirm('Restart the kernel? Its variables are lost; the files stay.')) return;
  const session = current;
  setPill($('pg-state'), 'restarting', 'restarting');
  try {
    const model = await api('POST', `${session.path}/restart`);
    session.notice(`Kernel restarted (state_preserved: false): variables are gone, the files stay.`, 'warn');
    Object.assign(session.model, model);
  } catch (e) {
    session.notice('The restart failed.', 'error', e.message);
  }
  refreshContexts();
}

// ---- life cycle --------------------------------------------------------------------------

export function initPlayground() {
  $('pg-create').addEventListener('submit', createContext);
  $('pg-refresh').addEventListener('click', refreshContexts);
  $('pg-editor').addEventListener('submit', ev => { ev.preventDefault(); run({ keep: false }); });
  bindEditor($('pg-code'), { run, interrupt });
  $('pg-interrupt').addEventListener('click', interrupt);
  $('pg-restart').addEventListener('click', restart);
  $('pg-snapshot-button').addEventListener('click', snapshotContext);
  $('pg-fork').addEventListener('click', forkContext);
  $('pg-pause').addEventListener('click', pauseContext);
  $('pg-close').addEventListener('click', () => current && closeContext(current.id));
}

export async function startPlayground(who) {
  me = who.user;
  try {
    await loadKernelChoices($('pg-kernel'));
  } catch (e) {
    $('pg-logs').append(noticeNode('Could not list the kernels.', 'error', e.message));
  }
  await refreshContexts();
  loadSnapshots();
  // A remembered context that is paused now stays paused until chosen (no resume on load).
  const remembered = sessionStorage.getItem(SELECTED_KEY);
  if (remembered && contexts.some(c => c.id === remembered && c.state !== 'paused')) select(remembered);
  updateBar();
}

export function stopPlayground() {
  for (const id of [...sessions.keys()]) forgetSession(id);
  contexts = [];
  $('pg-contexts').replaceChildren();
  hidePlayground();
}

// The list is polled only while the playground is on screen.
export function showPlayground() {
  shown = true;
  clearInterval(pollTimer);
  pollTimer = setInterval(() => { if (!document.hidden) refreshContexts(); }, POLL_MS);
  if (sessions.size) refreshContexts();
}

export function hidePlayground() {
  shown = false;
  clearInterval(pollTimer);
  pollTimer = null;
}

// Test hooks (also handy from the console).
export const playgroundDebug = {
  get contextId() { return current?.id ?? null; },
  dropConnection() { current?.socket?.drop(); },
  get shown() { return shown; },
};
