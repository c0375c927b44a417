/**
 * HTML to readable text for the model: the title, headings, paragraphs, list items and
 * links (as `text (url)`), without scripts, styles or markup. A page is data, never
 * instructions (the system prompt says so); this only makes it shorter to read.
 */

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', ndash: '–', mdash: '—', hellip: '…', copy: '©', reg: '®', laquo: '«', raquo: '»', rsquo: '’', lsquo: '‘', rdquo: '”', ldquo: '“' };

export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]{1,6}|#\d{1,7}|[a-z]{2,8});/gi, (m, e: string) => {
    if (e[0] === '#') {
      const n = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return n > 0 && n <= 0x10ffff && !(n >= 0xd800 && n <= 0xdfff) ? String.fromCodePoint(n) : '';
    }
    return NAMED[e.toLowerCase()] ?? m;
  });
}

const SKIP = new Set(['script', 'style', 'noscript', 'svg', 'template', 'iframe', 'object']);
const BLOCK = new Set(['p', 'div', 'br', 'hr', 'section', 'article', 'header', 'footer', 'nav', 'main', 'aside', 'ul', 'ol', 'table', 'tr', 'pre', 'blockquote', 'form', 'figure', 'figcaption', 'dl', 'dt', 'dd']);

function hrefOf(tag: string, base: string | undefined): string | null {
  const m = /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i.exec(tag);
  const href = decodeEntities(m ? (m[1] ?? m[2] ?? m[3] ?? '') : '').trim();
  if (!href || href.startsWith('#') || /^(javascript|data|mailto|vbscript):/i.test(href)) return null;
  if (base === undefined) return href;
  try {
    return new URL(href, base).href;
  } catch {
    return href;
  }
}

/** One pass over the text with indexOf (linear whatever the page holds: no backtracking over untrusted input). */
export function htmlToText(html: string, base?: string): string {
  const lower = html.toLowerCase();
  const out: string[] = [];
  let title = '';
  let link: string | null = null;
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    if (lt < 0) {
      out.push(html.slice(i));
      break;
    }
    out.push(html.slice(i, lt));
    if (lower.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4);
      i = end < 0 ? html.length : end + 3;
      continue;
    }
    const gt = html.indexOf('>', lt + 1);
    if (gt < 0) break;
    const tag = html.slice(lt, gt + 1);
    i = gt + 1;
    const m = /^<(\/?)([a-z][a-z0-9]*)/i.exec(tag);
    if (!m) continue;
    const closing = m[1] === '/';
    const name = m[2]!.toLowerCase();
    if (name === 'title' && !closing) {
      const end = lower.indexOf('</title', i);
      title = decodeEntities(html.slice(i, end < 0 ? html.length : end)).replace(/\s+/g, ' ').trim();
      i = end < 0 ? html.length : end;
      continue;
    }
    if (SKIP.has(name) && !closing && !tag.endsWith('/>')) {
      const end = lower.indexOf(`</${name}`, i);
      i = end < 0 ? html.length : end;
      continue;
    }
    if (name === 'a') {
      if (!closing) {
        link = hrefOf(tag, base);
        out.push(' ');
      } else {
        if (link) out.push(` (${link}) `);
        link = null;
      }
    } else if (/^h[1-6]$/.test(name)) out.push(closing ? '\n\n' : `\n\n${'#'.repeat(Number(name[1]))} `);
    else if (name === 'li' && !closing) out.push('\n- ');
    else if ((name === 'td' || name === 'th') && !closing) out.push(' | ');
    else if (BLOCK.has(name)) out.push('\n');
  }
  const s = decodeEntities(out.join(''))
    .replace(/[ \t\f\v\r\u00a0]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return title && !s.startsWith(title) ? `${title}\n\n${s}` : s;
}
