// A small Markdown renderer for text/markdown outputs that builds DOM nodes directly: no HTML
// string is ever parsed, so kernel-written Markdown cannot inject markup or script. Covers
// what notebooks print: headings, paragraphs, emphasis, code, fenced blocks, lists (nested by
// indentation), block quotes, rules, links (http, https, mailto only), data: images, and pipe
// tables (pandas' to_markdown). Raw HTML in the source is shown as text.

import { el } from '../dom.js';

const SAFE_LINK = /^(https?:|mailto:|#)/i;
const SAFE_IMAGE = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]+$/i;

// ---- inline -----------------------------------------------------------------------------

// Earliest-match inline rules; each returns [node, consumed length] or null.
const INLINE_RULES = [
  { re: /\\([\\`*_{}[\]()#+\-.!|~>])/y, make: m => document.createTextNode(m[1]) },
  { re: /(`+)([^]*?[^`])\1(?!`)/y, make: m => el('code', { text: m[2].trim() }) },
  { re: /!\[([^\]]*)\]\(\s*([^)\s]+)(?:\s+"([^"]*)")?\s*\)/y, make: m => image(m[1], m[2], m[3]) },
  { re: /\[((?:[^\]\\]|\\.)+)\]\(\s*([^)\s]+)(?:\s+"([^"]*)")?\s*\)/y, make: m => link(m[1], m[2], m[3]) },
  { re: /<((?:https?:\/\/|mailto:)[^>\s]+)>/y, make: m => link(m[1], m[1]) },
  { re: /(\*\*|__)(?=\S)([^]*?\S)\1/y, make: m => el('strong', {}, inline(m[2])) },
  { re: /(\*|_)(?=\S)([^]*?\S)\1(?![*_])/y, make: m => el('em', {}, inline(m[2])) },
  { re: /~~(?=\S)([^]*?\S)~~/y, make: m => el('del', {}, inline(m[1])) },
  { re: / {2,}\n|\\\n/y, make: () => el('br') },
];
const INLINE_START = /[\\`!\[<*_~ ]/g;

function link(label, href, title) {
  if (!SAFE_LINK.test(href)) return el('span', {}, inline(label), ` (${href})`);
  return el('a', { href, title, target: href.startsWith('#') ? undefined : '_blank',
                   rel: 'noopener noreferrer' }, inline(label));
}

// Images only as data: URLs: the page's CSP blocks any other origin, and a remote image
// would tell a third party that the output was viewed.
function image(alt, src, title) {
  if (SAFE_IMAGE.test(src)) return el('img', { class: 'md-image', alt, title, src: src.replace(/\s+/g, '') });
  return el('span', { class: 'md-image-missing', text: `[image: ${alt || src}]` });
}

export function inline(text) {
  const frag = document.createDocumentFragment();
  let plain = '';
  let i = 0;
  const flush = () => { if (plain) frag.append(document.createTextNode(plain)); plain = ''; };
  while (i < text.length) {
    INLINE_START.lastIndex = i;
    const next = INLINE_START.exec(text);
    if (!next) break;
    plain += text.slice(i, next.index);
    i = next.index;
    // snake_case_names are words, not emphasis.
    if (text[i] === '_' && /\w/.test(text[i - 1] || '')) { plain += text[i++]; continue; }
    let matched = false;
    for (const rule of INLINE_RULES) {
      rule.re.lastIndex = i;
      const m = rule.re.exec(text);
      if (!m) continue;
      flush();
      frag.append(rule.make(m));
      i += m[0].length;
      matched = true;
      break;
    }
    if (!matched) plain += text[i++];
  }
  plain += text.slice(i);
  flush();
  return frag;
}

// ---- blocks -----------------------------------------------------------------------------

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>\s?/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEPARATOR = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const SETEXT = /^ {0,3}(=+|-+)\s*$/;

const isBlank = line => /^\s*$/.test(line);

function startsBlock(line, next) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
         ITEM.test(line) || (line.includes('|') && next !== undefined && TABLE_SEPARATOR.test(next));
}

function fenced(lines, i) {
  const [, fence, lang] = lines[i].match(FENCE);
  const body = [];
  let j = i + 1;
  while (j < lines.length && !lines[j].trimStart().startsWith(fence)) body.push(lines[j++]);
  const code = el('code', { text: body.join('\n'), 'data-lang': lang || undefined });
  return [el('pre', { class: 'md-code' }, code), j + 1];
}

function quote(lines, i) {
  const body = [];
  let j = i;
  while (j < lines.length && QUOTE.test(lines[j])) body.push(lines[j++].replace(QUOTE, ''));
  return [el('blockquote', {}, blocks(body)), j];
}

// A list runs while lines are items at its indentation or belong to its items (indented
// deeper, or blank between items); each item's own lines are parsed again as blocks.
function list(lines, i) {
  const first = lines[i].match(ITEM);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const node = el(ordered ? 'ol' : 'ul');
  if (ordered && parseInt(first[2], 10) !== 1) node.setAttribute('start', parseInt(first[2], 10));
  let j = i;
  let item = null;
  const finish = () => { if (item) node.append(el('li', {}, blocks(item, true))); };
  while (j < lines.length) {
    const m = lines[j].match(ITEM);
    if (m && m[1].length === indent && /\d/.test(m[2]) === ordered) {
      finish();
      item = [m[3]];
    } else if (isBlank(lines[j]) && j + 1 < lines.length &&
               (lines[j + 1].match(ITEM)?.[1].length ?? -1) >= indent) {
      item.push('');
    } else if (!isBlank(lines[j]) && (lines[j].match(/^ */)[0].length > indent)) {
      item.push(lines[j].slice(Math.min(lines[j].match(/^ */)[0].length, indent + 2)));
    } else {
      break;
    }
    j++;
  }
  finish();
  return [node, j];
}

const splitRow = line => line.trim().replace(/^\|/, '').replace(/\|$/, '')
  .split(/(?<!\\)\|/).map(cell => cell.trim().replace(/\\\|/g, '|'));

function table(lines, i) {
  const head = splitRow(lines[i]);
  const align = splitRow(lines[i + 1]).map(c =>
    (c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : c.startsWith(':') ? 'left' : ''));
  const cell = (tag, text, k) => el(tag, { class: align[k] ? `align-${align[k]}` : undefined }, inline(text));
  const body = el('tbody');
  let j = i + 2;
  for (; j < lines.length && lines[j].includes('|') && !isBlank(lines[j]); j++)
    body.append(el('tr', {}, splitRow(lines[j]).map((t, k) => cell('td', t, k))));
  const node = el('table', { class: 'md-table' },
                  el('thead', {}, el('tr', {}, head.map((t, k) => cell('th', t, k)))), body);
  return [el('div', { class: 'md-table-wrap' }, node), j];
}

function paragraph(lines, i, tight) {
  const body = [];
  let j = i;
  while (j < lines.length && !isBlank(lines[j]) && (j === i || !startsBlock(lines[j], lines[j + 1]))) {
    if (j > i && SETEXT.test(lines[j]) && body.length) {
      const level = lines[j].trim().startsWith('=') ? 1 : 2;
      return [el(`h${level}`, {}, inline(body.join('\n'))), j + 1];
    }
    body.push(lines[j++]);
  }
  const content = inline(body.join('\n'));
  return [tight ? el('span', {}, content) : el('p', {}, content), j];
}

function block(lines, i, tight) {
  const line = lines[i];
  if (FENCE.test(line)) return fenced(lines, i);
  const h = line.match(HEADING);
  if (h) return [el(`h${h[1].length}`, {}, inline(h[2])), i + 1];
  if (RULE.test(line)) return [el('hr'), i + 1];
  if (QUOTE.test(line)) return quote(lines, i);
  if (ITEM.test(line)) return list(lines, i);
  if (line.includes('|') && i + 1 < lines.length && TABLE_SEPARATOR.test(lines[i + 1])) return table(lines, i);
  if (/^ {4,}\S/.test(line)) {
    let j = i;
    const body = [];
    while (j < lines.length && (/^ {4}/.test(lines[j]) || isBlank(lines[j]))) body.push(lines[j++].slice(4));
    return [el('pre', { class: 'md-code' }, el('code', { text: body.join('\n').trimEnd() })), j];
  }
  return paragraph(lines, i, tight);
}

// `tight`: a list item's text without <p> margins, as Markdown renders short items.
function blocks(lines, tight = false) {
  const frag = document.createDocumentFragment();
  let i = 0;
  while (i < lines.length) {
    if (isBlank(lines[i])) { i++; continue; }
    const [node, next] = block(lines, i, tight);
    frag.append(node);
    i = Math.max(next, i + 1);
  }
  return frag;
}

export function renderMarkdown(source) {
  const lines = String(source).replace(/\r\n?/g, '\n').replace(/\t/g, '    ').split('\n');
  return el('div', { class: 'out-markdown' }, blocks(lines));
}
