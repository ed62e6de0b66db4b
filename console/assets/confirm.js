// confirmByName asks for a destructive step (delete a cluster, restore
// its etcd) in a modal dialog whose button is enabled only once the
// cluster's name is typed; onConfirm runs on that click. The promise
// settles when the dialog closes, whichever way.
import { h } from './dom.js';
import { notify } from './nav.js';

export function confirmByName({ id, text, name, button, onConfirm }) {
  return new Promise((resolve) => {
    const input = h('input', { id: 'confirm-name', 'aria-label': 'cluster name', autocomplete: 'off' });
    const ok = h('button', { id: 'confirm-' + id, class: 'danger', disabled: true }, button);
    const dlg = h('dialog', { id: id + '-dialog' },
      h('form', { method: 'dialog' },
        h('p', {}, text),
        h('label', {}, `Type ${name} to confirm`, input),
        h('div', { class: 'buttons' }, h('button', { value: 'cancel' }, 'Keep it'), ok)));
    input.addEventListener('input', () => { ok.disabled = input.value !== name; });
    ok.addEventListener('click', async (e) => {
      e.preventDefault();
      ok.disabled = true;
      try {
        await onConfirm();
      } catch (ex) {
        notify(`${button}: ${ex.message}`);
      }
      dlg.close();
    });
    dlg.addEventListener('close', () => { dlg.remove(); resolve(); });
    document.body.append(dlg);
    dlg.showModal();
    input.focus();
  });
}
