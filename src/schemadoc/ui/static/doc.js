// One document: the lazy tree, breadcrumbs, the selected node (edit, preview, history, outline),
// its schema, and the live event stream keeping all of it current.

import { api, errorBox, followEvents } from './api.js';
import { changeList, entrySummary } from './changes.js';
import { formatBytes, formatTime, h, shortJson } from './dom.js';
import { markdownFragment } from './markdown.js';
import * as ptr from './pointer.js';
import { navigate, url } from './router.js';
import { Tree } from './tree.js';

const ROOT_BUDGET = 16 * 1024; // the first read: a compact first view even of a 100 MB document
const NODE_BUDGET = 100000;
const RENDER_BUDGET = 100000;
const SMALL_DOCUMENT = 1 << 20; // below this, the timeline may show version 1 (the whole initial document)
const TABS = [['value', 'Value'], ['preview', 'Preview'], ['history', 'History'], ['outline', 'Outline']];
const CONSTRAINTS = ['type', 'enum', 'const', 'format', 'pattern', 'minLength', 'maxLength', 'minimum', 'maximum',
  'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minItems', 'maxItems', 'uniqueItems', 'minProperties',
  'maxProperties', 'required', 'default', 'additionalProperties'];

/** Who made the versions a diff spans (names as text, like every content), or nothing from a server without it. */
function diffActors(actors) {
  if (!actors || !Array.isArray(actors.names)) return '';
  const names = actors.names.flatMap((name, index) => [index ? ', ' : '', h('b', {}, name)]);
  return h('p', { class: 'actor', id: 'diff-actors', title: 'who made the versions between the two (the token or door they came with)' },
    actors.names.length ? ['by ', names] : 'no recorded actor',
    actors.complete ? '' : ` (and whoever made versions after ${actors.through_version}: see the history)`);
}

function lastToken(pointer) {
  const tokens = ptr.tokens(pointer);
  return tokens.length ? tokens[tokens.length - 1] : '';
}

/** Does a write at `op` change what `node` holds or where it is? */
function touches(op, node) {
  const paths = [op.path, op.from].filter((p) => p !== undefined).map(ptr.normalize);
  return paths.some((p) => ptr.within(p, node) || ptr.within(node, p)
    || (op.op !== 'replace' && op.op !== 'test' && /^([0-9]+|-)$/.test(lastToken(p)) && ptr.within(node, ptr.parent(p))));
}

function editorKind(schema, value) {
  const types = [].concat(schema.type || []);
  const scalar = value === null || typeof value !== 'object';
  if (Array.isArray(schema.enum) && scalar && schema.enum.some((item) => item === value)) return 'enum';
  if (typeof value === 'boolean' && (types.includes('boolean') || !types.length)) return 'boolean';
  if (typeof value === 'number' && (types.includes('number') || types.includes('integer'))) return 'number';
  if (typeof value === 'string' && types.includes('string')) return 'string';
  return 'json';
}

export class DocumentView {
  constructor(root, docId) {
    this.root = root;
    this.docId = docId;
    this.version = 0;
    this.pointer = '';
    this.viewVersion = null;
    this.tab = 'value';
    this.panelSeq = 0;
    this.nodeRead = null;
    this.dirty = false;
    this.schemas = new Map();
    this.written = new Set(); // versions this page wrote
    this.pendingWrites = 0; // writes sent, not answered yet
    this.queue = Promise.resolve();
    this.tree = new Tree({
      read: (pointer, query) => this.read(pointer, query),
      onSelect: (pointer) => this.select(pointer),
      onError: (error) => this.notice(errorBox(error, 'Part of the document could not be read')),
    });
  }

  path(sub = '') {
    return `documents/${encodeURIComponent(this.docId)}${sub}`;
  }

  read(pointer, query = {}) {
    return api(this.path(), { query: { path: ptr.asPath(pointer), at_version: this.viewVersion ?? undefined, ...query } });
  }

  // -- layout and addresses ----------------------------------------------------------------

  build() {
    this.versionBadge = h('span', { class: 'badge', id: 'version', title: 'The server\'s current version' });
    this.liveState = h('span', { class: 'live-state', id: 'live-state', 'data-state': 'connecting' }, 'connecting…');
    this.crumbs = h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumbs' });
    this.banner = h('div', { class: 'banner', id: 'banner' });
    this.notices = h('div', { class: 'notices', id: 'notices', 'aria-live': 'polite' });
    this.panel = h('div', { class: 'panel', id: 'panel', role: 'tabpanel' });
    this.schemaPane = h('aside', { class: 'schema-pane', id: 'schema', 'aria-label': 'Schema of the selected node' });
    this.tabButtons = TABS.map(([name, text]) => h('button', {
      type: 'button', role: 'tab', id: `tab-${name}`, 'data-tab': name,
      onclick: () => this.setTab(name),
    }, text));
    this.root.replaceChildren(h('section', { class: 'doc-view' },
      h('div', { class: 'doc-bar' },
        h('h1', { class: 'doc-id mono' }, this.docId),
        this.versionBadge, this.liveState,
        h('div', { class: 'actions' },
          h('button', { type: 'button', id: 'next-incomplete', onclick: () => this.nextIncomplete() }, 'Next incomplete'),
          h('button', { type: 'button', id: 'show-outline', onclick: () => this.setTab('outline') }, 'Outline'))),
      this.banner,
      h('div', { class: 'panes' },
        h('nav', { class: 'tree-pane', 'aria-label': 'Document tree' }, this.tree.el),
        h('section', { class: 'node-pane', 'aria-label': 'Selected node' },
          this.crumbs, h('div', { class: 'tabs', role: 'tablist' }, this.tabButtons), this.notices, this.panel),
        this.schemaPane)));
  }

