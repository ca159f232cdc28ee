// How numbers, times and ids are written for people.

export const shortId = id => String(id ?? '').slice(0, 8);
export const asText = v => (Array.isArray(v) ? v.join('') : String(v ?? ''));

export function formatBytes(n) {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '–';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = -1;
  do { v /= 1024; i++; } while (v >= 1024 && i < units.length - 1);
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

// 120 ms, 4.2 s, 12 s, 4 min 05 s, 2 h 03 min, 3 d 4 h: precise while short, coarse when long.
export function formatDuration(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.floor(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(Math.floor(s % 60)).padStart(2, '0')} s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ${String(m % 60).padStart(2, '0')} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

export const msSince = iso => (iso ? Date.now() - Date.parse(iso) : NaN);

export function formatClock(iso) {
  const d = iso ? new Date(iso) : new Date();
  return Number.isNaN(d.getTime()) ? '–' : d.toLocaleTimeString();
}

export function formatDateTime(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '–' : d.toLocaleString();
}

// What holds a kernel (the server's callisto.held_by), as the admin console and the kernel
// list name it.
export const HELD_BY = {
  client: 'Jupyter client',
  context: 'context',
  mcp: 'MCP session',
  keep: 'reuse keep',
};
