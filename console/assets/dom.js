// DOM helpers: every text the API sends is put in the page as text, never
// as markup, so that nothing a cluster, a node or a log line says can run
// as script.

// h makes an element: props sets attributes (class, id, data-*, aria-*,
// type, …), properties for names in props.prop, and listeners for on*
// functions; children are nodes or strings (made text nodes); null and
// false children are skipped.
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'prop') Object.assign(el, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// replace empties el and puts children in it.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// fmtTime shows an RFC 3339 time in the user's locale, or '' for none.
export function fmtTime(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

// fmtSeconds shows a duration in seconds as "1 min 5 s" or "0.4 s".
export function fmtSeconds(s) {
  if (s === undefined || s === null) return '';
  if (s < 10) return `${Math.round(s * 10) / 10} s`;
  s = Math.round(s);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
}

// statusBadge is a cluster's status as a coloured badge.
export function statusBadge(status) {
  return h('span', { class: 'status status-' + String(status || 'unknown').toLowerCase(), 'data-status': status }, status || 'unknown');
}

// progressView shows an operation's progress: a bar, its percent, the step
// k/N it runs, and the time left when the server has estimated it.
export function progressView(op) {
  if (!op) return h('span', { class: 'muted' }, '—');
  const pct = Math.max(0, Math.min(100, op.percent || 0));
  const step = op.step ? ` step ${op.index || 0}/${op.total || 0} ${op.step}` : '';
  const eta = op.state === 'running' && op.eta !== undefined && op.eta !== null ? ` · about ${fmtSeconds(op.eta)} left` : '';
  return h('span', { class: 'progress', 'data-percent': pct, 'data-state': op.state },
    h('progress', { max: 100, value: pct, 'aria-label': `${op.type} ${pct}%` }),
    h('span', { class: 'pct' }, `${pct}%`),
    h('span', { class: 'muted' }, `${step}${eta}`));
}
