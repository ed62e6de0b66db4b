// A created cluster's etcd snapshots, on its page (admin only): each with
// its trigger, size, etcd revision and restore drill's verdict, a
// download, and a restore offered while the cluster accepts one; "Take
// snapshot" while it accepts one. The page re-reads the list on the
// cluster's snapshot events and on every change of its actions.
import { api, download } from './api.js';
import { confirmByName } from './confirm.js';
import { h, replace, fmtTime, fmtSeconds } from './dom.js';
import { notify } from './nav.js';

// snapshotsSection returns the section's element, update(cluster) to call
// on each read of the cluster, and reload() for a snapshot event.
export function snapshotsSection(path, name) {
  const section = h('section', { id: 'snapshots', class: 'card' });
  let cluster = null;
  let list = null;
  let seq = 0;
  let taking = false;

  const allows = (action) => Boolean(cluster && (cluster.actions || []).includes(action));

  async function reload() {
    const my = ++seq;
    try {
      const res = await api('GET', path + '/snapshots');
      if (my !== seq) return;
      list = res.data || [];
    } catch (e) {
      if (my !== seq) return;
      list = null;
      replace(section, h('h2', {}, 'etcd snapshots'), h('p', { class: 'muted' }, `Not available: ${e.message}`));
      return;
    }
    render();
  }

  async function take() {
    taking = true;
    render();
    try {
      const s = await api('POST', path + '/snapshots', {});
      notify(`Snapshot ${s.name || s.id} of ${name} taken; its restore drill follows`, 'info');
    } catch (e) {
      notify(`Take snapshot: ${e.message}`);
    } finally {
      taking = false;
      reload();
    }
  }

  function restore(s) {
    return confirmByName({
      id: 'restore', name, button: 'Restore',
      text: `Restore cluster ${name}'s etcd to snapshot ${s.name || s.id} (${fmtTime(s.creationTimestamp)})? ` +
        'Its API servers and etcd members stop, every member is put back to the snapshot, and what was written since is lost.',
      onConfirm: async () => {
        await api('POST', `${path}?action=restore`, { snapshot: s.id });
        notify(`Restore of ${name} started`, 'info');
      },
    });
  }

  function verdict(s) {
    if (s.verification === 'verified') return h('span', { class: 'tag' }, `verified in ${fmtSeconds(s.drillSeconds)}`);
    if (s.verification === 'failed') return h('span', { class: 'tag warn', title: s.verifyError || '' }, `drill failed: ${s.verifyError || ''}`);
    return h('span', { class: 'muted' }, 'drill pending');
  }

  function render() {
    if (!cluster || cluster.imported) { replace(section); section.hidden = true; return; }
    section.hidden = false;
    const canTake = allows('snapshot') && !taking;
    const rows = list || [];
    replace(section,
      h('div', { class: 'toolbar' }, h('h2', {}, 'etcd snapshots'), h('span', { class: 'spacer' }),
        h('button', { id: 'take-snapshot', disabled: !canTake, title: canTake ? null : (taking ? 'taking…' : `not possible while the cluster is ${cluster.status}`), onclick: take },
          taking ? 'Taking snapshot…' : 'Take snapshot')),
      list === null ? h('p', { class: 'muted' }, 'Loading…') : rows.length === 0
        ? h('p', { class: 'muted' }, 'No snapshot yet: one is taken on the cluster\'s schedule and before every update, rotation and restore.')
        : h('table', { id: 'snapshot-table', class: 'grid' },
          h('thead', {}, h('tr', {}, ['Taken', 'Trigger', 'Size', 'Revision', 'Keys', 'Verification', ''].map((t) => h('th', {}, t)))),
          h('tbody', {}, rows.map((s) => h('tr', { 'data-snapshot': s.id, 'data-verification': s.verification, 'data-trigger': s.trigger },
            h('td', {}, fmtTime(s.creationTimestamp)), h('td', {}, s.trigger, s.pinned ? ' (pinned)' : ''),
            h('td', { class: 'num' }, `${(s.size / 1048576).toFixed(1)} MiB`), h('td', { class: 'num' }, String(s.revision)),
            h('td', { class: 'num' }, String(s.keyCount)), h('td', {}, verdict(s)),
            h('td', { class: 'actions' },
              h('button', { class: 'snapshot-download', onclick: () => download(`${path}/snapshots/${encodeURIComponent(s.id)}?download=1`, `${name}-${s.id}.db`).catch((e) => notify(`Download: ${e.message}`)) }, 'Download'),
              h('button', { class: 'snapshot-restore danger', disabled: !allows('restore'), title: allows('restore') ? null : `not possible while the cluster is ${cluster.status}`, onclick: () => restore(s) }, 'Restore')))))));
  }

  return {
    el: section,
    update(c) {
      const before = cluster ? (cluster.actions || []).join() + cluster.status : null;
      cluster = c;
      if (c.imported) { render(); return; }
      if (list === null || before !== (c.actions || []).join() + c.status) reload(); else render();
    },
    reload,
  };
}
