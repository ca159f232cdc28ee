// The files panel of the selected context: its workdir as a list (sizes, download, delete),
// and uploads by drag and drop or the file picker, one request per file with a progress bar.

import { api } from '../api.js';
import { $, el } from '../dom.js';
import { formatBytes } from '../format.js';
import { downloadButton } from './card.js';
import { filePath, uploadFile } from './transfer.js';

let contextId = null;
let refreshing = null;

export function showFilesFor(id) {
  contextId = id;
  $('files-pane').dataset.context = id || '';
  $('files-input').disabled = !id;
  $('files-drop').classList.toggle('disabled', !id);
  $('files-list').replaceChildren();
  $('files-uploads').replaceChildren();
  setStatus(id ? 'Loading…' : 'Select a context to see its files.');
  if (id) refreshFiles();
}

function setStatus(text) { $('files-status').textContent = text; }

// Concurrent calls (an execution ends while a refresh runs) share one request.
export function refreshFiles() {
  if (!contextId) return Promise.resolve();
  if (!refreshing) refreshing = loadListing(contextId).finally(() => { refreshing = null; });
  return refreshing;
}

async function loadListing(id) {
  let listing;
  try {
    listing = await api('GET', `/v1/contexts/${encodeURIComponent(id)}/files`);
  } catch (e) {
    if (id === contextId) setStatus(`Could not list the files: ${e.message}`);
    return;
  }
  if (id !== contextId) return;
  const files = listing.files || [];
  $('files-list').replaceChildren(...files.map(f => fileRow(id, f)));
  const total = files.reduce((n, f) => n + (f.size || 0), 0);
  const count = files.filter(f => f.type === 'file').length;
  setStatus(files.length
    ? `${count} file${count === 1 ? '' : 's'}, ${formatBytes(total)}${listing.truncated ? ' (listing cut at 10000 entries)' : ''}`
    : 'No files yet. Files the code writes appear here.');
}

function fileRow(id, f) {
  const depth = f.path.split('/').length - 1;
  const name = f.path.split('/').pop();
  const row = el('li', { class: `file-row file-${f.type}`, 'data-path': f.path, title: f.path },
    el('span', { class: 'file-name', text: f.type === 'directory' ? `${name}/` : name }),
    el('span', { class: 'file-size muted', text: f.type === 'file' ? formatBytes(f.size) : '' }));
  row.style.setProperty('--depth', depth);
  const actions = el('span', { class: 'file-actions' });
  if (f.type === 'file') actions.append(downloadButton(id, f.path, { compact: true }));
  actions.append(el('button', { type: 'button', class: 'small icon danger', text: '✕', title: `Delete ${f.path}`,
                                'aria-label': `Delete ${f.path}`, onclick: () => deleteFile(id, f.path) }));
  row.append(actions);
  return row;
}

async function deleteFile(id, path) {
  if (!confirm(`Delete ${path}?`)) return;
  try {
    await api('DELETE', filePath(id, path));
  } catch (e) {
    setStatus(`Could not delete ${path}: ${e.message}`);
    return;
  }
  refreshFiles();
}

// ---- uploads ---------------------------------------------------------------------------

function progressRow(file) {
  const bar = el('progress', { max: file.size || 1, value: 0, 'aria-label': `Uploading ${file.name}` });
  const label = el('span', { class: 'upload-state muted', text: 'waiting' });
  const row = el('li', { class: 'upload', 'data-name': file.name },
                 el('span', { class: 'file-name', text: file.name }), label, bar);
  return { row, bar, label };
}

// Files go one after another: each gets the whole connection, and a refused one (too large,
// quota) does not stop the rest.
async function uploadAll(files) {
  const id = contextId;
  if (!id || !files.length) return;
  const rows = files.map(f => [f, progressRow(f)]);
  $('files-uploads').append(...rows.map(([, p]) => p.row));
  for (const [file, p] of rows) {
    p.label.textContent = 'uploading';
    try {
      await uploadFile(id, file, (loaded, total) => {
        p.bar.max = total;
        p.bar.value = loaded;
        p.label.textContent = `${Math.floor((loaded / total) * 100)} %`;
      });
      p.row.remove();
    } catch (e) {
      p.row.classList.add('failed');
      p.label.textContent = `failed: ${e.message}`;
      p.row.append(el('button', { type: 'button', class: 'small', text: 'Dismiss', onclick: () => p.row.remove() }));
    }
    if (id === contextId) await refreshFiles();
  }
}

function bindDropZone(zone) {
  const stop = ev => { ev.preventDefault(); ev.stopPropagation(); };
  for (const type of ['dragenter', 'dragover']) {
    zone.addEventListener(type, ev => { stop(ev); if (contextId) zone.classList.add('over'); });
  }
  zone.addEventListener('dragleave', ev => { stop(ev); zone.classList.remove('over'); });
  zone.addEventListener('drop', ev => {
    stop(ev);
    zone.classList.remove('over');
    uploadAll([...(ev.dataTransfer?.files || [])]);
  });
}

export function initFiles() {
  $('files-refresh').addEventListener('click', refreshFiles);
  $('files-input').addEventListener('change', ev => {
    const files = [...ev.target.files];
    ev.target.value = '';
    uploadAll(files);
  });
  bindDropZone($('files-drop'));
  showFilesFor(null);
}