  applyParams(params) {
    this.pointer = ptr.normalize(params.get('pointer') || '');
    const version = Number.parseInt(params.get('version') || '', 10);
    this.viewVersion = Number.isFinite(version) && version > 0 ? version : null;
    const tab = params.get('tab');
    this.tab = TABS.some(([name]) => name === tab) ? tab : 'value';
  }

  address({ viewVersion = this.viewVersion } = {}) {
    return url(`documents/${encodeURIComponent(this.docId)}`, {
      pointer: this.pointer || null, version: viewVersion, tab: this.tab === 'value' ? null : this.tab,
    });
  }

  async start(params) {
    this.build();
    this.applyParams(params);
    document.title = `${this.docId} · schemadoc`;
    if (!(await this.loadTree())) return;
    performance.mark('schemadoc:tree'); // benchmarks/ui.py reads these marks
    if (this.viewVersion !== null) {
      try {
        this.noteVersion((await api(this.path(), { query: { path: '/', max_depth: 0 } })).version);
      } catch { /* the stream tells the current version */ }
    }
    this.live = followEvents(this.docId, this.version, (kind, data) => this.onEvent(kind, data),
      (state, detail) => this.onStreamState(state, detail));
    await this.show();
    performance.mark('schemadoc:node');
  }

  async loadTree() {
    try {
      const data = await this.tree.load(ROOT_BUDGET);
      this.rootSize = data.node_size_bytes;
      if (this.viewVersion === null) this.noteVersion(data.version);
      this.showBanner();
      return true;
    } catch (error) {
      this.panel.replaceChildren(errorBox(error, 'This document cannot be shown'));
      if (error.code === 'document-not-found' && error.details.deleted) {
        this.panel.append(h('button', { type: 'button', id: 'undelete', onclick: async () => {
          try {
            await api(this.path('/undelete'), { method: 'POST' });
            location.reload();
          } catch (failure) {
            this.panel.append(errorBox(failure));
          }
        } }, 'Undelete this document'));
      }
      return false;
    }
  }

  async update(params) {
    const before = { pointer: this.pointer, viewVersion: this.viewVersion, tab: this.tab };
    this.applyParams(params);
    if (before.viewVersion !== this.viewVersion) {
      if (await this.loadTree()) await this.show();
    } else if (before.pointer !== this.pointer || before.tab !== this.tab) {
      await this.show();
    }
  }

  destroy() {
    if (this.live) this.live.stop();
  }

  select(pointer) {
    this.pointer = ptr.normalize(pointer);
    navigate(this.address());
    this.show();
  }

  setTab(tab) {
    this.tab = tab;
    navigate(this.address());
    this.show();
  }

  openVersion(version) {
    navigate(this.address({ viewVersion: version })); // update() reloads the tree at that version
  }

  async show() {
    await this.tree.reveal(this.pointer);
    this.tree.select(this.pointer);
    this.renderCrumbs();
    for (const button of this.tabButtons) button.setAttribute('aria-selected', String(button.dataset.tab === this.tab));
    this.showSchema(this.pointer);
    await this.renderPanel();
  }

  renderCrumbs() {
    const parts = [h('button', { type: 'button', class: 'crumb', 'data-ptr': '', onclick: () => this.select('') }, 'document')];
    let at = '';
    for (const token of ptr.tokens(this.pointer)) {
      at = ptr.child(at, token);
      const target = at;
      parts.push(h('span', { class: 'sep', 'aria-hidden': 'true' }, '/'),
        h('button', { type: 'button', class: 'crumb', 'data-ptr': target, onclick: () => this.select(target) }, token));
    }
    parts[parts.length - 1].setAttribute('aria-current', 'location');
    this.crumbs.replaceChildren(...parts);
  }

  showBanner() {
    if (this.viewVersion === null) {
      this.banner.replaceChildren();
      this.banner.hidden = true;
      return;
    }
    this.banner.hidden = false;
    this.banner.replaceChildren(h('div', { class: 'past' },
      h('strong', {}, `Version ${this.viewVersion}, read-only.`),
      ' The tree and the node show the document as it was then. ',
      h('button', { type: 'button', id: 'back-to-live', onclick: () => this.openVersion(null) }, 'Back to the live document'),
      h('button', { type: 'button', onclick: () => this.previewRevert(this.viewVersion) }, 'Revert to this version…')));
  }

