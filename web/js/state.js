// The page's shared state and settings, and the one DOM lookup helper.

import { uuid } from './dom.js';

export const TOKEN_KEY = 'callisto.token';
export const KERNEL_KEY = 'callisto.kernel';
export const MAX_STREAM_CHARS = 500_000;   // per output block; older text is dropped beyond that
export const KERNEL_POLL_MS = 15_000;
export const MIME_ORDER = ['image/png', 'image/jpeg', 'image/gif', 'image/svg+xml', 'text/html',
                    'text/markdown', 'text/latex', 'text/plain'];

export const $ = id => document.getElementById(id);

export const state = {
  token: '',
  sessionId: uuid(),
  specs: {},
  kernelId: null,
  kernelName: '',
  kernelState: 'none',
  ws: null,
  reconnectAttempt: 0,
  reconnectTimer: null,
  cells: new Map(),      // execute_request msg_id -> cell
  displays: new Map(),   // display_id -> Set of output containers
};
