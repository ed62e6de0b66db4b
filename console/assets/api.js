// The API client of the console: every request carries the user's token in
// the Authorization header (never in a URL, except the websockets' query,
// where browsers cannot set headers), and every error is an ApiError with
// the API's code, message and field list.

export const API = '/apis/zcloud.cn/v1';
const WS = '/apis/ws.zcloud.cn/v1';

// A request's answer must arrive within this bound; the API bounds its own
// work well below it.
const requestTimeoutMs = 60000;

// ApiError is the API's error envelope: {code, status, message, fields}.
export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.code = (body && body.code) || '';
    this.fields = (body && Array.isArray(body.fields)) ? body.fields : [];
  }
}

// session is who is logged in in this tab: sessionStorage keeps the token
// for the tab's life only, and no other site can read it.
export const session = {
  get token() { return sessionStorage.getItem('sc.token') || ''; },
  get user() { return sessionStorage.getItem('sc.user') || ''; },
  // The admin is the user named admin, as the API's auth package says; the
  // API refuses every write of anyone else whatever the console shows.
  get admin() { return this.user === 'admin'; },
  set(user, token) { sessionStorage.setItem('sc.user', user); sessionStorage.setItem('sc.token', token); },
  clear() { sessionStorage.removeItem('sc.user'); sessionStorage.removeItem('sc.token'); },
};

let onUnauthorized = () => {};
// whenUnauthorized sets what happens when the API says the token is no
// longer good (expired, revoked by a password change): back to login.
export function whenUnauthorized(fn) { onUnauthorized = fn; }

// api sends one request and returns the decoded answer (null for an empty
// one); it throws an ApiError for an error answer.
export async function api(method, path, body, opts = {}) {
  const headers = { 'Accept': 'application/json' };
  if (session.token && !opts.anonymous) headers['Authorization'] = 'Bearer ' + session.token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), requestTimeoutMs);
  if (opts.signal) opts.signal.addEventListener('abort', () => ctl.abort(), { once: true });
  let resp;
  try {
    resp = await fetch(API + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      signal: ctl.signal, cache: 'no-store', credentials: 'omit',
    });
  } catch (e) {
    if (opts.signal && opts.signal.aborted) throw e;
    throw new ApiError(0, { code: 'Unreachable', message: ctl.signal.aborted
      ? `the server did not answer ${method} ${path} within ${requestTimeoutMs / 1000} s`
      : `cannot reach the server (${e.message}); check that singlecloud is running` });
  } finally {
    clearTimeout(timer);
  }
  const text = await resp.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = { message: text }; }
  }
  if (!resp.ok) {
    const err = new ApiError(resp.status, data);
    if (resp.status === 429) {
      const after = resp.headers.get('Retry-After');
      if (after) err.message += ` (try again in ${after} s)`;
    }
    if (resp.status === 401 && !opts.anonymous) onUnauthorized(err);
    throw err;
  }
  return data;
}

// download fetches path with the token and hands the answer to the browser
// as a file named filename, so that the token never appears in a URL.
export async function download(path, filename) {
  const resp = await fetch(API + path, {
    headers: { 'Authorization': 'Bearer ' + session.token }, cache: 'no-store', credentials: 'omit',
  });
  if (!resp.ok) {
    let body = null;
    try { body = await resp.json(); } catch { /* not the envelope */ }
    throw new ApiError(resp.status, body);
  }
  const url = URL.createObjectURL(await resp.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

// wsURL is the websocket URL of path on this server, with the token.
export function wsURL(path, params = {}) {
  const q = new URLSearchParams(params);
  q.set('token', session.token);
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${WS}${path}?${q}`;
}

// Reconnection bounds of a followed websocket: the first retry comes after
// retryMinMs, doubling to retryMaxMs; the delay starts again from the
// minimum once a connection has delivered a message or stayed open
// stableMs.
const retryMinMs = 1000;
const retryMaxMs = 30000;
const stableMs = 10000;

// follow keeps a websocket to path open until stop() is called: each JSON
// message goes to onMessage; a dropped connection is reopened with backoff,
// asking params() anew (a resume position), and onState says 'live',
// 'reconnecting' or 'closed'. onClose(code) may return false to stop
// reconnecting (a stream that ended normally). A browser reports a refused
// upgrade only as a closed socket: after a connection that never opened,
// probe (an API path the stream depends on) is read, so that an expired
// token goes back to the login, and a 403 or 404 ends the stream.
export function follow(path, { params = () => ({}), onMessage, onState = () => {}, onClose = () => true, probe = '/clusters?limit=1' }) {
  let ws = null;
  let stopped = false;
  let delay = retryMinMs;
  let timer = 0;
  let openedAt = 0;
  const open = () => {
    if (stopped) return;
    openedAt = 0;
    ws = new WebSocket(wsURL(path, params()));
    ws.onopen = () => { openedAt = Date.now(); onState('live'); };
    ws.onmessage = (m) => {
      delay = retryMinMs;
      let v;
      try { v = JSON.parse(m.data); } catch { return; }
      onMessage(v);
    };
    ws.onclose = async (e) => {
      ws = null;
      if (stopped) return;
      if (onClose(e.code) === false) { onState('closed'); return; }
      if (openedAt && Date.now() - openedAt >= stableMs) delay = retryMinMs;
      onState('reconnecting');
      if (!openedAt) {
        try {
          await api('GET', probe);
        } catch (err) {
          if (err.status === 401 || err.status === 403 || err.status === 404) {
            stopped = true;
            onState('closed');
            return;
          }
        }
        if (stopped) return;
      }
      timer = setTimeout(open, delay);
      delay = Math.min(delay * 2, retryMaxMs);
    };
  };
  open();
  return () => {
    stopped = true;
    clearTimeout(timer);
    if (ws) ws.close(1000, 'page left');
  };
}
