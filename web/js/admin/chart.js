// The activity chart, drawn as inline SVG from the server's history samples (one every
// interval_seconds, oldest first): kernels and busy kernels as lines, executions per minute
// as bars (the difference of executions_total between samples, scaled to a minute).

import { el, svg } from '../dom.js';
import { formatClock } from '../format.js';

const W = 600;
const H = 150;
const PAD = { left: 34, right: 10, top: 12, bottom: 22 };

// 0, 1, 2, 5, 10, 20, 50…: the smallest such value at least `v`, for a readable y axis.
export function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map(m => m * p).find(m => m >= v);
}

export function executionsPerMinute(samples) {
  const rates = [];
  for (let i = 1; i < samples.length; i++) {
    const dt = (Date.parse(samples[i].t) - Date.parse(samples[i - 1].t)) / 60_000;
    const dn = samples[i].executions_total - samples[i - 1].executions_total;
    rates.push({ t: samples[i].t, value: dt > 0 && dn > 0 ? dn / dt : 0 });  // < 0: a restart
  }
  return rates;
}

function scales(times, max) {
  const t0 = Math.min(...times);
  const t1 = Math.max(...times, t0 + 1);
  const x = t => PAD.left + ((t - t0) / (t1 - t0)) * (W - PAD.left - PAD.right);
  const y = v => H - PAD.bottom - (v / max) * (H - PAD.top - PAD.bottom);
  return { x, y, t0, t1 };
}

function axes({ y, t0, t1 }, max, unit) {
  const grid = [0, max / 2, max].map(v => [
    svg('line', { class: 'grid', x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v) }),
    svg('text', { class: 'tick', x: PAD.left - 5, y: y(v) + 4, 'text-anchor': 'end',
                  text: Number.isInteger(v) ? v : v.toFixed(1) }),
  ]).flat();
  return [
    ...grid,
    svg('text', { class: 'tick', x: PAD.left, y: H - 5, text: formatClock(new Date(t0).toISOString()) }),
    svg('text', { class: 'tick', x: W - PAD.right, y: H - 5, 'text-anchor': 'end',
                  text: formatClock(new Date(t1).toISOString()) }),
    svg('text', { class: 'tick unit', x: PAD.left + 4, y: PAD.top - 2, text: unit }),
  ];
}

function line(points, s, cls) {
  const d = points.map(([t, v], i) => `${i ? 'L' : 'M'}${s.x(t).toFixed(1)},${s.y(v).toFixed(1)}`).join('');
  return svg('path', { class: `series ${cls}`, d });
}

function bars(rates, s, interval) {
  const width = Math.max(1, (s.x(s.t0 + interval * 1000) - s.x(s.t0)) * 0.8);
  return rates.filter(r => r.value > 0).map(r => svg('rect', {
    class: 'bar', x: (s.x(Date.parse(r.t)) - width).toFixed(1), width: width.toFixed(1),
    y: s.y(r.value).toFixed(1), height: (H - PAD.bottom - s.y(r.value)).toFixed(1),
  }, svg('title', { text: `${formatClock(r.t)}: ${r.value.toFixed(1)} executions/min` })));
}

function frame(label, children) {
  return svg('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label },
             svg('title', { text: label }), ...children);
}

function legend(items) {
  return el('div', { class: 'chart-legend' },
            items.map(([cls, text]) => el('span', { class: `key ${cls}`, text })));
}

export function kernelsChart(samples) {
  const last = samples[samples.length - 1];
  const max = niceMax(Math.max(...samples.map(p => p.kernels), 1));
  const s = scales(samples.map(p => Date.parse(p.t)), max);
  const label = `Kernels over the last ${samples.length} samples: now ${last.kernels}, ${last.busy} busy`;
  return el('figure', { class: 'chart-box' },
    el('figcaption', {}, el('strong', { text: 'Kernels in use' }),
       legend([['kernels', `kernels (${last.kernels})`], ['busy', `busy (${last.busy})`]])),
    frame(label, [...axes(s, max, 'kernels'),
                  line(samples.map(p => [Date.parse(p.t), p.kernels]), s, 'kernels'),
                  line(samples.map(p => [Date.parse(p.t), p.busy]), s, 'busy')]));
}

export function executionsChart(samples, interval) {
  const rates = executionsPerMinute(samples);
  const latest = rates.length ? rates[rates.length - 1].value : 0;
  const max = niceMax(Math.max(...rates.map(r => r.value), 1));
  const s = scales(samples.map(p => Date.parse(p.t)), max);
  const label = `Executions per minute; latest ${latest.toFixed(1)}`;
  return el('figure', { class: 'chart-box' },
    el('figcaption', {}, el('strong', { text: 'Executions per minute' }),
       legend([['bar', `latest ${latest.toFixed(1)}/min`]])),
    frame(label, [...axes(s, max, 'per min'), ...bars(rates, s, interval)]));
}

// Both charts, or a word while there are fewer than two samples to draw a line between.
export function activityCharts(history) {
  const samples = history?.samples || [];
  if (samples.length < 2) {
    return [el('p', { class: 'muted', text: 'Collecting activity samples… (one every ' +
                                             `${history?.interval_seconds || 10} s)` })];
  }
  return [kernelsChart(samples), executionsChart(samples, history.interval_seconds || 10)];
}
