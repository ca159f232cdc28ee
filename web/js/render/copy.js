// Copy buttons. The async clipboard needs a secure context (https or 127.0.0.1); on plain
// http elsewhere the old execCommand path on a hidden textarea still works.

import { el } from '../dom.js';

async function writeClipboard(text) {
  if (navigator.clipboard && window.isSecureContext) {
    try { await navigator.clipboard.writeText(text); return true; } catch { /* fall through */ }
  }
  const area = el('textarea', { class: 'offscreen', 'aria-hidden': 'true', readonly: true });
  area.value = text;
  document.body.append(area);
  area.select();
  let ok = false;
  try { ok = document.execCommand('copy'); } catch { ok = false; }
  area.remove();
  return ok;
}

// getText is called on click, so a growing output is copied as it is then.
export function copyButton(getText, what = 'text') {
  const button = el('button', { type: 'button', class: 'copy-button', title: `Copy ${what}`,
                                'aria-label': `Copy ${what}`, text: 'Copy' });
  button.addEventListener('click', async () => {
    const ok = await writeClipboard(getText());
    button.textContent = ok ? 'Copied' : 'Copy failed';
    button.dataset.copied = String(ok);
    setTimeout(() => { button.textContent = 'Copy'; delete button.dataset.copied; }, 1500);
  });
  return button;
}
