// An exception: its traceback with the kernel's ANSI colours as spans (the playground asks
// the server to keep them with keep_ansi), or "Name: value" when there is no traceback.

import { renderText } from './text.js';

export function renderTraceback(name, value, traceback) {
  const text = Array.isArray(traceback) && traceback.length
    ? traceback.join('\n') : `${name || 'Error'}: ${value || ''}`;
  return renderText(text, 'out-error', 'traceback');
}
