// The create and edit form of a cluster made by singlecloud: the cluster's
// SSH access, its nodes with their roles, labels and taints, and (on
// create) its network and shared endpoint. The API validates: every
// problem it finds is shown beside its field. Editing PUTs the cluster as
// read, with the form's changes: fields the form does not show are kept.
import { api, session } from './api.js';
import { h, replace } from './dom.js';
import { go, notify } from './nav.js';
import { clearFieldErrors, showFieldErrors } from './fielderrors.js';

const roles = ['controlplane', 'etcd', 'worker', 'edge'];
// The network plugins this build installs: validation.NetworkPlugins()
// (console/plugins_test.go fails when the two differ).
const NETWORK_PLUGINS = ['flannel', 'bridge'];
// The fields of a cluster the API shows but does not take back (a PUT
// with a changed one is refused): left out of what the form sends.
const readOnly = ['id', 'type', 'links', 'creationTimestamp', 'status', 'imported', 'reason', 'nodeCount', 'version', 'lastOperation', 'certificateWarning'];

export function clusterFormView(main, { name }) {
  if (!session.admin) {
    replace(main, h('p', {}, 'Only the admin creates and changes clusters. ', h('a', { href: '#/clusters' }, 'Back')));
    return;
  }
  const editing = Boolean(name);
  let original = null;
  let nodes = [{ name: '', address: '', roles: ['controlplane', 'etcd'], labels: '', taints: '' }];

  const input = (field, props = {}) => h('input', { 'data-field': field, id: 'f-' + field.replace(/\W+/g, '-'), ...props });
  const f = {
    name: input('name', { required: true, placeholder: 'lab', autocomplete: 'off', readonly: editing }),
    kubernetesVersion: input('kubernetesVersion', { placeholder: 'the newest this build installs', list: 'k8s-versions' }),
    sshUser: input('sshUser', { value: 'root', autocomplete: 'off' }),
    sshPort: input('sshPort', { type: 'number', min: 1, max: 65535, placeholder: '22' }),
    sshKey: h('textarea', { 'data-field': 'sshKey', id: 'f-sshKey', rows: 4, spellcheck: 'false', autocomplete: 'off',
      placeholder: editing ? 'leave empty to keep the cluster\'s key' : '-----BEGIN OPENSSH PRIVATE KEY-----' }),
    sshKeyFile: h('input', { type: 'file', id: 'f-sshKeyFile', 'aria-label': 'load the private key from a file' }),
    singleCloudAddress: input('singleCloudAddress', { placeholder: 'the ip:port the nodes reach singlecloud at', value: /^\d+\.\d+\.\d+\.\d+:\d+$/.test(location.host) ? location.host : '' }),
    plugin: h('select', { 'data-field': 'network.plugin', id: 'f-network-plugin' }, NETWORK_PLUGINS.map((p) => h('option', { value: p }, p))),
    vip: input('controlPlaneEndpoint.vip', { placeholder: 'optional: a free IPv4 address of the control-plane nodes\' network' }),
  };
  f.advanced = h('textarea', { 'data-field': 'advanced', id: 'f-advanced', rows: 4, spellcheck: 'false',
    placeholder: '{"images": {"kubelet": "registry.local/zdnscloud/kubernetes:v1.36.3"}, "nodes": [{"name": "n1", "dockerSocket": "/run/docker.sock"}]}' });
  f.sshKeyFile.addEventListener('change', async () => {
    const file = f.sshKeyFile.files[0];
    if (file) f.sshKey.value = (await file.text()).trim();
  });

  const nodeBody = h('tbody', { id: 'node-rows' });
  const general = h('div', { id: 'form-errors', class: 'notice error', hidden: true });
  // Editing waits for the cluster to be read: the form sends it back.
  const submit = h('button', { id: 'submit-cluster', type: 'submit', class: 'primary', disabled: editing }, editing ? 'Save changes' : 'Create cluster');

  function renderNodes() {
    replace(nodeBody, nodes.map((n, i) => {
      const bind = (key, props = {}) => {
        const el = h('input', { 'data-field': `nodes[${i}].${key}`, value: n[key], ...props });
        el.addEventListener('input', () => { n[key] = el.value; });
        return el;
      };
      return h('tr', { 'data-field': `nodes[${i}]`, 'data-node-row': i },
        h('td', {}, bind('name', { placeholder: 'n1', 'aria-label': `node ${i + 1} name`, readonly: editing && n.existing })),
        h('td', {}, bind('address', { placeholder: '10.0.0.11', 'aria-label': `node ${i + 1} address` })),
        h('td', {}, h('span', { class: 'roles', 'data-field': `nodes[${i}].roles` }, roles.map((r) => {
          const cb = h('input', { type: 'checkbox', value: r, checked: n.roles.includes(r), 'aria-label': `node ${i + 1} ${r}` });
          cb.addEventListener('change', () => { n.roles = cb.checked ? [...n.roles, r] : n.roles.filter((x) => x !== r); });
          return h('label', { class: 'inline' }, cb, r);
        }))),
        h('td', {}, bind('labels', { placeholder: 'tier=web, zone=a', 'aria-label': `node ${i + 1} labels` })),
        h('td', {}, bind('taints', { placeholder: 'key=value:NoSchedule', 'aria-label': `node ${i + 1} taints` })),
        h('td', {}, h('button', { type: 'button', class: 'link danger', 'aria-label': `remove node ${i + 1}`,
          onclick: () => { nodes.splice(i, 1); renderNodes(); } }, 'Remove')));
    }));
  }

  const form = h('form', { id: 'cluster-form', class: 'card', novalidate: true, onsubmit: (e) => { e.preventDefault(); send(); } },
    h('h1', {}, editing ? `Edit cluster ${name}` : 'Create a cluster'),
    general,
    h('div', { class: 'cols' },
      h('label', {}, 'Name', f.name),
      editing ? null : h('label', {}, 'Kubernetes version', f.kubernetesVersion,
        h('datalist', { id: 'k8s-versions' }, h('option', { value: 'v1.37.2' }), h('option', { value: 'v1.36.3' }))),
      h('label', {}, 'singlecloud address (for the nodes)', f.singleCloudAddress),
      h('label', {}, 'SSH user', f.sshUser),
      h('label', {}, 'SSH port', f.sshPort),
      editing ? null : h('label', {}, 'Network plugin', f.plugin),
      editing ? null : h('label', {}, 'Shared API endpoint (VIP)', f.vip)),
    h('label', {}, 'SSH private key', f.sshKey, f.sshKeyFile),
    h('h2', {}, 'Nodes'),
    h('div', { 'data-field': 'nodes' },
      h('table', { class: 'grid nodes' },
        h('thead', {}, h('tr', {}, ['Name', 'Address', 'Roles', 'Labels', 'Taints', ''].map((t) => h('th', {}, t)))),
        nodeBody),
      h('button', { type: 'button', id: 'add-node', onclick: () => {
        nodes.push({ name: '', address: '', roles: ['worker'], labels: '', taints: '' });
        renderNodes();
      } }, '+ Add node')),
    h('details', { id: 'advanced' }, h('summary', {}, 'Advanced settings'),
      h('label', {}, 'More of the cluster\'s fields, as JSON: merged over the form; "nodes" entries are merged into the nodes of the same name', f.advanced)),
    h('div', { class: 'buttons' }, h('a', { class: 'button', href: editing ? `#/clusters/${name}` : '#/clusters' }, 'Cancel'), submit));

  async function send() {
    clearFieldErrors(form, general);
    const local = [];
    const body = editing ? Object.fromEntries(Object.entries(original).filter(([k]) => !readOnly.includes(k))) : {};
    body.name = f.name.value.trim();
    body.sshUser = f.sshUser.value.trim();
    if (f.sshPort.value) body.sshPort = Number(f.sshPort.value);
    else if (!editing) delete body.sshPort;
    if (f.sshKey.value.trim()) body.sshKey = f.sshKey.value.trim() + '\n';
    else delete body.sshKey;
    body.singleCloudAddress = f.singleCloudAddress.value.trim();
    if (!editing) {
      if (f.kubernetesVersion.value.trim()) body.kubernetesVersion = f.kubernetesVersion.value.trim();
      body.network = { plugin: f.plugin.value };
      if (f.vip.value.trim()) body.controlPlaneEndpoint = { vip: f.vip.value.trim() };
    }
    const before = new Map(((original && original.nodes) || []).map((n) => [n.name, n]));
    body.nodes = nodes.map((n, i) => {
      // A node kept from the cluster keeps its other settings, except those
      // the server filled in from what the form changes: its internal
      // address (from its address) and its SSH user and port (from the
      // cluster's), which it fills in again. A new row is a new node, even
      // under a removed one's name.
      const prev = n.existing ? before.get(n.name) : null;
      const out = { ...(prev || {}), name: n.name.trim(), address: n.address.trim(), roles: n.roles.slice() };
      if (prev) {
        if (out.internalAddress === prev.address || out.address !== prev.address) delete out.internalAddress;
        if (out.sshUser === original.sshUser) delete out.sshUser;
        if (Number(out.sshPort) === Number(original.sshPort)) delete out.sshPort;
      }
      const labels = parseLabels(n.labels, `nodes[${i}].labels`, local);
      if (labels) out.labels = labels; else delete out.labels;
      const taints = parseTaints(n.taints, `nodes[${i}].taints`, local);
      if (taints) out.taints = taints; else delete out.taints;
      return out;
    });
    mergeAdvanced(body, f.advanced.value, local);
    if (local.length) {
      showFieldErrors(form, general, local);
      if (local.some((p) => p.field === 'advanced')) form.querySelector('#advanced').open = true;
      return;
    }
    submit.disabled = true;
    try {
      if (editing) await api('PUT', `/clusters/${encodeURIComponent(name)}`, body);
      else await api('POST', '/clusters', body);
      notify(editing ? `Updating cluster ${body.name}` : `Creating cluster ${body.name}`, 'info');
      go('#/clusters/' + encodeURIComponent(body.name));
    } catch (e) {
      if (e.fields.length) showFieldErrors(form, general, e.fields);
      else { general.hidden = false; replace(general, e.message); }
      const first = form.querySelector('[aria-invalid]');
      if (first) first.focus();
    } finally {
      submit.disabled = editing && !original;
    }
  }

  replace(main, h('p', { class: 'crumbs' }, h('a', { href: '#/clusters' }, '‹ Clusters')), form);
  if (!editing) { renderNodes(); f.name.focus(); return; }
  api('GET', `/clusters/${encodeURIComponent(name)}`).then((c) => {
    original = c;
    f.name.value = name;
    f.sshUser.value = c.sshUser || '';
    f.sshPort.value = c.sshPort || '';
    f.singleCloudAddress.value = c.singleCloudAddress || '';
    nodes = (c.nodes || []).map((n) => ({
      name: n.name, address: n.address, roles: (n.roles || []).slice(), existing: true,
      labels: Object.entries(n.labels || {}).map(([k, v]) => `${k}=${v}`).join(', '),
      taints: (n.taints || []).map((t) => `${t.key}${t.value ? '=' + t.value : ''}:${t.effect}`).join(', '),
    }));
    renderNodes();
    submit.disabled = false;
  }).catch((e) => { general.hidden = false; replace(general, `Cannot read cluster ${name}: ${e.message}`); });
}

