// A cluster's page: its state and last operation (a progress bar, the
// steps with their durations, a stall or an error with what to do), the
// live install log (admin), the live nodes and namespaces of a ready
// cluster, its etcd snapshots (admin), the operation history, and the
// admin's actions, as the cluster's "actions" allow them. The page
// re-reads the cluster on each of its events and follows its log; nothing
// polls.
import { api, download, follow, session } from './api.js';
import { confirmByName } from './confirm.js';
import { h, replace, fmtTime, fmtSeconds, statusBadge, progressView } from './dom.js';
import { go, notify } from './nav.js';
import { snapshotsSection } from './snapshots.js';

// The log keeps at most this many lines on screen (the whole log stays
// on the server: the CLI's logs and ?since= read it all).
const maxLogLines = 5000;

export function clusterView(main, name) {
  const path = '/clusters/' + encodeURIComponent(name);
  const summary = h('section', { id: 'summary', class: 'card' }, h('p', { class: 'muted' }, 'Loading…'));
  const opPanel = h('section', { id: 'operation', class: 'card' });
  const logPre = h('pre', { id: 'zkelog', class: 'log', 'aria-live': 'polite' });
  const logState = h('span', { id: 'log-state', class: 'muted' });
  const nodes = h('section', { id: 'nodes', class: 'card' });
  const history = h('section', { id: 'history', class: 'card' });
  const snaps = session.admin ? snapshotsSection(path, name) : null;
  let cluster = null;
  let lastSeq = 0;
  let stopped = false;
  let reading = false;
  let readAgain = false;
  let liveLoaded = '';

  // read re-reads the cluster (one read at a time; an event during one
  // reads again after it).
  async function read() {
    if (reading) { readAgain = true; return; }
    reading = true;
    try {
      cluster = await api('GET', path);
      if (stopped) return;
      renderSummary();
      renderOperation(cluster.lastOperation);
      if (snaps) snaps.update(cluster);
      const op = cluster.lastOperation;
      followLog(op ? `${op.type}@${op.startedAt}` : '', Boolean(op && op.state === 'running'));
      if (session.admin) showLogState();
      const ready = cluster.status === 'Running';
      const key = `${cluster.status}/${cluster.lastOperation ? cluster.lastOperation.startedAt + cluster.lastOperation.state : ''}`;
      if (key !== liveLoaded) {
        liveLoaded = key;
        loadLive(ready);
        loadHistory();
      }
    } catch (e) {
      if (e.status === 404) {
        replace(summary, h('p', {}, `Cluster ${name} does not exist (any more). `, h('a', { href: '#/clusters' }, 'Back to the clusters')));
        replace(opPanel); replace(nodes); replace(history);
        if (snaps) replace(snaps.el);
      } else if (!stopped) {
        notify(`Cannot read cluster ${name}: ${e.message}`);
      }
    } finally {
      reading = false;
      if (readAgain && !stopped) { readAgain = false; read(); }
    }
  }

  function renderSummary() {
    const c = cluster;
    const facts = [
      ['Status', statusBadge(c.status)],
      ['Kind', c.imported ? 'imported' : 'created by singlecloud'],
      ['Kubernetes', c.version || c.kubernetesVersion || '—'],
      ['Nodes', String(c.nodeCount ?? '—')],
      ['Created', fmtTime(c.creationTimestamp)],
    ];
    if (c.reason) facts.push(['Reason', h('span', { id: 'reason' }, c.reason)]);
    if (c.certificateWarning) {
      const w = c.certificateWarning;
      facts.push(['Certificates', h('span', { id: 'certificate-warning', class: 'warn-text' },
        w.message || `${w.certificate} expires ${fmtTime(w.notAfter)} (${w.daysLeft} days left)`)]);
    }
    replace(summary,
      h('div', { class: 'toolbar' }, h('h1', {}, c.name), h('span', { class: 'spacer' }), session.admin ? actions(c) : null),
      h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
  }

  function actions(c) {
    // The server lists what it would accept now (its state machine and
    // the cluster's record decide); a request still re-checks and a
    // refusal says why (409).
    const allowed = new Set(c.actions || []);
    const off = (action) => (action && !allowed.has(action) ? `not possible while the cluster is ${c.status}` : null);
    const act = (label, id, action, fn, cls = '') => h('button', { id, class: cls, disabled: Boolean(off(action)), title: off(action), onclick: async (e) => {
      e.target.disabled = true;
      try { await fn(); } catch (ex) { notify(`${label}: ${ex.message}`); } finally { e.target.disabled = Boolean(off(action)); }
    } }, label);
    return h('span', { class: 'actions' },
      !c.imported && allowed.has('update') ? h('a', { id: 'action-edit', class: 'button', href: `#/clusters/${encodeURIComponent(c.name)}/edit` }, 'Edit nodes') : null,
      act('Cancel', 'action-cancel', 'cancel', () => post('cancel')),
      act('Retry', 'action-retry', 'retry', () => post('retry')),
      allowed.has('revert') ? act('Revert upgrade', 'action-revert', 'revert', () => post('revert')) : null,
      allowed.has('rotateCertificates') ? act('Rotate certificates', 'action-rotate', 'rotateCertificates', () => post('rotateCertificates')) : null,
      act('Download kubeconfig', 'action-kubeconfig', null, () => download(path + '/kubeconfigs/kube-admin?download=1', `${c.name}.kubeconfig`)),
      act('Delete', 'action-delete', 'delete', () => confirmDelete(c), 'danger'));
  }

  async function post(action) {
    await api('POST', `${path}?action=${action}`, {});
    notify(`${action} of ${name} accepted`, 'info');
    read();
  }

  function confirmDelete(c) {
    return confirmByName({
      id: 'delete', name: c.name, button: 'Delete',
      text: c.imported
        ? `Forget cluster ${c.name}? singlecloud stops managing it; the cluster itself keeps running.`
        : `Delete cluster ${c.name}? Its Kubernetes components and data are removed from every node.`,
      onConfirm: async () => {
        await api('DELETE', path);
        notify(`Deleting cluster ${c.name}`, 'info');
        go('#/clusters');
      },
    });
  }

  function renderOperation(op) {
    if (!op) { replace(opPanel, h('h2', {}, 'Last operation'), h('p', { class: 'muted' }, 'None yet.')); return; }
    const steps = (op.steps || []).slice().sort((a, b) => a.index - b.index);
    const running = op.state === 'running' && op.step && !steps.some((s) => s.index === op.index)
      ? h('li', { class: 'running' }, h('span', {}, `${op.index}. ${op.step}`), h('span', { class: 'muted' }, 'running…')) : null;
    replace(opPanel,
      h('h2', {}, 'Last operation'),
      h('p', { id: 'op-title' }, h('strong', {}, op.type), ` ${op.state}`, op.startedBy ? ` · started by ${op.startedBy}` : '',
        ` · ${fmtTime(op.startedAt)}`, op.endedAt ? ` → ${fmtTime(op.endedAt)}` : ''),
      h('div', { id: 'op-progress' }, progressView(op)),
      op.stalled ? h('div', { id: 'stalled', class: 'notice warn' },
        h('strong', {}, `Stalled: step ${op.stalled.step}`), op.stalled.node ? ` on node ${op.stalled.node}` : '',
        op.stalled.waitingFor ? ` is waiting for ${op.stalled.waitingFor}` : '', ` since ${fmtTime(op.stalled.since)}.`,
        op.stalled.lastError ? h('div', {}, `Last error: ${op.stalled.lastError}`) : null,
        op.stalled.hint ? h('div', {}, `What to do: ${op.stalled.hint}`) : null) : null,
      op.error ? h('div', { id: 'op-error', class: 'notice error' },
        h('strong', {}, op.state === 'canceled' ? 'Cancelled' : 'Failed'), op.error.step ? ` at step ${op.error.step}` : '', op.error.node ? ` on node ${op.error.node}` : '',
        ': ', op.error.message,
        op.error.userFixable ? h('div', {}, 'Fix what it says, then Retry.') : null) : null,
      steps.length || running ? h('ol', { id: 'steps', class: 'steps' },
        steps.map((s) => h('li', { 'data-step': s.name }, h('span', {}, `${s.index}. ${s.name}`),
          h('span', { class: 'muted' }, s.skipped ? 'skipped (verified)' : fmtSeconds(s.seconds)))),
        running) : null);
  }

  // The live log (admin only): every frame since the last one seen;
  // progress frames move the bar at once, a result frame re-reads the
  // cluster. The server closes the stream (1000) once the operation has
  // ended and its log was sent.
  let stopLog = () => {};
  let logKey = null;
  let logClosed = false;
  let logStream = '';
  // showLogState says whether the log is followed, and once the server
  // closed it, whether the operation goes on (its next lines come when
  // it moves) or has ended.
  function showLogState() {
    const running = cluster && cluster.lastOperation && cluster.lastOperation.state === 'running';
    replace(logState, logStream === 'live' ? '● following' : logStream === 'closed'
      ? (running ? 'waiting for the operation' : 'operation ended') : logStream ? 'reconnecting…' : '');
  }
  // followLog follows the log of the operation key names (a new operation
  // starts a new log, numbered from 1 again).
  function followLog(key, running) {
    if (!session.admin) return;
    if (key === logKey && !(logClosed && running)) return;
    if (key !== logKey) { lastSeq = 0; replace(logPre); }
    logKey = key;
    logClosed = false;
    stopLog();
    stopLog = follow(`${path}/zkelog`, {
      probe: path,
      params: () => (lastSeq ? { since: lastSeq } : {}),
      onMessage: (f) => {
        if (typeof f.seq === 'number') lastSeq = Math.max(lastSeq, f.seq);
        logLine(f);
        if (f.type === 'progress' && cluster && cluster.lastOperation) {
          const op = { ...cluster.lastOperation, step: f.step, index: f.index, total: f.total, percent: Math.max(f.percent || 0, cluster.lastOperation.percent || 0) };
          if (f.eta !== undefined) op.eta = f.eta;
          replace(document.getElementById('op-progress') || h('div'), progressView(op));
        }
        if (f.type === 'result' || f.type === 'stalled') read();
      },
      onState: (s) => { logClosed = s === 'closed'; logStream = s; showLogState(); },
      onClose: (code) => code !== 1000,
    });
  }

  function logLine(f) {
    const text = f.type === 'progress'
      ? `── step ${f.index}/${f.total} ${f.step}${f.skipped ? ' (skipped, verified)' : ''} ${f.percent || 0}%`
      : f.type === 'result' ? `══ ${f.message || ''} ${f.status ? '(cluster is ' + f.status + ')' : ''}`
        : `${f.level ? f.level.toUpperCase() + ' ' : ''}${f.step ? '[' + f.step + '] ' : ''}${f.node ? f.node + ': ' : ''}${f.message || ''}`;
    const atBottom = logPre.scrollTop + logPre.clientHeight >= logPre.scrollHeight - 4;
    logPre.append(h('span', { class: 'line line-' + f.type + (f.level ? ' level-' + f.level : '') }, `${f.time ? new Date(f.time).toLocaleTimeString() + ' ' : ''}${text}\n`));
    while (logPre.childElementCount > maxLogLines) logPre.firstElementChild.remove();
    if (atBottom) logPre.scrollTop = logPre.scrollHeight;
  }

  // Each of the live reads keeps only its latest answer (an older one
  // landing late would draw a stale table over it).
  let liveSeq = 0;
  let historySeq = 0;

  async function loadLive(ready) {
    const my = ++liveSeq;
    if (!ready) {
      replace(nodes, h('h2', {}, 'Nodes'), h('p', { class: 'muted' }, 'Live nodes and namespaces are shown while the cluster is Running.'));
      return;
    }
    try {
      const [ns, nss] = await Promise.all([api('GET', path + '/nodes'), api('GET', path + '/namespaces')]);
      if (stopped || my !== liveSeq) return;
      replace(nodes, h('h2', {}, 'Nodes'),
        h('table', { id: 'node-table', class: 'grid' },
          h('thead', {}, h('tr', {}, ['Name', 'Address', 'Roles', 'Status', 'Kubelet', 'OS', 'CPU', 'Memory'].map((t) => h('th', {}, t)))),
          h('tbody', {}, (ns.data || []).map((n) => h('tr', { 'data-node': n.name },
            h('td', {}, n.name), h('td', {}, n.address), h('td', {}, (n.roles || []).join(', ')),
            h('td', {}, n.status, n.unschedulable ? ' (cordoned)' : ''), h('td', {}, n.kubeletVersion),
            h('td', {}, n.operatingSystemImage || n.operatingSystem), h('td', { class: 'num' }, String(n.cpu ?? '')),
            h('td', { class: 'num' }, n.memory ? `${Math.round(n.memory / 1048576)} MiB` : ''))))),
        h('h2', {}, 'Namespaces'),
        h('p', { id: 'namespaces' }, (nss.data || []).map((n) => h('span', { class: 'tag' }, n.name))));
    } catch (e) {
      if (!stopped && my === liveSeq) replace(nodes, h('h2', {}, 'Nodes'), h('p', { class: 'muted' }, `Not available: ${e.message}`));
    }
  }

  async function loadHistory() {
    const my = ++historySeq;
    try {
      const res = await api('GET', path + '/operations');
      if (stopped || my !== historySeq) return;
      const ops = res.data || []; // newest first
      replace(history, h('h2', {}, 'Operation history'), ops.length ? h('table', { id: 'history-table', class: 'grid' },
        h('thead', {}, h('tr', {}, ['Operation', 'Outcome', 'Started', 'Took', 'By', 'Error'].map((t) => h('th', {}, t)))),
        h('tbody', {}, ops.map((o) => h('tr', {},
          h('td', {}, o.kind), h('td', {}, o.state), h('td', {}, fmtTime(o.startedAt)),
          h('td', {}, o.endedAt ? fmtSeconds((new Date(o.endedAt) - new Date(o.startedAt)) / 1000) : ''),
          h('td', {}, o.startedBy || 'singlecloud'), h('td', { class: 'muted' }, o.error ? o.error.message : '')))))
        : h('p', { class: 'muted' }, 'No operation yet.'));
    } catch (e) {
      if (!stopped && my === historySeq) replace(history, h('h2', {}, 'Operation history'), h('p', { class: 'muted' }, `Not available: ${e.message}`));
    }
  }

  const stopEvents = follow('/events', {
    onMessage: (ev) => {
      if (!ev || ev.cluster !== name) return;
      if (snaps && String(ev.type).startsWith('ClusterSnapshot')) { snaps.reload(); loadHistory(); }
      read();
    },
    onState: (s) => { if (s === 'live' && cluster) read(); },
  });

  replace(main,
    h('p', { class: 'crumbs' }, h('a', { href: '#/clusters' }, '‹ Clusters')),
    summary, opPanel,
    session.admin ? h('section', { class: 'card' }, h('div', { class: 'toolbar' }, h('h2', {}, 'Log'), h('span', { class: 'spacer' }), logState), logPre) : null,
    nodes, snaps ? snaps.el : null, history);
  read();
  return () => { stopped = true; stopLog(); stopEvents(); };
}
