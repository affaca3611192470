// Markdown from the server's /render, as sanitized DOM (never inserted as an HTML string by us).

import DOMPurify from './vendor/dompurify/purify.es.mjs';
import { marked } from './vendor/marked/marked.esm.js';

export function markdownFragment(text) {
  const html = marked.parse(text, { async: false, gfm: true });
  const fragment = DOMPurify.sanitize(html, {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select'],
    FORBID_ATTR: ['style'],
  });
  for (const link of fragment.querySelectorAll('a[href]')) link.setAttribute('rel', 'noopener noreferrer nofollow');
  return fragment;
}