  noteVersion(version) {
    if (typeof version === 'number' && version > this.version) this.version = version;
    this.versionBadge.dataset.version = String(this.version);
    this.versionBadge.textContent = this.viewVersion === null ? `version ${this.version}`
      : `viewing version ${this.viewVersion} of ${this.version}`;
  }

  notice(content, { id, kind = 'info' } = {}) {
    if (id) this.notices.querySelector(`[data-notice="${id}"]`)?.remove();
    const close = h('button', { type: 'button', class: 'close', 'aria-label': 'Dismiss', onclick: () => box.remove() }, '×');
    const box = h('div', { class: `notice ${kind}`, 'data-notice': id || '' }, close, content);
    this.notices.prepend(box);
    return box;
  }

  // -- schema -------------------------------------------------------------------------------

  schemaOf(pointer) {
    if (!this.schemas.has(pointer)) {
      this.schemas.set(pointer, api('schema/node', { query: { path: ptr.asPath(pointer), doc_id: this.docId } })
        .catch((error) => ({ node_schema: {}, error })));
    }
    return this.schemas.get(pointer);
  }

  async showSchema(pointer) {
    const data = await this.schemaOf(pointer);
    if (pointer !== this.pointer) return;
    const schema = data.node_schema || {};
    const rows = CONSTRAINTS.filter((key) => key in schema && !(key === 'additionalProperties' && typeof schema[key] === 'object'))
      .map((key) => [h('dt', {}, key), h('dd', {}, h('code', {}, shortJson(schema[key], 200)))]);
    const required = new Set(schema.required || []);
    const properties = Object.entries(schema.properties || {});
    const alternatives = schema.oneOf || schema.anyOf;
    this.schemaPane.replaceChildren(
      h('h2', {}, 'Schema'),
      data.error ? errorBox(data.error, 'No schema for this node') : '',
      schema.title ? h('p', { class: 'schema-title' }, schema.title) : '',
      schema.description ? h('p', { class: 'schema-description' }, schema.description) : '',
      data.node_exists === false ? h('p', { class: 'muted' }, 'Not in the document yet.') : '',
      rows.length ? h('dl', { class: 'constraints' }, rows) : '',
      properties.length ? h('div', {}, h('h3', {}, 'Members'), h('ul', { class: 'members' }, properties.map(([name, sub]) =>
        h('li', {}, h('code', {}, name), required.has(name) ? h('span', { class: 'required' }, ' required') : '',
          sub && sub.type ? h('span', { class: 'muted' }, ` ${[].concat(sub.type).join(' | ')}`) : '')))) : '',
      schema.items && typeof schema.items === 'object'
        ? h('p', {}, 'Items: ', h('code', {}, schema.items.title || [].concat(schema.items.type || 'any').join(' | '))) : '',
      Array.isArray(alternatives) ? h('p', {}, `One of ${alternatives.length}: `,
        alternatives.map((alt) => h('code', {}, `${alt.title || [].concat(alt.type || '?').join('|')} `))) : '');
  }

  // -- the panel ---------------------------------------------------------------------------

  async renderPanel() {
    const seq = ++this.panelSeq;
    const still = () => seq === this.panelSeq;
    this.panel.setAttribute('aria-labelledby', `tab-${this.tab}`);
    this.panel.dataset.tab = this.tab;
    this.panel.setAttribute('aria-busy', 'true');
    try {
      if (this.tab === 'preview') await this.renderPreview(still);
      else if (this.tab === 'history') await this.renderHistory(still);
      else if (this.tab === 'outline') await this.renderOutline(still);
      else await this.renderValue(still);
    } finally {
      if (still()) this.panel.removeAttribute('aria-busy');
    }
  }

  async renderValue(still) {
    const pointer = this.pointer;
    let data;
    try {
      data = await this.read(pointer, { max_bytes: NODE_BUDGET });
    } catch (error) {
      if (still()) this.panel.replaceChildren(errorBox(error, 'This node could not be read'));
      return;
    }
    const schema = (await this.schemaOf(pointer)).node_schema || {};
    if (!still()) return;
    this.nodeRead = { pointer, version: data.version, content: data.node_content, type: data.node_type };
    this.dirty = false;
    this.notices.querySelector('[data-notice=changed]')?.remove();
    const head = h('div', { class: 'panel-head' },
      h('h2', {}, ptr.label(pointer)),
      h('span', { class: 'muted', id: 'read-version', 'data-version': data.version,
        'data-prefix': `${data.node_type} · ${formatBytes(data.node_size_bytes)}` },
      `${data.node_type} · ${formatBytes(data.node_size_bytes)} · read at version ${data.version}`));
    if (this.viewVersion !== null || data.truncated) {
      this.panel.replaceChildren(head,
        h('p', { class: 'note' }, this.viewVersion !== null ? `A past version: read-only.`
          : `This node holds ${formatBytes(data.node_size_bytes)}, more than this panel shows at once: browse it in `
            + 'the tree and edit its parts there. Stubs stand for what is left out.'),
        h('pre', { class: 'json', id: 'node-json' }, JSON.stringify(data.node_content, null, 2)));
      return;
    }
    const editor = this.makeEditor(schema, data.node_content);
    const result = h('div', { class: 'result', id: 'edit-result', 'aria-live': 'polite' });
    const actions = h('div', { class: 'buttons' },
      h('button', { type: 'button', class: 'primary', id: 'save-node', onclick: () => this.save(editor, result) }, 'Save'),
      h('button', { type: 'button', id: 'reload-node', onclick: () => this.renderPanel() }, 'Reload'),
      pointer !== '' ? h('button', { type: 'button', class: 'danger', id: 'delete-node', onclick: () => this.deleteNode(result) },
        'Delete node') : '');
    const extra = [];
    if (data.node_type === 'array') extra.push(this.insertForm(result));
    if (pointer !== '') extra.push(this.moveForm(result));
    this.panel.replaceChildren(head, editor.el, actions, result, ...extra);
  }

