// The code editors' keys: Shift+Enter runs (and clears), Ctrl/Cmd+Enter runs and keeps the
// code, Esc interrupts, Tab indents by four spaces (Shift+Tab still leaves the field).

export function bindEditor(textarea, { run, interrupt }) {
  textarea.addEventListener('keydown', ev => {
    if (ev.key === 'Enter' && (ev.shiftKey || ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      run({ keep: !ev.shiftKey });
    } else if (ev.key === 'Escape') {
      ev.preventDefault();
      interrupt();
    } else if (ev.key === 'Tab' && !ev.shiftKey && !ev.ctrlKey && !ev.altKey && !ev.metaKey) {
      ev.preventDefault();
      textarea.setRangeText('    ', textarea.selectionStart, textarea.selectionEnd, 'end');
    }
  });
}

// Takes the code to run, clearing the editor unless asked to keep it; '' when blank.
export function takeCode(textarea, keep) {
  const code = textarea.value;
  if (!code.trim()) return '';
  if (!keep) textarea.value = '';
  return code;
}
