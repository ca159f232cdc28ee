// Moving a context's files in and out, always with the token in a header: downloads are
// fetched and handed to the browser as a blob, uploads go through XMLHttpRequest for progress.

import { apiBlob, xhrSend } from '../api.js';
import { el } from '../dom.js';

export function filePath(contextId, path) {
  const encoded = String(path).split('/').map(encodeURIComponent).join('/');
  return `/v1/contexts/${encodeURIComponent(contextId)}/files/${encoded}`;
}

export const baseName = path => String(path).split('/').pop() || 'download';

// The browser's own "save" for the fetched bytes; the object URL is freed once the
// download has surely started.
export async function downloadFile(contextId, path) {
  const blob = await apiBlob(filePath(contextId, path));
  const url = URL.createObjectURL(blob);
  const a = el('a', { href: url, download: baseName(path), hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

// An image file as a data: URL, for an <img>: the page's CSP allows data: images but no
// blob: ones, and an <img src> cannot carry the Authorization header.
export async function fileDataUrl(contextId, path) {
  const blob = await apiBlob(filePath(contextId, path));
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

// One file as a multipart form (the server writes it under its name, atomically).
export function uploadFile(contextId, file, onProgress) {
  const form = new FormData();
  form.append('file', file, file.name);
  return xhrSend('POST', `/v1/contexts/${encodeURIComponent(contextId)}/files`, form, onProgress);
}
