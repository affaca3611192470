// The page's only way to the server: the public REST API under /api/v1 and its event streams.
// An access token, once given, is kept in sessionStorage and sent as `Authorization: Bearer` on
// every request; a 401 asks for it (one question, however many requests were refused at once).

import { h } from './dom.js';

const TOKEN_KEY = 'schemadoc.token';
export const API_BASE = new URL('../api/v1/', document.baseURI);

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || { code: 'network-error', message: `The server answered ${status}.` };
    super(error.message);
    this.status = status;
    this.code = error.code;
    this.details = error.details || {};
    this.remediation = error.remediation || '';
  }
}

export const token = () => sessionStorage.getItem(TOKEN_KEY);

let asking = null;

/** Ask for a token (one dialog for every concurrent 401); resolves to true when one was given. */
export function askToken(reason) {
  if (asking) return asking;
  const dialog = document.getElementById('token-dialog');
  const input = dialog.querySelector('input');
  dialog.querySelector('.reason').textContent = reason || 'This server needs an access token.';
  input.value = '';
  asking = new Promise((resolve) => {
    const done = (given) => {
      dialog.removeEventListener('close', onClose);
      form.removeEventListener('submit', onSubmit);
      asking = null;
      resolve(given);
    };
    const form = dialog.querySelector('form');
    const onSubmit = (event) => {
      event.preventDefault();
      const value = input.value.trim();
      if (value) sessionStorage.setItem(TOKEN_KEY, value);
      dialog.close();
      done(Boolean(value));
    };
    const onClose = () => done(false);
    form.addEventListener('submit', onSubmit);
    dialog.querySelector('.cancel').onclick = () => dialog.close();
    dialog.addEventListener('close', onClose);
    dialog.showModal();
    input.focus();
  });
  return asking;
}

function headersFor(extra) {
  const headers = { Accept: 'application/json', ...extra };
  const given = token();
  if (given) headers.Authorization = `Bearer ${given}`;
  return headers;
}

export function apiUrl(path, query) {
  const url = new URL(path, API_BASE);
  for (const [key, value] of Object.entries(query || {})) {
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) url.searchParams.append(key, String(item));
  }
  return url;
}

async function bodyOf(response) {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * One REST call. `version` is sent as If-Match (the version the edit was made on).
 * Resolves to the JSON body; rejects with ApiError carrying the catalogued error.
 */
export async function api(path, { method = 'GET', query, body, version } = {}) {
  for (let attempt = 0; ; attempt += 1) {
    const extra = {};
    if (body !== undefined) extra['Content-Type'] = 'application/json';
    if (version !== undefined && version !== null) extra['If-Match'] = `"${version}"`;
    let response;
    try {
      response = await fetch(apiUrl(path, query), {
        method, headers: headersFor(extra), body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
      });
    } catch (error) {
      throw new ApiError(0, { error: { code: 'network-error', message: `The server cannot be reached (${error.message}).` } });
    }
    const data = await bodyOf(response);
    if (response.status === 401 && attempt < 3) {
      if (token()) sessionStorage.removeItem(TOKEN_KEY);
      if (await askToken(data?.error?.message)) continue;
    }
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }
}

/**
 * GET a text resource of the server outside the API (`/metrics`), with the token as every request.
 * Resolves to the text; rejects with ApiError (status 0 when the server cannot be reached). A 401
 * asks for a token as `api()` does; the question is not repeated when it was turned down.
 */
export async function getText(path, { signal } = {}) {
  for (let attempt = 0; ; attempt += 1) {
    let response;
    try {
      response = await fetch(new URL(path, document.baseURI), {
        headers: headersFor({ Accept: 'text/plain' }), cache: 'no-store', signal,
      });
    } catch (error) {
      throw new ApiError(0, { error: { code: 'network-error', message: `The server cannot be reached (${error.message}).` } });
    }
    if (response.ok) return response.text();
    const data = await bodyOf(response);
    if (response.status === 401 && attempt < 3) {
      if (token()) sessionStorage.removeItem(TOKEN_KEY);
      if (await askToken(data?.error?.message)) continue;
    }
    throw new ApiError(response.status, data);
  }
}

/** A catalogued error as a readable box: what happened, its code, what to do. */
export function errorBox(error, title) {
  const box = h('div', { class: 'error', role: 'alert' },
    h('strong', {}, title || 'The server refused this'),
    h('p', {}, error.message),
    error.code ? h('p', { class: 'code' }, `Code: ${error.code}${error.status ? ` (HTTP ${error.status})` : ''}`) : null,
    error.remediation ? h('p', { class: 'remediation' }, error.remediation) : null);
  if (error.status === 401) {
    box.append(h('button', { type: 'button', onclick: () => askToken().then((given) => given && location.reload()) },
      'Enter an access token'));
  }
  return box;
}

/**
 * Follow a document's event stream with fetch() (so the token header can be sent), resuming
 * after `since` with Last-Event-ID on every reconnect: no version is missed or repeated.
 * `onEvent(kind, data)` gets each event; `onState(state, detail)` hears live / reconnecting / ended.
 */
export function followEvents(docId, since, onEvent, onState) {
  let last = since;
  let stopped = false;
  let controller = null;

  const dispatch = (event) => {
    if (!event.data.length) return;
    if (event.id !== null && /^[0-9]+$/.test(event.id)) last = Number(event.id);
    let data = null;
    try {
      data = JSON.parse(event.data.join('\n'));
    } catch {
      return;
    }
    onEvent(event.kind, data);
    if (event.kind === 'purged') stopped = true;
  };

  async function readStream(response) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    let event = { kind: 'message', data: [], id: null };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf('\n')) >= 0) {
        let line = buffer.slice(0, end);
        buffer = buffer.slice(end + 1);
        if (line.endsWith('\r')) line = line.slice(0, -1);
        if (line === '') {
          dispatch(event);
          event = { kind: 'message', data: [], id: null };
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let text = colon < 0 ? '' : line.slice(colon + 1);
        if (text.startsWith(' ')) text = text.slice(1);
        if (field === 'data') event.data.push(text);
        else if (field === 'event') event.kind = text;
        else if (field === 'id') event.id = text;
      }
      if (stopped) return;
    }
  }

  (async () => {
    let delay = 250;
    while (!stopped) {
      controller = new AbortController();
      try {
        const extra = { Accept: 'text/event-stream' };
        if (last !== null && last !== undefined) extra['Last-Event-ID'] = String(last);
        const response = await fetch(apiUrl(`documents/${encodeURIComponent(docId)}/events`), {
          headers: headersFor(extra), signal: controller.signal, cache: 'no-store',
        });
        if (response.status === 401) {
          if (token()) sessionStorage.removeItem(TOKEN_KEY);
          if (!(await askToken())) {
            onState('ended', new ApiError(401, await bodyOf(response)));
            return;
          }
          continue;
        }
        if (!response.ok) {
          const error = new ApiError(response.status, await bodyOf(response));
          if (response.status === 404) {
            onState('ended', error);
            return;
          }
          throw error;
        }
        onState('live', last);
        delay = 250;
        await readStream(response);
      } catch (error) {
        if (stopped) return;
        onState('reconnecting', error);
      }
      if (stopped) break;
      onState('reconnecting', null);
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 5000);
    }
    onState('ended', null);
  })();

  return {
    stop() {
      stopped = true;
      if (controller) controller.abort();
    },
    get lastEventId() {
      return last;
    },
  };
}