  makeEditor(schema, value) {
    const kind = editorKind(schema, value);
    let mode = kind;
    const el = h('div', { class: 'editor', 'data-kind': kind });
    let field;
    const dirty = () => { this.dirty = true; };
    const build = () => {
      if (mode === 'enum') {
        field = h('select', { id: 'field', 'aria-label': 'Value', onchange: dirty },
          schema.enum.map((option, i) => h('option', { value: String(i) }, shortJson(option))));
        field.value = String(schema.enum.findIndex((option) => option === value));
      } else if (mode === 'boolean') {
        field = h('input', { type: 'checkbox', id: 'field', checked: value, onchange: dirty });
      } else if (mode === 'number') {
        field = h('input', { type: 'number', id: 'field', 'aria-label': 'Value', value: String(value), oninput: dirty,
          step: [].concat(schema.type).includes('integer') ? '1' : 'any', min: schema.minimum, max: schema.maximum });
      } else if (mode === 'string' && value.length <= 120 && !value.includes('\n')) {
        field = h('input', { type: 'text', id: 'field', 'aria-label': 'Value', value, oninput: dirty, spellcheck: 'true' });
      } else if (mode === 'string') {
        field = h('textarea', { id: 'field', 'aria-label': 'Value', rows: 8, oninput: dirty }, value);
      } else {
        field = h('textarea', { id: 'field', class: 'json-editor', 'aria-label': 'Value as JSON', spellcheck: 'false',
          rows: Math.min(30, Math.max(4, JSON.stringify(value, null, 2).split('\n').length + 1)), oninput: dirty },
        JSON.stringify(value, null, 2));
      }
      const label = mode === 'boolean' ? h('label', { for: 'field' }, field, ' true') : field;
      el.replaceChildren(label, kind !== 'json' ? h('button', { type: 'button', class: 'link', id: 'toggle-json', onclick: () => {
        mode = mode === 'json' ? kind : 'json';
        build();
      } }, mode === 'json' ? 'Edit as a form' : 'Edit as JSON') : '');
    };
    build();
    return {
      el,
      get: () => {
        if (mode === 'enum') return schema.enum[Number(field.value)];
        if (mode === 'boolean') return field.checked;
        if (mode === 'number') {
          if (field.value.trim() === '' || Number.isNaN(Number(field.value))) throw new Error('Not a number.');
          return Number(field.value);
        }
        if (mode === 'string') return field.value;
        try {
          return JSON.parse(field.value);
        } catch (error) {
          throw new Error(`Not valid JSON: ${error.message}`);
        }
      },
    };
  }

  async write(result, request, { edit, base, done }) {
    result.replaceChildren('Sending…');
    let answer;
    this.pendingWrites += 1;
    try {
      answer = await request();
    } catch (error) {
      result.replaceChildren();
      this.refused(error, edit, base, result);
      return null;
    } finally {
      this.pendingWrites -= 1;
    }
    this.written.add(answer.version);
    this.noteVersion(answer.version);
    this.tree.clearViolations();
    this.notices.querySelector('[data-notice=violations]')?.remove();
    this.notices.querySelector('[data-notice=conflict]')?.remove();
    result.replaceChildren(h('p', { class: 'ok', role: 'status' }, done(answer)));
    return answer;
  }

  async save(editor, result) {
    let value;
    try {
      value = editor.get();
    } catch (error) {
      result.replaceChildren(errorBox({ message: error.message }, 'Not sent'));
      return;
    }
    const { pointer, version: base } = this.nodeRead;
    const edit = [{ op: 'replace', path: pointer, value }];
    const answer = await this.write(result, () => api(this.path(), {
      method: 'PUT', query: { path: ptr.asPath(pointer) }, body: { node_data: value }, version: base,
    }), { edit, base, done: (a) => `Saved: version ${a.version}.` });
    if (answer) await this.afterWrite(answer, result);
  }

