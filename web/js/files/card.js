// A result the server moved to a file (over --result-cap): its name, size, a download button
// and, for images, a button that shows it inline.

import { el } from '../dom.js';
import { formatBytes } from '../format.js';
import { baseName, downloadFile, fileDataUrl } from './transfer.js';

const IMAGE = /^image\/(png|jpeg|gif|webp)$/;

function showButton(contextId, path, card) {
  const button = el('button', { type: 'button', class: 'small', text: 'Show' });
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      const src = await fileDataUrl(contextId, path);
      card.after(el('img', { class: 'out-image', alt: baseName(path), src }));
      button.remove();
    } catch (e) {
      button.disabled = false;
      button.title = e.message;
      button.textContent = 'Show (failed)';
    }
  });
  return button;
}

// `compact`: an icon (the files list); the accessible name says what it does either way.
export function downloadButton(contextId, path, { compact = false } = {}) {
  const button = el('button', { type: 'button', class: compact ? 'small icon' : 'small',
                                text: compact ? '⇩' : 'Download', title: `Download ${path}`,
                                'aria-label': `Download ${path}` });
  button.addEventListener('click', async () => {
    button.disabled = true;
    try { await downloadFile(contextId, path); } catch (e) { button.title = e.message; }
    button.disabled = false;
  });
  return button;
}

export function fileCard(contextId, path, bytes, mime) {
  const card = el('div', { class: 'file-card', 'data-path': path },
    el('span', { class: 'file-card-icon', 'aria-hidden': 'true', text: '⇩' }),
    el('span', { class: 'file-card-text' },
       el('span', { text: `${mime} output, ${formatBytes(bytes)}: too large to show inline, moved to ` }),
       el('code', { text: path })),
    downloadButton(contextId, path));
  if (IMAGE.test(mime)) card.append(showButton(contextId, path, card));
  return card;
}
