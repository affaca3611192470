// The document as a lazy WAI-ARIA tree: one bounded read opens it, containers that came back as
// stubs load on demand ({max_depth: 1, limit, offset, max_bytes}), long containers page with
// "Show more", and live changes refresh only the containers that list them, in place.

import { formatBytes, h, shortJson } from './dom.js';
import * as ptr from './pointer.js';

export const PAGE = 50;
const CHILD_BUDGET = 64 * 1024;

export const isStub = (value) => value !== null && typeof value === 'object' && !Array.isArray(value)
  && value.$stub === true && typeof value.pointer === 'string';
const typeOf = (value) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);

function containerSummary(type, count, size) {
  if (type !== 'array' && type !== 'object') return `${type} · ${formatBytes(size)} (open to read)`; // a long string
  const shape = type === 'array' ? `[${count ?? '?'}]` : `{${count ?? '?'}}`;
  return size ? `${shape} · ${formatBytes(size)}` : shape;
}

export class Tree {
  constructor({ read, onSelect, onError }) {
    this.read = read;
    this.onSelect = onSelect;
    this.onError = onError;
    this.items = new Map();
    this.selected = null;
    this.el = h('ul', { role: 'tree', class: 'tree', 'aria-label': 'Document tree' });
    this.el.addEventListener('keydown', (event) => this.onKey(event));
  }

  item(pointer) {
    const li = this.items.get(ptr.normalize(pointer));
    return li && li.isConnected ? li : null;
  }

  /** The first read: as much of the document as one bounded read returns. */
  async load(budget) {
    const data = await this.read('', { max_bytes: budget });
    this.items.clear();
    const root = this.makeItem('', 'document', null, 1);
    this.fill(root, data);
    this.el.replaceChildren(root);
    root.setAttribute('tabindex', '0');
    return data;
  }

  makeItem(pointer, key, value, level) {
    const li = h('li', { role: 'treeitem', 'data-ptr': pointer, 'aria-level': level, tabindex: '-1',
      'aria-selected': String(pointer === this.selected) });
    const twisty = h('span', { class: 'twisty', 'aria-hidden': 'true' });
    const row = h('div', { class: 'row' }, twisty, h('span', { class: 'key' }, key), h('span', { class: 'summary' }));
    li.append(row);
    row.addEventListener('click', (event) => {
      if (event.target === twisty) {
        this.toggle(li);
        return;
      }
      this.select(pointer, { focus: true, user: true });
    });
    row.addEventListener('dblclick', () => this.toggle(li));
    this.items.set(pointer, li);
    this.setValue(li, value);
    return li;
  }

  summary(li) {
    return li.querySelector(':scope > .row > .summary');
  }

  setValue(li, value) {
    const old = li.querySelector(':scope > ul');
    if (old) {
      this.forgetBelow(old);
      old.remove();
    }
    if (isStub(value)) {
      li.dataset.type = value.type;
      li.dataset.loaded = 'no';
      li.setAttribute('aria-expanded', 'false');
      this.summary(li).textContent = containerSummary(value.type, value.count, value.size_bytes);
    } else if (value !== null && typeof value === 'object') {
      const type = typeOf(value);
      const entries = type === 'array' ? value.map((item, i) => [String(i), item]) : Object.entries(value);
      li.dataset.type = type;
      li.dataset.loaded = 'yes';
      li.setAttribute('aria-expanded', 'true');
      this.summary(li).textContent = containerSummary(type, entries.length);
      const level = Number(li.getAttribute('aria-level')) + 1;
      li.append(h('ul', { role: 'group' },
        entries.map(([key, item]) => this.makeItem(ptr.child(li.dataset.ptr, key), key, item, level))));
    } else {
      li.dataset.type = typeOf(value);
      li.dataset.loaded = 'leaf';
      li.removeAttribute('aria-expanded');
      this.summary(li).textContent = shortJson(value, 80);
    }
  }

  forgetBelow(group) {
    for (const li of group.querySelectorAll('li[role=treeitem]')) {
      if (this.items.get(li.dataset.ptr) === li) this.items.delete(li.dataset.ptr);
    }
  }