  async afterWrite(answer, result) {
    const kept = result.cloneNode(true);
    await this.tree.refresh((answer.patch || []).flatMap((op) => [op.path, op.from].filter((p) => p !== undefined)),
      answer.version);
    await this.renderPanel();
    this.panel.querySelector('#edit-result')?.replaceWith(kept);
  }

  async deleteNode(result) {
    const { pointer, version: base } = this.nodeRead;
    const answer = await this.write(result, () => api(this.path('/nodes'), {
      method: 'DELETE', query: { path: ptr.asPath(pointer) }, version: base,
    }), { edit: [{ op: 'remove', path: pointer }], base, done: (a) => `Deleted ${ptr.label(pointer)}: version ${a.version}.` });
    if (!answer) return;
    await this.tree.refresh([pointer], answer.version);
    this.select(ptr.parent(pointer));
  }

  insertForm(result) {
    const text = h('textarea', { id: 'insert-value', class: 'json-editor', rows: 4, spellcheck: 'false',
      'aria-label': 'The new item as JSON' }, '{}');
    const at = h('input', { id: 'insert-at', placeholder: 'end', size: 6, 'aria-label': 'Insert at index (empty: at the end)' });
    return h('details', { class: 'tool' }, h('summary', {}, 'Insert an item'),
      h('p', {}, 'New item (JSON): '), text, h('p', {}, 'At index ', at, ' ',
        h('button', { type: 'button', id: 'insert-item', onclick: async () => {
          let value;
          try {
            value = JSON.parse(text.value);
          } catch (error) {
            result.replaceChildren(errorBox({ message: `Not valid JSON: ${error.message}` }, 'Not sent'));
            return;
          }
          const { pointer, version: base } = this.nodeRead;
          const target = ptr.child(pointer, at.value.trim() || '-');
          const answer = await this.write(result, () => api(this.path('/nodes'), {
            method: 'POST', query: { path: target }, body: { node_data: value }, version: base,
          }), { edit: [{ op: 'add', path: target, value }], base, done: (a) => `Inserted ${a.created_node_path}: version ${a.version}.` });
          if (answer) await this.afterWrite(answer, result);
        } }, 'Insert')));
  }

  moveForm(result) {
    const to = h('input', { id: 'move-to', size: 30, spellcheck: 'false', 'aria-label': 'Move to (a JSON Pointer)',
      placeholder: '/chapters/0' });
    return h('details', { class: 'tool' }, h('summary', {}, 'Move this node'),
      h('p', {}, 'To ', to, ' ', h('button', { type: 'button', id: 'move-node', onclick: async () => {
        const { pointer, version: base } = this.nodeRead;
        const target = to.value.trim();
        const answer = await this.write(result, () => api(this.path('/move'), {
          method: 'POST', body: { from_path: pointer, to_path: target, version: base },
        }), { edit: [{ op: 'move', from: pointer, path: target }], base, done: (a) => `Moved: version ${a.version}.` });
        if (!answer) return;
        await this.tree.refresh([pointer, target], answer.version);
        this.select(target);
      } }, 'Move')));
  }

  refused(error, edit, base, result) {
    if (error.code === 'version-conflict') this.showConflict(error, base);
    else if (error.code === 'validation-failed' && Array.isArray(error.details.violations)) {
      this.showViolations(error.details.violations, error.details.suggested_call, base);
    } else result.replaceChildren(errorBox(error, 'Not saved'));
  }

  showConflict(error, base) {
    const actual = error.details.actual_version ?? this.version;
    const changes = h('div', { class: 'conflict-changes' }, 'Reading what changed…');
    this.notice(h('div', { class: 'conflict', id: 'conflict', role: 'alert' },
      h('strong', {}, 'Not saved: the document changed while you edited.'),
      h('p', {}, `Your edit was made on version ${base}; the document is now at version ${actual}. `
        + 'The server refused it (version-conflict) so that nothing written meanwhile is overwritten.'),
      h('p', {}, `What changed after version ${base}:`), changes,
      h('p', {}, h('button', { type: 'button', id: 'conflict-reload', onclick: () => {
        this.notices.querySelector('[data-notice=conflict]')?.remove();
        this.renderPanel();
      } }, 'Reload the node'), ' then make your edit again on the current content.')), { id: 'conflict', kind: 'warn' });
    api(this.path('/history'), { query: { since_version: base, limit: 50 } }).then((page) => {
      changes.replaceChildren(h('ol', { class: 'timeline compact' }, page.entries.map((entry) => h('li', {},
        h('span', { class: 'v' }, `v${entry.version}`), ` ${entry.op}`,
        entry.actor ? h('span', { class: 'actor' }, ` · by ${entry.actor}`) : '', ` · ${formatTime(entry.at)}`,
        changeList(entry.patch, { onPick: (path) => this.select(path) })))),
      page.has_more ? h('p', {}, '…and more.') : '');
    }, (failure) => changes.replaceChildren(errorBox(failure)));
  }

