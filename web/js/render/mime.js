// A display_data / execute_result bundle → the richest node this page can show safely.

import { el } from '../dom.js';
import { asText, formatBytes } from '../format.js';
import { htmlFrame } from './html-frame.js';
import { renderJson } from './json.js';
import { renderMarkdown } from './markdown.js';
import { renderText } from './text.js';

const MIME_ORDER = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/svg+xml',
                    'text/html', 'text/markdown', 'application/json', 'text/latex', 'text/plain'];
const RASTER = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

// A value over the server's result cap is replaced by {file, bytes}: the path of the file it
// was written to in the context's workdir (under callisto-outputs/).
export function isMovedToFile(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value) &&
         typeof value.file === 'string' && typeof value.bytes === 'number' &&
         Object.keys(value).length === 2 && value.file.startsWith('callisto-outputs/');
}

function rasterImage(mime, value, data, meta) {
  const b64 = asText(value).replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) return null;
  return el('img', { class: 'out-image', alt: asText(data['text/plain']) || 'image output',
                     src: `data:${mime};base64,${b64}`, width: meta.width, height: meta.height });
}

// SVG is shown as an <img>: in image mode a browser runs none of its scripts, loads none of
// its external resources and exposes none of its DOM, which sanitises it by construction.
function svgImage(value) {
  return el('img', { class: 'out-image out-svg', alt: 'SVG output',
                     src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(asText(value))}` });
}

function renderAs(mime, value, data, meta) {
  if (RASTER.has(mime)) return rasterImage(mime, value, data, meta);
  if (mime === 'image/svg+xml') return svgImage(value);
  if (mime === 'text/html') return htmlFrame(asText(value));
  if (mime === 'text/markdown') return renderMarkdown(asText(value));
  if (mime === 'application/json') return renderJson(value);
  return renderText(asText(value), 'out-text');
}

// `fileCard(path, bytes, mime)` draws a moved value (the playground knows its context); without
// one, a moved value is described in words.
export function renderBundle(data = {}, metadata = {}, { fileCard } = {}) {
  for (const mime of MIME_ORDER) {
    const value = data[mime];
    if (value === undefined || value === null) continue;
    if (isMovedToFile(value)) {
      return fileCard ? fileCard(value.file, value.bytes, mime)
        : el('p', { class: 'muted', text: `${mime} (${formatBytes(value.bytes)}) written to ${value.file}` });
    }
    const node = renderAs(mime, value, data, metadata[mime] || {});
    if (node) return node;
  }
  const types = Object.keys(data).join(', ') || 'none';
  return el('p', { class: 'muted', text: `[an output of type ${types}, which this page does not show]` });
}
