// Long output folds: past FOLD_LINES lines (or FOLD_CHARS characters) a block shows its
// first screenful and a button to unfold it (and fold it again). The state is the user's:
// updating the text of a growing stream keeps it.

import { el } from '../dom.js';

const FOLD_LINES = 40;
const FOLD_CHARS = 6000;  // one very long line folds too

// Wraps `body`; call update(text) whenever its content changes.
export function collapsible(body) {
  const toggle = el('button', { type: 'button', class: 'link-button fold-toggle', hidden: true });
  const wrap = el('div', { class: 'foldable' }, body, toggle);
  let folded = true;
  let lines = 0;
  let chars = 0;
  let long = false;
  const render = () => {
    wrap.classList.toggle('folded', long && folded);
    toggle.hidden = !long;
    const size = lines > FOLD_LINES ? `${lines.toLocaleString()} lines` : `${chars.toLocaleString()} characters`;
    toggle.textContent = folded ? `Show all ${size}` : 'Show less';
    toggle.setAttribute('aria-expanded', String(!folded));
  };
  toggle.addEventListener('click', () => { folded = !folded; render(); });
  return {
    el: wrap,
    update(text) {
      lines = countLines(text);
      chars = text.length;
      long = lines > FOLD_LINES || text.length > FOLD_CHARS;
      render();
    },
  };
}

const countLines = text => (text.match(/\n/g) || []).length + (text.endsWith('\n') ? 0 : 1);
