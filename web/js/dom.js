// DOM helpers. Every piece of text reaches the page through textContent or a text node:
// nothing in this UI parses a string as HTML in the page itself.

export const $ = id => document.getElementById(id);

// el('button', {class: 'small', text: 'Run', onclick: fn}, child…): attributes, a text,
// listeners (on…) and children; null/undefined/false values and children are skipped.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  node.append(...children.flat().filter(c => c !== null && c !== undefined && c !== false));
  return node;
}

// SVG elements need their namespace; same calling convention as el().
export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') node.textContent = v;
    else if (k === 'class') node.setAttribute('class', v);
    else node.setAttribute(k, String(v));
  }
  node.append(...children.filter(Boolean));
  return node;
}

export function uuid() {
  // crypto.randomUUID needs a secure context; getRandomValues works on plain http too.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map(x => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// Runs fn and keeps a scrolling container pinned to its bottom if it was there before, so
// new output follows along unless the user scrolled up to read.
export function keepScrolled(container, fn, force = false) {
  const nearBottom = container.scrollHeight - container.scrollTop - container.clientHeight < 80;
  const result = fn();
  if (nearBottom || force) container.scrollTop = container.scrollHeight;
  return result;
}

// Runs async jobs with at most `limit` at a time (history restore, PSS refreshes): a page
// must not open dozens of requests at once on a browser's six connections per host.
export async function mapLimited(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
