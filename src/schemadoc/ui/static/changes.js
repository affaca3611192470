// RFC 6902 patches as readable change lists.

import { h, shortJson } from './dom.js';
import { label } from './pointer.js';

const MAX_SHOWN = 200;

export function describe(op) {
  const path = h('code', { class: 'path' }, label(op.path));
  switch (op.op) {
    case 'add': return ['Added ', path, ' = ', h('code', { class: 'value' }, shortJson(op.value))];
    case 'remove': return ['Removed ', path];
    case 'replace': return ['Changed ', path, ' to ', h('code', { class: 'value' }, shortJson(op.value))];
    case 'move': return ['Moved ', h('code', { class: 'path' }, label(op.from)), ' to ', path];
    case 'copy': return ['Copied ', h('code', { class: 'path' }, label(op.from)), ' to ', path];
    case 'test': return ['Checked ', path, ' is ', h('code', { class: 'value' }, shortJson(op.value))];
    default: return [String(op.op), ' ', path];
  }
}

export function changeList(patch, { onPick } = {}) {
  const ops = patch || [];
  if (!ops.length) return h('p', { class: 'empty' }, 'No change to the content.');
  const list = h('ul', { class: 'changes' }, ops.slice(0, MAX_SHOWN).map((op) => h('li', {
    class: `op-${op.op}`, 'data-path': op.path,
  }, describe(op), onPick ? h('button', { type: 'button', class: 'link', onclick: () => onPick(op.path) }, 'show') : '')));
  if (ops.length > MAX_SHOWN) list.append(h('li', { class: 'more' }, `…and ${ops.length - MAX_SHOWN} more operations`));
  return list;
}

/** One journal entry in a sentence: its operation and the places it wrote. */
export function entrySummary(entry) {
  const paths = [...new Set((entry.patch || []).map((op) => label(op.path)))];
  const shown = paths.slice(0, 3).join(', ') + (paths.length > 3 ? ` and ${paths.length - 3} more` : '');
  return shown ? `${entry.op} ${shown}` : entry.op;
}