// parseLabels reads "k=v, k2=v2" into an object (null when empty); a
// piece without "=" is a problem of field.
function parseLabels(text, field, problems) {
  const out = {};
  let any = false;
  for (const piece of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const i = piece.indexOf('=');
    if (i <= 0) { problems.push({ field, reason: `"${piece}" is not key=value` }); continue; }
    out[piece.slice(0, i).trim()] = piece.slice(i + 1).trim();
    any = true;
  }
  return any ? out : null;
}

// parseTaints reads "key=value:Effect, key:Effect" into taints (null when
// empty); a piece without ":Effect" is a problem of field.
function parseTaints(text, field, problems) {
  const out = [];
  for (const piece of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const c = piece.lastIndexOf(':');
    if (c <= 0) { problems.push({ field, reason: `"${piece}" is not key=value:Effect` }); continue; }
    const kv = piece.slice(0, c);
    const i = kv.indexOf('=');
    const t = { key: i < 0 ? kv.trim() : kv.slice(0, i).trim(), effect: piece.slice(c + 1).trim() };
    if (i >= 0) t.value = kv.slice(i + 1).trim();
    out.push(t);
  }
  return out.length ? out : null;
}

// mergeAdvanced merges the advanced settings (a JSON object) over body:
// each top-level field replaces the form's, and each of its "nodes" is
// merged into the node of the same name. A problem is one of the field
// "advanced".
function mergeAdvanced(body, text, problems) {
  if (!text.trim()) return;
  let adv;
  try { adv = JSON.parse(text); } catch (e) { problems.push({ field: 'advanced', reason: `not JSON: ${e.message}` }); return; }
  if (!adv || typeof adv !== 'object' || Array.isArray(adv)) { problems.push({ field: 'advanced', reason: 'must be a JSON object of cluster fields' }); return; }
  for (const [k, v] of Object.entries(adv)) {
    if (k !== 'nodes') { body[k] = v; continue; }
    if (!Array.isArray(v)) { problems.push({ field: 'advanced', reason: '"nodes" must be a list of {"name": …, more fields}' }); continue; }
    for (const n of v) {
      const target = n && body.nodes.find((b) => b.name === n.name);
      if (!target) { problems.push({ field: 'advanced', reason: `"nodes" names ${JSON.stringify(n && n.name)}, which is not a node of the form` }); continue; }
      Object.assign(target, n);
    }
  }
}
