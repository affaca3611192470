// schemadoc's page: the router, the theme, and the token button. Everything else is in its views.

import { askToken, token } from './api.js';
import { DocumentView } from './doc.js';
import { h } from './dom.js';
import { listView } from './list.js';
import { current, link, start, url } from './router.js';
import { StatusView } from './status.js';

const THEME_KEY = 'schemadoc.theme';
const app = document.getElementById('app');
let view = null;

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  const button = document.getElementById('theme');
  button.textContent = theme === 'dark' ? 'Light' : 'Dark';
  button.setAttribute('aria-label', `Switch to the ${theme === 'dark' ? 'light' : 'dark'} theme`);
}

function setUpChrome() {
  const stored = localStorage.getItem(THEME_KEY);
  const preferred = matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  applyTheme(stored || preferred);
  document.getElementById('theme').addEventListener('click', () => {
    const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
    localStorage.setItem(THEME_KEY, next);
    applyTheme(next);
  });
  const tokenButton = document.getElementById('token');
  const showToken = () => { tokenButton.textContent = token() ? 'Token ✓' : 'Token'; };
  tokenButton.addEventListener('click', async () => {
    if (await askToken('Give the access token to send with every request (kept for this browser tab only).')) location.reload();
    showToken();
  });
  showToken();
  document.getElementById('home').setAttribute('href', String(url('')));
  const status = document.getElementById('status-link');
  status.replaceWith(link('Status', url('status'), { id: 'status-link', class: 'api-link' }));
}

async function route() {
  const where = current();
  if (where.name === 'document' && view instanceof DocumentView && view.docId === where.docId) {
    await view.update(where.params);
    return;
  }
  if (where.name === 'status' && view instanceof StatusView) return;
  if (view instanceof DocumentView || view instanceof StatusView) view.destroy();
  view = null;
  if (where.name === 'document') {
    view = new DocumentView(app, where.docId);
    await view.start(where.params);
  } else if (where.name === 'status') {
    view = new StatusView(app);
    await view.start();
  } else if (where.name === 'list') {
    document.title = 'Documents · schemadoc';
    view = 'list';
    await listView(app, where.params);
  } else {
    app.replaceChildren(h('p', { class: 'error' }, 'No such page. '), h('a', { href: String(url('')) }, 'The documents'));
  }
}

setUpChrome();
start(() => {
  route().catch((error) => {
    app.append(h('div', { class: 'error', role: 'alert' }, `Unexpected: ${error.message}`));
  });
});
