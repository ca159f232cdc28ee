// application/json outputs as a folded tree (<details>/<summary>): the top level open,
// deeper objects and arrays closed with a one-line preview, so a large document stays short.

import { el } from '../dom.js';
import { copyButton } from './copy.js';

const MAX_CHILDREN = 500;  // per level; the rest is counted, not drawn

function scalar(value) {
  const type = value === null ? 'null' : typeof value;
  return el('span', { class: `json-${type}`, text: JSON.stringify(value) });
}

function preview(value) {
  if (Array.isArray(value)) return `[${value.length} item${value.length === 1 ? '' : 's'}]`;
  const keys = Object.keys(value);
  const shown = keys.slice(0, 4).join(', ');
  return `{${shown}${keys.length > 4 ? `, … ${keys.length - 4} more` : ''}}`;
}

function node(key, value, depth) {
  const label = key === null ? null : el('span', { class: 'json-key', text: `${key}: ` });
  if (value === null || typeof value !== 'object') return el('div', { class: 'json-row' }, label, scalar(value));
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const children = entries.slice(0, MAX_CHILDREN).map(([k, v]) => node(k, v, depth + 1));
  if (entries.length > MAX_CHILDREN)
    children.push(el('div', { class: 'json-row muted', text: `… ${entries.length - MAX_CHILDREN} more` }));
  return el('details', { class: 'json-node', open: depth === 0 },
            el('summary', {}, label, el('span', { class: 'json-preview', text: preview(value) })),
            el('div', { class: 'json-children' }, children));
}

export function renderJson(value) {
  let data = value;
  if (typeof value === 'string') { try { data = JSON.parse(value); } catch { data = value; } }
  return el('div', { class: 'out-json' }, node(null, data, 0),
            copyButton(() => JSON.stringify(data, null, 2), 'JSON'));
}