  /**
   * Show a bounded read of a container under its item. `append`: after what is shown (the next
   * page); `changed`: pointers written meanwhile (items at or under them are rebuilt, the others
   * are kept as they are, expanded or not); `keepExpanded`: leave the item open or closed.
   */
  fill(li, data, { append = false, changed = [], keepExpanded = false } = {}) {
    const content = data.node_content;
    if (content === null || typeof content !== 'object' || isStub(content)) {
      this.setValue(li, content);
      return [];
    }
    const pointer = li.dataset.ptr;
    const type = data.node_type || typeOf(content);
    const start = data.offset || 0;
    const entries = type === 'array' ? content.map((item, i) => [String(start + i), item]) : Object.entries(content);
    let group = li.querySelector(':scope > ul');
    if (!group) {
      group = h('ul', { role: 'group' });
      li.append(group);
    }
    const previous = [...group.children].filter((child) => child.getAttribute('role') === 'treeitem');
    const level = Number(li.getAttribute('aria-level')) + 1;
    const reopen = [];
    const made = entries.map(([key, value]) => {
      const at = ptr.child(pointer, key);
      const old = this.items.get(at);
      if (old && old.parentElement === group) {
        const stale = changed.some((path) => ptr.within(at, path));
        if (!stale && isStub(value) && old.dataset.loaded === 'yes') {
          this.summary(old).textContent = containerSummary(value.type, value.count, value.size_bytes);
        } else {
          const wasOpen = old.getAttribute('aria-expanded') === 'true';
          this.setValue(old, value);
          if (wasOpen && isStub(value)) reopen.push(old); // rewritten while open: open it again, re-read
        }
        return old;
      }
      return this.makeItem(at, key, value, level);
    });
    const items = append ? [...previous, ...made] : made;
    for (const gone of previous) {
      if (!items.includes(gone)) {
        this.forgetBelow(gone);
        if (this.items.get(gone.dataset.ptr) === gone) this.items.delete(gone.dataset.ptr);
      }
    }
    group.replaceChildren(...items);
    if (data.next_offset !== null && data.next_offset !== undefined) {
      const shown = items.length;
      group.append(h('li', { class: 'more', role: 'none' }, h('button', {
        type: 'button', class: 'more-button',
        onclick: () => this.loadChildren(li, data.next_offset, true),
      }, `Show more (${shown} of ${data.total_count ?? '?'})`)));
    }
    li.dataset.type = type;
    li.dataset.loaded = 'yes';
    if (!keepExpanded) li.setAttribute('aria-expanded', 'true');
    this.summary(li).textContent = containerSummary(type, data.total_count ?? entries.length, data.node_size_bytes);
    return reopen;
  }

  async loadChildren(li, offset = 0, append = false, limit = PAGE, options = {}) {
    li.classList.add('loading');
    li.setAttribute('aria-busy', 'true');
    try {
      const data = await this.read(li.dataset.ptr, { max_depth: 1, limit, offset, max_bytes: CHILD_BUDGET });
      const reopen = this.fill(li, data, { append, ...options });
      for (const item of reopen) await this.loadChildren(item, 0);
      return data;
    } catch (error) {
      this.onError(error);
      return null;
    } finally {
      li.classList.remove('loading');
      li.removeAttribute('aria-busy');
    }
  }

  async expand(li) {
    if (!li.hasAttribute('aria-expanded')) return;
    if (li.dataset.type !== 'array' && li.dataset.type !== 'object') { // a long string left out: read it
      try {
        this.setValue(li, (await this.read(li.dataset.ptr, { max_bytes: CHILD_BUDGET })).node_content);
      } catch (error) {
        this.onError(error);
      }
      return;
    }
    if (li.dataset.loaded !== 'yes') await this.loadChildren(li, 0);
    else li.setAttribute('aria-expanded', 'true');
  }

  collapse(li) {
    if (li.hasAttribute('aria-expanded')) li.setAttribute('aria-expanded', 'false');
  }

  toggle(li) {
    if (li.getAttribute('aria-expanded') === 'true') this.collapse(li);
    else this.expand(li);
  }

  /** Open the containers down to `pointer` (as far as the loaded pages reach). */
  async reveal(pointer) {
    let at = '';
    for (const token of ptr.tokens(pointer)) {
      const li = this.item(at);
      if (!li) return;
      if (li.dataset.loaded !== 'yes' || li.getAttribute('aria-expanded') !== 'true') await this.expand(li);
      at = ptr.child(at, token);
    }
  }

