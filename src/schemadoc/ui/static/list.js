// The documents: a paged list, search across documents, create, delete and undelete.

import { api, errorBox } from './api.js';
import { newDocumentForm } from './create.js';
import { clear, formatBytes, formatTime, h } from './dom.js';
import { link, navigate, url } from './router.js';

const PAGE = 50;
const deletedHere = new Map(); // documents deleted from this page in this session: doc_id -> summary

export async function listView(root, params) {
  const offset = Math.max(0, Number.parseInt(params.get('offset') || '0', 10) || 0);
  const query = params.get('q') || '';
  const valid = ['true', 'false'].includes(params.get('valid')) ? params.get('valid') : '';
  const filter = h('select', { name: 'valid', id: 'valid-filter', 'aria-label': 'Show documents by schema verdict',
    onchange: () => navigate(url('', { valid: filter.value })) },
  h('option', { value: '' }, 'All documents'),
  h('option', { value: 'true' }, 'Valid under the schema'),
  h('option', { value: 'false' }, 'Invalid under the schema'));
  filter.value = valid;
  const status = h('div', { class: 'status', 'aria-live': 'polite' });
  const results = h('section', { class: 'search-results', 'aria-label': 'Search results' });
  const table = h('div', { class: 'table-wrap' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  const search = h('input', { type: 'search', name: 'q', value: query, placeholder: 'Search text in every document',
    'aria-label': 'Search text in every document' });
  const byId = h('input', { name: 'doc', placeholder: 'Document id', 'aria-label': 'Open a document by id',
    spellcheck: 'false' });

  const creating = h('section', { class: 'create-host', 'aria-label': 'New document' });

  function create() {
    status.replaceChildren();
    newDocumentForm(creating, (docId) => navigate(url(`documents/${encodeURIComponent(docId)}`)));
  }

  clear(root).append(h('section', { class: 'list-view' },
    h('h1', {}, 'Documents'),
    h('div', { class: 'toolbar' },
      h('button', { type: 'button', id: 'create-document', class: 'primary', onclick: create }, 'New document'),
      h('form', { class: 'inline', role: 'search', onsubmit: (event) => {
        event.preventDefault();
        navigate(url('', { q: search.value.trim() }));
      } }, search, h('button', { type: 'submit' }, 'Search')),
      h('form', { class: 'inline', onsubmit: (event) => {
        event.preventDefault();
        if (byId.value.trim()) navigate(url(`documents/${encodeURIComponent(byId.value.trim())}`));
      } }, byId, h('button', { type: 'submit' }, 'Open')),
      filter),
    creating, status, results, table, pager));

  if (query) runSearch(query, results);

  let listing;
  try {
    listing = await api('documents', { query: { limit: PAGE, offset, ...(valid ? { valid } : {}) } });
  } catch (error) {
    table.replaceChildren(errorBox(error, 'The list of documents could not be read'));
    return;
  }
  const rows = listing.documents.map((doc) => documentRow(doc, status));
  for (const [docId, doc] of deletedHere) {
    if (!listing.documents.some((listed) => listed.doc_id === docId)) rows.push(documentRow(doc, status, true));
  }
  table.replaceChildren(h('table', { class: 'documents' },
    h('caption', {}, `${listing.total_documents} document${listing.total_documents === 1 ? '' : 's'}`),
    h('thead', {}, h('tr', {},
      ['Document', 'Created', 'Modified', 'Size', 'Version', 'Schema', 'State', '']
        .map((name) => h('th', { scope: 'col' }, name)))),
    h('tbody', {}, rows)));
  if (!rows.length) {
    table.append(h('p', { class: 'empty' }, valid ? 'No document has this verdict (documents not checked yet have none).'
      : 'No documents yet: create one.'));
  }
  const first = listing.total_documents ? offset + 1 : 0;
  pager.replaceChildren(
    offset > 0 ? link('← Previous', url('', { offset: Math.max(0, offset - PAGE), valid }), { rel: 'prev' }) : '',
    h('span', {}, `${first}–${offset + listing.documents.length} of ${listing.total_documents}`),
    listing.has_more ? link('Next →', url('', { offset: offset + PAGE, valid }), { rel: 'next' }) : '');
}

function documentRow(doc, status, deleted = false) {
  const state = h('td', { class: 'state' }, deleted ? 'deleted' : 'active');
  const action = h('td', {});
  const row = h('tr', { 'data-doc-id': doc.doc_id, class: deleted ? 'deleted' : '' },
    h('td', { class: 'document' },
      link(doc.label || doc.doc_id, url(`documents/${encodeURIComponent(doc.doc_id)}`),
        { class: doc.label ? 'doc-link label' : 'doc-link mono' }),
      doc.label ? h('span', { class: 'doc-id mono' }, doc.doc_id) : null),
    h('td', {}, formatTime(doc.created_at)),
    h('td', {}, formatTime(doc.modified_at)),
    h('td', { class: 'num' }, formatBytes(doc.tree_size_bytes)),
    h('td', { class: 'num version' }, String(doc.version)),
    h('td', { class: 'verdict' }, verdictBadge(doc)),
    state, action);

  function showActive() {
    row.classList.remove('deleted');
    state.textContent = 'active';
    action.replaceChildren(h('button', { type: 'button', class: 'delete', onclick: remove }, 'Delete'));
  }
  function showDeleted() {
    row.classList.add('deleted');
    state.textContent = 'deleted';
    action.replaceChildren(h('button', { type: 'button', class: 'undelete', onclick: restore }, 'Undelete'));
  }
  async function remove() {
    try {
      const done = await api(`documents/${encodeURIComponent(doc.doc_id)}`, { method: 'DELETE', version: doc.version });
      doc.version = done.version;
      deletedHere.set(doc.doc_id, doc);
      row.querySelector('.version').textContent = String(doc.version);
      showDeleted();
      status.replaceChildren(`Deleted ${doc.doc_id} (it can be restored with Undelete).`);
    } catch (error) {
      status.replaceChildren(errorBox(error, 'The document was not deleted'));
    }
  }
  async function restore() {
    try {
      const done = await api(`documents/${encodeURIComponent(doc.doc_id)}/undelete`, { method: 'POST' });
      doc.version = done.version;
      deletedHere.delete(doc.doc_id);
      row.querySelector('.version').textContent = String(doc.version);
      showActive();
      status.replaceChildren(`Restored ${doc.doc_id}.`);
    } catch (error) {
      status.replaceChildren(errorBox(error, 'The document was not restored'));
    }
  }
  if (deleted) showDeleted();
  else showActive();
  return row;
}

// What the served schema says of the document: valid, N violations, or unchecked (not known yet).
function verdictBadge(doc) {
  if (doc.valid === true) return h('span', { class: 'badge verdict-valid' }, 'valid');
  if (doc.valid === false) {
    const count = Number(doc.violation_count) || 0;
    return h('span', { class: 'badge verdict-invalid', title: 'Refused by the served schema' },
      `${count} violation${count === 1 ? '' : 's'}`);
  }
  return h('span', { class: 'badge verdict-unchecked', title: 'Not checked against the served schema yet' },
    'unchecked');
}

async function runSearch(query, results) {
  results.replaceChildren(h('p', {}, `Searching for “${query}”…`));
  try {
    const found = await api('search', { query: { query, limit: 50 } });
    results.replaceChildren(h('h2', {}, `Search: “${query}”`),
      found.hits.length ? h('ul', { class: 'hits' }, found.hits.map((hit) => h('li', {},
        link(`${hit.doc_id} ${hit.pointer}`, url(`documents/${encodeURIComponent(hit.doc_id)}`, { pointer: hit.pointer }),
          { class: 'mono' }),
        h('span', { class: 'snippet' }, hit.snippet))))
        : h('p', { class: 'empty' }, 'Nothing found.'),
      found.has_more ? h('p', {}, 'More hits exist: refine the search.') : '');
  } catch (error) {
    results.replaceChildren(errorBox(error, 'The search failed'));
  }
}
