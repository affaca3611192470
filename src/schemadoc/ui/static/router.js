// Addresses: /ui for the list, /ui/documents/{doc_id}?pointer=…&version=…&tab=… for a document,
// /ui/status for the server's status.

import { h } from './dom.js';

export const BASE = new URL('./', document.baseURI);
let onRoute = () => {};

export function url(path, params) {
  const target = new URL(path, BASE);
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== '') target.searchParams.set(key, String(value));
  }
  return target;
}

export function navigate(target, { replace = false } = {}) {
  const next = String(target);
  if (next === location.href) return;
  if (replace) history.replaceState(null, '', next);
  else history.pushState(null, '', next);
  onRoute();
}

export function link(text, target, props = {}) {
  return h('a', {
    ...props,
    href: String(target),
    onclick: (event) => {
      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      navigate(target);
    },
  }, text);
}

/** The current view: {name: 'list'}, {name: 'status'} or {name: 'document', docId}, with the query parameters. */
export function current() {
  const base = BASE.pathname;
  let rest = location.pathname;
  rest = rest.startsWith(base) ? rest.slice(base.length) : rest === base.slice(0, -1) ? '' : rest;
  const params = new URLSearchParams(location.search);
  const match = /^documents\/([^/]+)\/?$/.exec(rest);
  if (match) return { name: 'document', docId: decodeURIComponent(match[1]), params };
  if (rest === '' || rest === 'documents' || rest === 'documents/') return { name: 'list', params };
  if (rest === 'status' || rest === 'status/') return { name: 'status', params };
  return { name: 'not-found', params };
}

export function start(handler) {
  onRoute = handler;
  window.addEventListener('popstate', handler);
  handler();
}
