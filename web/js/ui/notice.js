// Notices: one-line messages in a log (info, warn, error) with an optional detail.

import { el } from '../dom.js';

export function noticeNode(text, kind = 'info', detail) {
  return el('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' },
            el('span', { text }), detail ? el('pre', { text: detail }) : null);
}
