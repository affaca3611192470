// RFC 6901 JSON Pointers. The root is '' here; the REST API names it '/' in its path parameter.

export const escapeToken = (token) => String(token).replaceAll('~', '~0').replaceAll('/', '~1');
export const unescapeToken = (token) => token.replaceAll('~1', '/').replaceAll('~0', '~');

export function normalize(pointer) {
  return pointer === '/' || pointer === undefined || pointer === null ? '' : pointer;
}

export function child(pointer, token) {
  return `${normalize(pointer)}/${escapeToken(token)}`;
}

export function tokens(pointer) {
  const p = normalize(pointer);
  return p === '' ? [] : p.slice(1).split('/').map(unescapeToken);
}

export function parent(pointer) {
  const p = normalize(pointer);
  const cut = p.lastIndexOf('/');
  return cut <= 0 ? '' : p.slice(0, cut);
}

/** Is `pointer` the node `ancestor` or inside it? */
export function within(pointer, ancestor) {
  const p = normalize(pointer);
  const a = normalize(ancestor);
  return a === '' || p === a || p.startsWith(`${a}/`);
}

/** The pointer as the REST API's `path` parameter takes it. */
export const asPath = (pointer) => normalize(pointer) || '/';

/** How a person reads a pointer: '/' for the root. */
export const label = (pointer) => normalize(pointer) || '/';
