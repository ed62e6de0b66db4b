// The cluster list: one page at a time from the API (limit, continue, sort,
// q, status: the server pages, sorts and filters, so that ten thousand
// clusters cost one page), kept live by the events websocket — an event
// re-reads the page shown, at most one read at a time and one per
// refreshDelayMs; no polling.
import { api, follow, session } from './api.js';
import { h, replace, fmtTime, statusBadge, progressView } from './dom.js';
import { notify } from './nav.js';

const pageSize = 50;
const refreshDelayMs = 300;
const statuses = ['Running', 'Creating', 'Updating', 'Connecting', 'Unreachable', 'Unavailable', 'Canceling', 'Deleting'];
const sorts = [['name', 'name A–Z'], ['-name', 'name Z–A'], ['status', 'status'], ['-createdAt', 'newest first'], ['createdAt', 'oldest first']];

export function clustersView(main) {
  const params = new URLSearchParams((location.hash.split('?')[1]) || '');
  const state = {
    q: params.get('q') || '', status: params.get('status') || '', sort: params.get('sort') || 'name',
    starts: [''], page: 0, loading: false, again: false, seq: 0, timer: 0,
  };
  let firstShown = false;

  const q = h('input', { id: 'filter-q', type: 'search', placeholder: 'Filter by name', value: state.q, 'aria-label': 'filter by name' });
  const status = h('select', { id: 'filter-status', 'aria-label': 'status' },
    h('option', { value: '' }, 'any status'), statuses.map((s) => h('option', { value: s, selected: s === state.status }, s)));
  const sort = h('select', { id: 'sort', 'aria-label': 'sort' }, sorts.map(([v, label]) => h('option', { value: v, selected: v === state.sort }, label)));
  const live = h('span', { id: 'live', class: 'live muted' }, 'connecting…');
  const count = h('span', { id: 'count', class: 'muted' });
  let stopped = false;
  // The buttons are disabled while a page loads, so a double click moves
  // one page.
  const prev = h('button', { id: 'prev', disabled: true, onclick: () => { if (state.page > 0) { state.page--; load(); } } }, '‹ Previous');
  const next = h('button', { id: 'next', disabled: true, onclick: () => { if (state.starts[state.page + 1]) { state.page++; load(); } } }, 'Next ›');
  const body = h('tbody');
  const table = h('table', { id: 'clusters', class: 'grid' },
    h('thead', {}, h('tr', {}, ['Name', 'Status', 'Version', 'Nodes', 'Last operation', 'Progress', 'Created'].map((c) => h('th', {}, c)))),
    body);

  const restart = () => {
    state.starts = [''];
    state.page = 0;
    const p = new URLSearchParams();
    if (state.q) p.set('q', state.q);
    if (state.status) p.set('status', state.status);
    if (state.sort !== 'name') p.set('sort', state.sort);
    history.replaceState(null, '', '#/clusters' + (p.toString() ? '?' + p : ''));
    state.seq++; // a page of the old filter still in flight is dropped
    load();
  };
  let typing = 0;
  q.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => { state.q = q.value.trim(); restart(); }, 250);
  });
  status.addEventListener('change', () => { state.status = status.value; restart(); });
  sort.addEventListener('change', () => { state.sort = sort.value; restart(); });

  // load reads the page shown; a load asked for while one runs runs once
  // after it.
  async function load() {
    if (stopped) return;
    if (state.loading) { state.again = true; return; }
    state.loading = true;
    prev.disabled = next.disabled = true;
    const seq = ++state.seq;
    const page = state.page;
    const p = new URLSearchParams({ limit: pageSize, sort: state.sort });
    if (state.q) p.set('q', state.q);
    if (state.status) p.set('status', state.status);
    if (state.starts[page]) p.set('continue', state.starts[page]);
    try {
      const res = await api('GET', '/clusters?' + p);
      if (seq !== state.seq || stopped) return;
      state.starts[page + 1] = res.continue || '';
      render(res, page);
    } catch (e) {
      if (!stopped) notify(`Cannot list the clusters: ${e.message}`);
    } finally {
      state.loading = false;
      if (state.again && !stopped) { state.again = false; load(); }
      else { prev.disabled = state.page === 0; next.disabled = !state.starts[state.page + 1]; }
    }
  }

  function render(res, page) {
    const rows = (res.data || []).map(row);
    replace(body, rows.length ? rows : h('tr', {}, h('td', { colspan: 7, class: 'muted empty' },
      state.q || state.status ? 'No cluster matches.' : (session.admin ? 'No clusters yet: create or import one.' : 'No cluster is granted to you.'))));
    const first = page * pageSize;
    const total = res.total ?? rows.length;
    replace(count, total ? `${first + 1}–${first + rows.length} of ${total}` : '');
    if (!firstShown) {
      firstShown = true;
      // What the console benchmark reads: the first page is on screen.
      document.documentElement.dataset.firstPageMs = String(Math.round(performance.now()));
    }
  }

  const schedule = () => {
    if (state.timer) return;
    state.timer = setTimeout(() => { state.timer = 0; load(); }, refreshDelayMs);
  };
  const stop = follow('/events', {
    onMessage: (ev) => { if (ev && ev.cluster) schedule(); },
    onState: (s) => {
      replace(live, s === 'live' ? '● live' : s === 'closed' ? 'not live: reload the page' : 'reconnecting…');
      live.dataset.state = s;
      if (s === 'live' && firstShown) schedule(); // what happened while disconnected
    },
  });

  replace(main,
    h('div', { class: 'toolbar' },
      h('h1', {}, 'Clusters'),
      session.admin ? h('a', { id: 'create-cluster', class: 'button primary', href: '#/create' }, 'Create cluster') : null,
      session.admin ? h('a', { id: 'import-cluster', class: 'button', href: '#/import' }, 'Import cluster') : null,
      h('span', { class: 'spacer' }), live),
    h('div', { class: 'filters' }, q, status, sort, h('span', { class: 'spacer' }), count, prev, next),
    table);
  load();
  return () => { stopped = true; stop(); clearTimeout(state.timer); clearTimeout(typing); state.seq++; };
}

function row(c) {
  const op = c.lastOperation;
  return h('tr', { 'data-cluster': c.name, 'data-status': c.status },
    h('td', {}, h('a', { href: '#/clusters/' + encodeURIComponent(c.name), class: 'name' }, c.name),
      c.imported ? h('span', { class: 'tag' }, 'imported') : null),
    h('td', {}, statusBadge(c.status), c.reason ? h('div', { class: 'reason muted', title: c.reason }, c.reason) : null),
    h('td', {}, c.version || ''),
    h('td', { class: 'num' }, String(c.nodeCount ?? '')),
    h('td', {}, op ? `${op.type} ${op.state}` : '', op && op.stalled ? h('span', { class: 'tag warn' }, 'stalled') : null),
    h('td', {}, op ? progressView(op) : ''),
    h('td', { class: 'muted' }, fmtTime(c.creationTimestamp)));
}