  showViolations(violations, suggested, base) {
    this.tree.markViolations(violations);
    const call = SUGGESTED_ROUTES[suggested?.tool] && !suggested.omitted ? suggested : null;  // omitted: too big to send back
    this.notice(h('div', { class: 'violations', id: 'violations', role: 'alert' },
      h('strong', {}, `Not saved: ${violations.length} validation error${violations.length === 1 ? '' : 's'}. Nothing was changed.`),
      h('ul', {}, violations.map((v) => h('li', { class: 'violation', 'data-path': v.path },
        h('button', { type: 'button', class: 'link path', onclick: () => this.select(v.path) }, ptr.label(v.path)), ' ',
        h('span', { class: 'message' }, v.message), ' ', h('span', { class: 'code' }, v.code),
        v.schema_excerpt ? h('div', { class: 'excerpt' }, 'Schema: ', h('code', {}, shortJson(v.schema_excerpt, 200))) : ''))),
      call ? h('div', { class: 'fix' }, call.resolves === false ? 'A partial fix suggested by the server: ' : 'Suggested fix: ',
        changeList(suggestedChanges(call)),
        Array.isArray(call.placeholders) && call.placeholders.length
          ? h('p', { class: 'note' }, `Made-up values to replace with real content: ${call.placeholders.join(', ')}.`) : '',
        h('button', { type: 'button', class: 'apply-fix primary', onclick: () => this.applySuggested(call, base) },
          'Apply fix')) : ''), { id: 'violations', kind: 'error' });
  }

  async applySuggested(call, base) {
    const result = this.panel.querySelector('#edit-result') || h('div');
    const route = SUGGESTED_ROUTES[call.tool];
    const args = call.arguments;
    const edit = suggestedChanges(call);
    const answer = await this.write(result, () => api(this.path(route.sub), {
      method: route.method, query: args.node_path !== undefined ? { path: args.node_path } : undefined,
      body: Object.fromEntries(route.body.filter((name) => name in args).map((name) => [name, args[name]])),
    }), { edit, base: args.version ?? base, done: (a) => `Applied the suggested fix: version ${a.version}.` });
    if (answer) await this.afterWrite(answer, result);
  }

  // -- preview, outline, next incomplete -------------------------------------------------------

  async renderPreview(still, offset = 0, into = null) {
    let data;
    try {
      data = await api(this.path('/render'), { query: { path: ptr.asPath(this.pointer), max_bytes: RENDER_BUDGET, offset } });
    } catch (error) {
      if (still()) this.panel.replaceChildren(errorBox(error, 'No preview'));
      return;
    }
    if (!still()) return;
    const article = into || h('article', { class: 'markdown', id: 'preview' });
    article.append(markdownFragment(data.text));
    article.querySelector(':scope > .more-button')?.remove();
    if (data.next_offset !== null && data.next_offset !== undefined) {
      article.append(h('button', { type: 'button', class: 'more-button', onclick: () => this.renderPreview(still, data.next_offset, article) },
        `Show more (${data.next_offset} of ${data.total_count})`));
    }
    if (!into) {
      this.panel.replaceChildren(this.viewVersion !== null ? h('p', { class: 'note' }, 'The preview shows the live document.') : '',
        article);
    }
  }

  async renderOutline(still) {
    let data;
    try {
      data = await api(this.path('/outline'), { query: { path: ptr.asPath(this.pointer), depth: 2, max_bytes: 32768 } });
    } catch (error) {
      if (still()) this.panel.replaceChildren(errorBox(error, 'No outline'));
      return;
    }
    if (!still()) return;
    const entry = (item) => h('li', {},
      h('button', { type: 'button', class: 'link', 'data-ptr': item.pointer, onclick: () => this.select(item.pointer) },
        item.label || item.title || ptr.label(item.pointer)),
      h('span', { class: 'muted' }, ` ${item.type}${item.count !== undefined ? ` · ${item.count}` : ''} · ${formatBytes(item.size_bytes)}`),
      item.children && item.children.length ? h('ul', {}, item.children.map(entry)) : '',
      item.more ? h('p', { class: 'muted' }, `…${item.more.count} more`) : '');
    this.panel.replaceChildren(h('h2', {}, `Outline of ${ptr.label(this.pointer)}`), h('ul', { class: 'outline', id: 'outline' },
      entry(data.outline)));
  }

  async nextIncomplete() {
    let data;
    try {
      data = await api(this.path('/incomplete'), { query: { path: '/', limit: 5 } });
    } catch (error) {
      this.notice(errorBox(error, 'Could not look for incomplete places'), { id: 'incomplete' });
      return;
    }
    if (!data.items.length) {
      this.notice(h('p', {}, 'Nothing is left incomplete by the schema.'), { id: 'incomplete' });
      return;
    }
    const first = data.items[0];
    this.notice(h('div', { id: 'incomplete' },
      h('strong', {}, 'Next incomplete: '), h('code', {}, ptr.label(first.pointer)), ` (${first.reason})`,
      first.example_call ? h('details', {}, h('summary', {}, 'What would fill it'),
        h('pre', { class: 'json' }, JSON.stringify(first.example_call.arguments.node_data, null, 2))) : '',
      data.items.length > 1 ? h('p', {}, 'Then: ', data.items.slice(1).map((item) => h('button', {
        type: 'button', class: 'link', onclick: () => this.select(item.reason === 'absent' ? ptr.parent(item.pointer) : item.pointer),
      }, `${ptr.label(item.pointer)} `))) : ''), { id: 'incomplete' });
    this.select(first.reason === 'absent' ? ptr.parent(first.pointer) : first.pointer);
  }