  select(pointer, { focus = false, user = false } = {}) {
    const target = ptr.normalize(pointer);
    this.selected = target;
    for (const li of this.el.querySelectorAll('li[aria-selected=true]')) li.setAttribute('aria-selected', 'false');
    const li = this.item(target);
    if (li) {
      li.setAttribute('aria-selected', 'true');
      if (focus) this.focusItem(li);
    }
    if (user) this.onSelect(target);
  }

  focusItem(li) {
    for (const other of this.el.querySelectorAll('li[tabindex="0"]')) other.setAttribute('tabindex', '-1');
    li.setAttribute('tabindex', '0');
    li.focus({ preventScroll: false });
  }

  visibleItems() {
    return [...this.el.querySelectorAll('li[role=treeitem]')].filter((li) => li.offsetParent !== null);
  }

  onKey(event) {
    const li = event.target.closest('li[role=treeitem]');
    if (!li) return;
    const visible = this.visibleItems();
    const index = visible.indexOf(li);
    const move = (to) => {
      if (to) this.focusItem(to);
    };
    switch (event.key) {
      case 'ArrowDown': move(visible[index + 1]); break;
      case 'ArrowUp': move(visible[index - 1]); break;
      case 'Home': move(visible[0]); break;
      case 'End': move(visible[visible.length - 1]); break;
      case 'ArrowRight':
        if (li.getAttribute('aria-expanded') === 'false') this.expand(li);
        else if (li.getAttribute('aria-expanded') === 'true') move(li.querySelector(':scope > ul > li[role=treeitem]'));
        break;
      case 'ArrowLeft':
        if (li.getAttribute('aria-expanded') === 'true') this.collapse(li);
        else move(li.parentElement.closest('li[role=treeitem]'));
        break;
      case 'Enter':
      case ' ':
        this.select(li.dataset.ptr, { focus: true, user: true });
        break;
      default:
        return;
    }
    event.preventDefault();
  }

  /** The item that shows `pointer`: itself if visible, else its closest visible (collapsed) ancestor. */
  visibleFor(pointer) {
    let at = ptr.normalize(pointer);
    for (;;) {
      const li = this.item(at);
      if (li && li.offsetParent !== null) return li;
      if (at === '') return li;
      at = ptr.parent(at);
    }
  }

  /** Re-read the loaded containers that list what `paths` changed, and highlight the changes. */
  async refresh(paths, version) {
    const targets = new Map();
    for (const path of paths) {
      let at = ptr.parent(path);
      let li = this.item(at);
      while (!(li && li.dataset.loaded === 'yes') && at !== '') {
        at = ptr.parent(at);
        li = this.item(at);
      }
      if (!li || li.dataset.loaded !== 'yes') continue;
      if (!targets.has(at)) targets.set(at, []);
      targets.get(at).push(path);
    }
    const ordered = [...targets].sort((a, b) => a[0].length - b[0].length);
    for (const [at, changed] of ordered) {
      const li = this.item(at);
      if (!li) continue;
      const group = li.querySelector(':scope > ul');
      const shown = group ? group.querySelectorAll(':scope > li[role=treeitem]').length : 0;
      await this.loadChildren(li, 0, false, Math.max(PAGE, shown), { changed, keepExpanded: true });
    }
    for (const path of paths) {
      const li = this.visibleFor(path);
      if (!li) continue;
      li.classList.remove('changed');
      void li.offsetWidth; // restart the highlight's animation
      li.classList.add('changed');
      li.dataset.changedVersion = String(version);
      clearTimeout(li.changedTimer);
      li.changedTimer = setTimeout(() => li.classList.remove('changed'), 6000);
    }
  }

  markViolations(violations) {
    this.clearViolations();
    for (const violation of violations) {
      const li = this.visibleFor(violation.path) || this.item('');
      if (!li) continue;
      li.classList.add('invalid');
      li.setAttribute('aria-invalid', 'true');
      const row = li.querySelector(':scope > .row');
      row.append(h('span', { class: 'violation-note' }, violation.message));
    }
  }

  clearViolations() {
    for (const li of this.el.querySelectorAll('li.invalid')) {
      li.classList.remove('invalid');
      li.removeAttribute('aria-invalid');
      for (const note of li.querySelectorAll(':scope > .row > .violation-note')) note.remove();
    }
  }
}
