// Kernel HTML (pandas tables, rich reprs) goes into <iframe sandbox="" srcdoc>: no scripts, no
// forms, no plugins, an opaque origin that cannot read this page, its storage or its token.
// The frame inherits the page's CSP, so it cannot load anything from elsewhere either.

import { el } from '../dom.js';

const FRAME_STYLE =
  'body{margin:6px;font:13px/1.4 system-ui,"DejaVu Sans",sans-serif;color:#1d232b;background:#fff}' +
  'table{border-collapse:collapse}th,td{padding:3px 9px;border-bottom:1px solid #e3e6ea;text-align:right}' +
  'thead th{border-bottom:1px solid #b9bfc7}tbody tr:nth-child(odd){background:#f7f8fa}';

// The parent cannot measure a sandboxed document, so the height is estimated from the
// markup; the frame can be resized by hand (CSS resize: vertical).
function estimateHeight(html) {
  const rows = (html.match(/<tr[\s>]/gi) || []).length;
  const blocks = (html.match(/<(?:br|p|li|div|h[1-6]|pre)[\s>/]/gi) || []).length;
  return Math.max(48, Math.min(420, 24 + rows * 25 + blocks * 20));
}

export function htmlFrame(html) {
  const doc = `<!doctype html><html><head><meta charset="utf-8"><style>${FRAME_STYLE}</style>` +
              `</head><body>${html}</body></html>`;
  return el('iframe', { class: 'out-html', sandbox: '', srcdoc: doc, height: estimateHeight(html),
                        title: 'HTML output (sandboxed)', referrerpolicy: 'no-referrer' });
}
