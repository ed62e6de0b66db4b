// Navigation and notices, shared by every view.
import { h, replace } from './dom.js';

// notify shows a message above the page (kind 'error' or 'info'); an
// empty message hides it.
export function notify(message, kind = 'error') {
  const banner = document.getElementById('banner');
  banner.hidden = !message;
  banner.className = 'banner banner-' + kind;
  replace(banner, message ? h('span', { id: 'banner-text' }, message) : '',
    message ? h('button', { class: 'close link', 'aria-label': 'dismiss', onclick: () => notify('') }, '×') : null);
}

// go moves to a view by its fragment (the same view again re-mounts it).
export function go(fragment) {
  if (location.hash === fragment) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = fragment;
}
