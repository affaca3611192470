// Markdown from the server's /render, as sanitized DOM (never inserted as an HTML string by us).
// Raw HTML inside the Markdown (which comes from document content) is shown as text, not parsed;
// what Markdown itself produces goes through DOMPurify; images are not loaded.

import DOMPurify from './vendor/dompurify/purify.es.mjs';
import { Marked } from './vendor/marked/marked.esm.js';

const escapeHtml = (text) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')
  .replaceAll('"', '&quot;').replaceAll("'", '&#39;');

const markdown = new Marked({
  async: false,
  gfm: true,
  renderer: {
    html(token) {
      return escapeHtml(token.text);
    },
  },
});

export function markdownFragment(text) {
  const html = markdown.parse(text);
  const fragment = DOMPurify.sanitize(html, {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: ['style', 'img', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed'],
    FORBID_ATTR: ['style'],
  });
  for (const link of fragment.querySelectorAll('a[href]')) link.setAttribute('rel', 'noopener noreferrer nofollow');
  return fragment;
}
