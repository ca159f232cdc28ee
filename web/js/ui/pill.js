// Status pills (connection, kernel state): a coloured dot and a word, styled by data-state.

const CONNECTION_LABELS = {
  none: 'not connected', connecting: 'connecting…', connected: 'connected',
  reconnecting: 'reconnecting…', closed: 'disconnected', failed: 'connection failed',
};

export function setPill(pill, state, text = state, title = text) {
  pill.dataset.state = state;
  pill.textContent = text;
  pill.title = title;
}

export function setConnectionPill(pill, state, detail) {
  const label = CONNECTION_LABELS[state] || state;
  setPill(pill, state, label, detail ? `${label} — ${detail}` : label);
}
