// The console's shell: the header, the banner for errors and notices, and
// a router on the URL's fragment (#/clusters, #/clusters/NAME, …), which
// mounts one view at a time and stops the one it replaces (its websockets
// and timers).
import { session, whenUnauthorized } from './api.js';
import { h, replace } from './dom.js';
import { loginView } from './login.js';
import { clustersView } from './clusters.js';
import { clusterView } from './cluster.js';
import { clusterFormView } from './clusterform.js';
import { importView } from './import.js';
import { usersView } from './users.js';
import { go, notify } from './nav.js';

const main = document.getElementById('main');
const top = document.getElementById('top');
let unmount = () => {};

function header() {
  if (!session.token) return replace(top);
  replace(top,
    h('a', { class: 'brand', href: '#/clusters' }, 'singlecloud'),
    h('nav', {},
      h('a', { href: '#/clusters', id: 'nav-clusters' }, 'Clusters'),
      session.admin ? h('a', { href: '#/users', id: 'nav-users' }, 'Users') : null),
    h('span', { class: 'whoami' },
      h('span', { id: 'whoami' }, session.user), session.admin ? ' (admin)' : ' (read only)',
      h('button', { id: 'logout', class: 'link', onclick: logout }, 'Log out')));
}

function logout() {
  session.clear();
  notify('');
  go('#/login');
}

// routes maps a fragment to its view; each view is (main, params) →
// cleanup.
const routes = [
  [/^#\/login$/, () => loginView],
  [/^#\/clusters\/?(?:\?.*)?$/, () => clustersView],
  [/^#\/create$/, () => (el) => clusterFormView(el, {})],
  [/^#\/import$/, () => importView],
  [/^#\/users$/, () => usersView],
  [/^#\/clusters\/([a-z0-9-]+)\/edit$/, (m) => (el) => clusterFormView(el, { name: m[1] })],
  [/^#\/clusters\/([a-z0-9-]+)$/, (m) => (el) => clusterView(el, m[1])],
];

function route() {
  unmount();
  unmount = () => {};
  let frag = location.hash || '#/clusters';
  if (!session.token && frag !== '#/login') {
    sessionStorage.setItem('sc.next', frag);
    frag = '#/login';
    history.replaceState(null, '', frag);
  }
  header();
  for (const [re, make] of routes) {
    const m = frag.match(re);
    if (m) {
      unmount = make(m)(main, m) || (() => {});
      return;
    }
  }
  replace(main, h('p', {}, 'No such page. ', h('a', { href: '#/clusters' }, 'Back to the clusters')));
}

whenUnauthorized((err) => {
  session.clear();
  notify(err.message);
  go('#/login');
});
window.addEventListener('hashchange', route);
route();
