// Users and their grants (admin only): each grant gives read access to a
// cluster, in one namespace or all of them.
import { api, session } from './api.js';
import { h, replace } from './dom.js';
import { notify } from './nav.js';
import { sha1Hex } from './sha1.js';
import { clearFieldErrors, showFieldErrors } from './fielderrors.js';

export function usersView(main) {
  if (!session.admin) {
    replace(main, h('p', {}, 'Only the admin manages users. ', h('a', { href: '#/clusters' }, 'Back')));
    return;
  }
  const list = h('tbody', { id: 'user-rows' });
  const grantsText = (u) => (u.projects || []).map((p) => `${p.cluster}/${p.namespace === '_all_namespaces' ? '*' : p.namespace}`).join(', ');

  async function load() {
    try {
      const res = await api('GET', '/users');
      replace(list, (res.data || []).map((u) => {
        const grants = h('input', { value: grantsText(u), 'aria-label': `grants of ${u.name}`, placeholder: 'cluster/namespace, cluster/*', disabled: u.name === 'admin' });
        return h('tr', { 'data-user': u.name },
          h('td', {}, u.name),
          h('td', {}, u.name === 'admin' ? h('span', { class: 'muted' }, 'everything') : grants),
          h('td', {}, u.name === 'admin' ? null : [
            h('button', { class: 'grant-save', onclick: async () => {
              try {
                await api('PUT', `/users/${encodeURIComponent(u.name)}`, { name: u.name, projects: parseGrants(grants.value) });
                notify(`Grants of ${u.name} saved`, 'info');
                load();
              } catch (e) { notify(`Grants of ${u.name}: ${e.message}`); }
            } }, 'Save grants'),
            h('button', { class: 'danger user-delete', onclick: async () => {
              if (!confirm(`Delete user ${u.name}? Their tokens stop working at once.`)) return;
              try { await api('DELETE', `/users/${encodeURIComponent(u.name)}`); load(); } catch (e) { notify(`Delete ${u.name}: ${e.message}`); }
            } }, 'Delete')]));
      }));
    } catch (e) {
      notify(`Cannot list the users: ${e.message}`);
    }
  }

  const name = h('input', { id: 'user-name', 'data-field': 'name', autocomplete: 'off' });
  const pw = h('input', { id: 'user-password', 'data-field': 'password', type: 'password', autocomplete: 'new-password' });
  const pw2 = h('input', { id: 'user-password2', type: 'password', autocomplete: 'new-password' });
  const grants = h('input', { id: 'user-grants', 'data-field': 'projects', placeholder: 'cluster/namespace, cluster/*' });
  const general = h('div', { class: 'notice error', hidden: true });
  const form = h('form', { id: 'user-form', class: 'card', novalidate: true, onsubmit: async (e) => {
    e.preventDefault();
    clearFieldErrors(form, general);
    if (pw.value !== pw2.value) { showFieldErrors(form, general, [{ field: 'password', reason: 'the two passwords differ' }]); return; }
    if (!pw.value) { showFieldErrors(form, general, [{ field: 'password', reason: 'is required' }]); return; }
    try {
      await api('POST', '/users', { name: name.value.trim(), password: await sha1Hex(pw.value), projects: parseGrants(grants.value) });
      notify(`User ${name.value.trim()} created`, 'info');
      form.reset();
      load();
    } catch (ex) {
      if (ex.fields.length) showFieldErrors(form, general, ex.fields);
      else { general.hidden = false; replace(general, ex.message); }
    }
  } },
  h('h2', {}, 'New user'), general,
  h('div', { class: 'cols' },
    h('label', {}, 'Name', name), h('label', {}, 'Password', pw), h('label', {}, 'Password again', pw2),
    h('label', {}, 'Grants', grants)),
  h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'primary', id: 'create-user' }, 'Create user')));

  replace(main, h('h1', {}, 'Users'),
    h('section', { class: 'card' }, h('table', { id: 'users', class: 'grid' },
      h('thead', {}, h('tr', {}, ['Name', 'Grants (read access)', ''].map((t) => h('th', {}, t)))), list)),
    form);
  load();
}

// parseGrants reads "cluster/namespace, cluster/*" into projects; a bare
// cluster or "*" grants every namespace.
function parseGrants(text) {
  return text.split(',').map((s) => s.trim()).filter(Boolean).map((g) => {
    const [cluster, ns] = g.split('/');
    return { cluster: cluster.trim(), namespace: !ns || ns.trim() === '*' ? '_all_namespaces' : ns.trim() };
  });
}
