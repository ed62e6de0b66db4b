// Field errors: the API's 422 lists each invalid field by its JSON path
// (nodes[1].taints[0].effect); each is shown beside the form element that
// holds that path, or the closest enclosing one (nodes[1].taints, then
// nodes[1], then nodes), and the ones no element holds above the form.
import { h, replace } from './dom.js';

// parentPath drops a path's last segment: a .field, an [index] or a
// ["key"]; '' when nothing is left.
export function parentPath(p) {
  if (p.endsWith('"]')) {
    const i = p.lastIndexOf('["');
    return i > 0 ? p.slice(0, i) : '';
  }
  if (p.endsWith(']')) {
    const i = p.lastIndexOf('[');
    return i > 0 ? p.slice(0, i) : '';
  }
  const i = p.lastIndexOf('.');
  return i > 0 ? p.slice(0, i) : '';
}

// clearFieldErrors removes every shown field error of form.
export function clearFieldErrors(form, general) {
  form.querySelectorAll('.field-error[data-for]').forEach((e) => e.remove());
  form.querySelectorAll('[aria-invalid]').forEach((e) => e.removeAttribute('aria-invalid'));
  replace(general);
  general.hidden = true;
}

// showFieldErrors puts each of fields ({field, reason}) beside its element
// (one with data-field equal to the path or an enclosing one) and the rest
// in general; it returns how many were placed beside a field.
export function showFieldErrors(form, general, fields) {
  let placed = 0;
  const rest = [];
  for (const f of fields) {
    let p = f.field || '';
    let el = null;
    while (p && !(el = form.querySelector(`[data-field="${CSS.escape(p)}"]`))) p = parentPath(p);
    if (!el) { rest.push(f); continue; }
    placed++;
    const input = el.matches('input,select,textarea') ? el : el.querySelector('input,select,textarea');
    if (input) input.setAttribute('aria-invalid', 'true');
    const msg = h('div', { class: 'field-error', 'data-for': f.field, role: 'alert' }, f.field === p ? f.reason : `${f.field}: ${f.reason}`);
    (el.matches('input,select,textarea') ? el.parentElement : el).append(msg);
  }
  if (rest.length) {
    general.hidden = false;
    replace(general, h('ul', {}, rest.map((f) => h('li', { class: 'field-error', 'data-for': f.field || '' }, f.field ? `${f.field}: ${f.reason}` : f.reason))));
  }
  return placed;
}
