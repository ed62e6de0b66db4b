// The login view: the password's SHA-1 digest is what the API takes; the
// token it answers is kept for this tab only.
import { api, session } from './api.js';
import { h, replace } from './dom.js';
import { sha1Hex } from './sha1.js';
import { go, notify } from './nav.js';

export function loginView(main) {
  const user = h('input', { id: 'login-user', name: 'username', autocomplete: 'username', required: true, value: 'admin' });
  const pw = h('input', { id: 'login-password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const err = h('p', { id: 'login-error', class: 'field-error', role: 'alert' });
  const submit = h('button', { id: 'login-submit', type: 'submit', class: 'primary' }, 'Log in');
  const form = h('form', { class: 'card login', onsubmit: async (e) => {
    e.preventDefault();
    replace(err);
    submit.disabled = true;
    try {
      const name = user.value.trim();
      const digest = await sha1Hex(pw.value);
      const res = await api('POST', `/users/${encodeURIComponent(name)}?action=login`, { password: digest }, { anonymous: true });
      session.set(name, res.token);
      notify('');
      const next = sessionStorage.getItem('sc.next');
      sessionStorage.removeItem('sc.next');
      go(next && next !== '#/login' ? next : '#/clusters');
    } catch (ex) {
      replace(err, ex.message);
    } finally {
      submit.disabled = false;
      pw.value = '';
    }
  } },
  h('h1', {}, 'singlecloud'),
  h('label', {}, 'User', user),
  h('label', {}, 'Password', pw),
  err, submit);
  replace(main, form);
  (user.value ? pw : user).focus();
}
