// Table bodies filled from data: one row per item, or a single "nothing here" row.

import { el } from '../dom.js';

// columns: [{label, cell(item) → Node|string, class?}]; key(item) → data-key for the row.
export function fillTable(table, columns, items, { empty = 'Nothing here.', key } = {}) {
  const head = el('thead', {}, el('tr', {}, columns.map(c => el('th', { scope: 'col', class: c.class, text: c.label }))));
  const rows = items.map(item => el('tr', key ? key(item) : {},
    columns.map(c => {
      const value = c.cell(item);
      return el('td', { class: c.class, 'data-label': c.label }, value ?? '–');
    })));
  if (!items.length) rows.push(el('tr', { class: 'empty' }, el('td', { colspan: columns.length, text: empty })));
  table.replaceChildren(head, el('tbody', {}, rows));
}