  // -- history -----------------------------------------------------------------------------

  async renderHistory(still) {
    const floor = (this.rootSize ?? Infinity) < SMALL_DOCUMENT ? 0 : 1;
    const timeline = h('ol', { class: 'timeline', id: 'timeline', reversed: true });
    const detail = h('div', { class: 'history-detail', id: 'history-detail', 'aria-live': 'polite' });
    const from = h('input', { type: 'number', id: 'diff-from', min: 1, size: 5, 'aria-label': 'From version' });
    const to = h('input', { type: 'number', id: 'diff-to', min: 1, size: 5, 'aria-label': 'To version' });
    const older = h('button', { type: 'button', id: 'older' }, 'Older versions');
    let since = Math.max(floor, this.version - 20);
    const entryItem = (entry) => h('li', { 'data-version': entry.version },
      h('span', { class: 'v' }, `v${entry.version}`), ' ', h('span', { class: 'op' }, entrySummary(entry)), ' ',
      h('time', { datetime: entry.at }, formatTime(entry.at)), ' ',
      entry.actor ? h('span', { class: 'actor', title: 'who made this version (the token or door it came with)' }, 'by ', h('b', {}, entry.actor)) : '', ' ',
      h('span', { class: 'entry-actions' },
        h('button', { type: 'button', class: 'link open-version', onclick: () => this.openVersion(entry.version) }, 'open'),
        entry.version > 1 ? h('button', { type: 'button', class: 'link show-diff', onclick: () => this.showDiff(entry.version - 1, entry.version, detail) }, 'changes') : '',
        entry.version < this.version ? h('button', { type: 'button', class: 'link revert', onclick: () => this.previewRevert(entry.version, detail) }, 'revert to this…') : ''));
    const load = async (low, high) => {
      const page = await api(this.path('/history'), { query: { since_version: low, limit: Math.max(1, high - low) } });
      return page.entries.filter((entry) => entry.version <= high);
    };
    const addOlder = async () => {
      const low = Math.max(floor, since - 20);
      const entries = await load(low, since);
      timeline.append(...entries.reverse().map(entryItem));
      since = low;
      if (since <= floor) {
        older.remove();
        if (floor === 1) timeline.append(h('li', { 'data-version': 1 }, h('span', { class: 'v' }, 'v1'), ' create (the initial document)'));
      }
    };
    older.addEventListener('click', addOlder);
    let entries;
    try {
      entries = await load(since, this.version);
    } catch (error) {
      if (still()) this.panel.replaceChildren(errorBox(error, 'No history'));
      return;
    }
    if (!still()) return;
    timeline.append(...entries.reverse().map(entryItem));
    from.value = String(Math.max(1, this.version - 1));
    to.value = String(this.version);
    this.timelineAdd = (entry) => {
      if (timeline.isConnected && !timeline.querySelector(`[data-version="${entry.version}"]`)) timeline.prepend(entryItem(entry));
    };
    this.panel.replaceChildren(
      h('h2', {}, 'History'),
      h('form', { class: 'inline', onsubmit: (event) => {
        event.preventDefault();
        this.showDiff(Number(from.value), Number(to.value), detail);
      } }, 'Changes from version ', from, ' to ', to, ' ', h('button', { type: 'submit', id: 'show-diff' }, 'Show')),
      detail, timeline, since > floor ? older : '');
    if (since <= floor && floor === 1) timeline.append(h('li', { 'data-version': 1 }, h('span', { class: 'v' }, 'v1'), ' create (the initial document)'));
  }

  async showDiff(fromVersion, toVersion, detail) {
    detail.replaceChildren('Reading…');
    try {
      const diff = await api(this.path('/diff'), { query: { from_version: fromVersion, to_version: toVersion } });
      detail.replaceChildren(h('h3', {}, `From version ${fromVersion} to ${toVersion}`), diffActors(diff.actors),
        h('div', { id: 'diff' }, changeList(diff.patch, { onPick: (path) => this.select(path) })));
    } catch (error) {
      detail.replaceChildren(errorBox(error, 'No diff'));
    }
  }

