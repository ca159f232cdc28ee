// The server's Execution has no code field, so this tab remembers what it submitted (code,
// timeout) per execution id in sessionStorage: after a reload, history shows what ran.
// Bounded per context; cleared at sign-out with the rest of the tab's session.

const KEY = contextId => `callisto.code.${contextId}`;
const MAX_ENTRIES = 200;

function load(contextId) {
  try { return JSON.parse(sessionStorage.getItem(KEY(contextId)) || '{}'); } catch { return {}; }
}

export function remember(contextId, executionId, entry) {
  const all = load(contextId);
  all[executionId] = entry;
  const ids = Object.keys(all);
  for (const id of ids.slice(0, Math.max(0, ids.length - MAX_ENTRIES))) delete all[id];
  try {
    sessionStorage.setItem(KEY(contextId), JSON.stringify(all));
  } catch { /* storage full: history then shows the output without the code */ }
}

export const recall = (contextId, executionId) => load(contextId)[executionId] || null;

export function forget(contextId) { sessionStorage.removeItem(KEY(contextId)); }
