// Importing a cluster by its kubeconfig: only inline credentials are
// accepted (the API refuses exec plugins, auth providers and file paths,
// naming the field), so the file is read here and sent as text.
import { api, session } from './api.js';
import { h, replace } from './dom.js';
import { go, notify } from './nav.js';
import { clearFieldErrors, showFieldErrors } from './fielderrors.js';

export function importView(main) {
  if (!session.admin) {
    replace(main, h('p', {}, 'Only the admin imports clusters. ', h('a', { href: '#/clusters' }, 'Back')));
    return;
  }
  const name = h('input', { id: 'import-name', 'data-field': 'name', required: true, autocomplete: 'off' });
  const kc = h('textarea', { id: 'import-kubeconfig', 'data-field': 'kubeconfig', rows: 12, spellcheck: 'false',
    placeholder: 'kubectl config view --raw --minify --flatten' });
  const file = h('input', { type: 'file', id: 'import-file', 'aria-label': 'load the kubeconfig from a file' });
  file.addEventListener('change', async () => { if (file.files[0]) kc.value = await file.files[0].text(); });
  const general = h('div', { id: 'form-errors', class: 'notice error', hidden: true });
  const submit = h('button', { id: 'submit-import', type: 'submit', class: 'primary' }, 'Import');
  const form = h('form', { id: 'import-form', class: 'card', novalidate: true, onsubmit: async (e) => {
    e.preventDefault();
    clearFieldErrors(form, general);
    submit.disabled = true;
    try {
      await api('POST', '/clusters?action=import', { name: name.value.trim(), kubeconfig: kc.value });
      notify(`Importing cluster ${name.value.trim()}`, 'info');
      go('#/clusters/' + encodeURIComponent(name.value.trim()));
    } catch (ex) {
      if (!ex.fields.length || !showFieldErrors(form, general, ex.fields)) {
        if (!ex.fields.length) { general.hidden = false; replace(general, ex.message); }
      }
    } finally {
      submit.disabled = false;
    }
  } },
  h('h1', {}, 'Import a cluster'), general,
  h('label', {}, 'Name', name),
  h('label', {}, 'Kubeconfig (inline credentials only)', kc, file),
  h('div', { class: 'buttons' }, h('a', { class: 'button', href: '#/clusters' }, 'Cancel'), submit));
  replace(main, h('p', { class: 'crumbs' }, h('a', { href: '#/clusters' }, '‹ Clusters')), form);
  name.focus();
}