  async previewRevert(toVersion, detail = null) {
    const where = detail || h('div');
    if (!detail) this.notice(where, { id: 'revert' });
    const box = h('div', { class: 'revert-preview', id: 'revert-preview' }, 'Asking the server what a revert would change…');
    where.replaceChildren(box);
    const base = this.version;
    let preview;
    try {
      preview = await api(this.path('/revert'), { method: 'POST', query: { dry_run: true }, body: { to_version: toVersion, version: base } });
    } catch (error) {
      box.replaceChildren(errorBox(error, 'No revert preview'));
      return;
    }
    const result = h('div', { class: 'result', 'aria-live': 'polite' });
    box.replaceChildren(
      h('h3', {}, `Revert to version ${toVersion}: a preview (nothing changed yet)`),
      h('p', {}, `Applied to version ${base}, it would make version ${preview.would_be_version ?? base + 1} with these changes:`),
      changeList(preview.patch, { onPick: (path) => this.select(path) }),
      preview.validation_report && !preview.validation_report.valid
        ? h('p', { class: 'error' }, `${preview.validation_report.error_count} validation errors`) : '',
      h('div', { class: 'buttons' },
        h('button', { type: 'button', class: 'primary', id: 'confirm-revert', onclick: async () => {
          const answer = await this.write(result, () => api(this.path('/revert'), { method: 'POST', body: { to_version: toVersion, version: base } }),
            { edit: [], base, done: (a) => `Reverted to version ${toVersion}: now version ${a.version}.` });
          if (!answer) return;
          box.querySelectorAll('button').forEach((button) => { button.disabled = true; });
          await this.tree.refresh((answer.patch || []).map((op) => op.path), answer.version);
          if (this.viewVersion !== null) this.openVersion(null);
        } }, 'Revert'),
        h('button', { type: 'button', onclick: () => box.remove() }, 'Cancel')),
      result);
  }

  // -- live --------------------------------------------------------------------------------

  onStreamState(state, detail) {
    this.liveState.dataset.state = state;
    this.liveState.textContent = state === 'live' ? 'live' : state === 'reconnecting' ? 'reconnecting…' : 'not following';
    if (state === 'ended' && detail) this.notice(errorBox(detail, 'Live updates stopped'), { id: 'stream' });
  }

  onEvent(kind, entry) {
    if (kind === 'purged') {
      this.banner.hidden = false;
      this.banner.replaceChildren(h('strong', {}, 'This document was purged: it no longer exists.'));
      return;
    }
    if (kind !== 'version') return;
    this.noteVersion(entry.version);
    if (this.timelineAdd) this.timelineAdd(entry);
    if (entry.op === 'delete_document') {
      this.banner.hidden = false;
      this.banner.replaceChildren(h('strong', {}, `Deleted in version ${entry.version}. `), 'It can be restored (undelete) until purged.');
    } else if (entry.op === 'undelete_document') this.showBanner();
    if (this.viewVersion !== null) return;
    const ops = entry.patch || [];
    const paths = ops.flatMap((op) => [op.path, op.from].filter((p) => p !== undefined).map(ptr.normalize));
    if (this.written.has(entry.version)) return; // this page's own write: already shown
    const read = this.nodeRead;
    const touched = read && entry.version > read.version && ops.some((op) => touches(op, read.pointer));
    if (read && !touched && read.version === entry.version - 1) {
      read.version = entry.version; // nothing this node holds changed: an edit of it may go on this version
      const shown = this.panel.querySelector('#read-version');
      if (shown) {
        shown.dataset.version = String(entry.version);
        shown.textContent = `${shown.dataset.prefix} · unchanged up to version ${entry.version}`;
      }
    }
    this.queue = this.queue.then(async () => {
      // the event may come before the answer to this page's own write: that write shows it itself
      if (this.written.has(entry.version)) return;
      if (paths.length) await this.tree.refresh(paths, entry.version);
      this.tree.select(this.pointer);
      if (touched && this.tab === 'value' && !this.pendingWrites && !this.written.has(entry.version)) {
        if (this.dirty) {
          this.notice(h('p', {}, `Version ${entry.version} changed this node while you edit it: saving will be refused. `,
            h('button', { type: 'button', onclick: () => this.renderPanel() }, 'Reload the node')), { id: 'changed', kind: 'warn' });
        } else await this.renderPanel();
      }
    }).catch(() => {});
  }
}

// The REST routes of the calls a refusal may suggest (details.suggested_call: the tool and its arguments).
const SUGGESTED_ROUTES = {
  document_apply_patch: { method: 'POST', sub: '/patch', body: ['patch', 'version', 'placeholders'] },
  document_update_node: { method: 'PUT', sub: '', body: ['node_data', 'version', 'placeholders'] },
  document_create_node: { method: 'POST', sub: '/nodes', body: ['node_data', 'version', 'placeholders'] },
  document_merge_patch: { method: 'POST', sub: '/merge', body: ['merge_patch', 'version'] },
};

// What a suggested call changes, as a patch to show.
function suggestedChanges(call) {
  const args = call.arguments || {};
  if (Array.isArray(args.patch)) return args.patch;
  if ('node_data' in args) return [{ op: call.tool === 'document_create_node' ? 'add' : 'replace', path: args.node_path, value: args.node_data }];
  if ('merge_patch' in args) return [{ op: 'replace', path: args.node_path || '/', value: args.merge_patch }];
  return [];
}
