// The status view (/ui/status): the server's /metrics read every 2 s while the tab is visible, as
// small live charts of the last 5 minutes with their current figures as text.

import { askToken, errorBox, getText } from './api.js';
import { legend, lineChart } from './chart.js';
import { clear, formatBytes, h } from './dom.js';
import { parseMetrics } from './metrics.js';
import { StatusHistory, WINDOW_MS, summarize } from './status_data.js';

export const POLL_MS = 2000;
const TIMEOUT_MS = 10000;
const MIN_SPAN_MS = 60 * 1000;
const METRICS_PATH = '../metrics'; // beside /ui, under the application's root path

const counts = new Intl.NumberFormat('en');
const missing = '—';

export function formatCount(value) {
  return value === null || value === undefined || !Number.isFinite(value) ? missing : counts.format(value);
}

export function formatRate(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return missing;
  return `${value.toFixed(value >= 10 ? 1 : 2)}/s`;
}

export function formatSeconds(value) {
  if (value === null || value === undefined || Number.isNaN(value)) return missing;
  if (!Number.isFinite(value)) return value > 0 ? '∞' : '-∞';
  if (value === 0) return '0 s';
  if (value < 1) return `${(value * 1000).toFixed(value < 0.01 ? 2 : 1)} ms`;
  return `${value.toFixed(value < 10 ? 2 : 1)} s`;
}

const formatSize = (value) => (value === null || value === undefined ? missing : formatBytes(value));

/** One figure as text: `<dt>` name, `<dd data-figure=key>` value. */
function figure(key, name, text) {
  return [h('dt', {}, name), h('dd', { 'data-figure': key }, text)];
}

function card(key, title, { charts = [], figures = [], extra = null }) {
  const heading = `status-${key}`;
  return h('section', { class: 'status-card', 'data-card': key, 'aria-labelledby': heading },
    h('h2', { id: heading }, title),
    charts,
    h('dl', { class: 'figures' }, figures),
    extra);
}

export class StatusView {
  constructor(root) {
    this.root = root;
    this.history = new StatusHistory();
    this.timer = null;
    this.controller = null;
    this.stopped = false;
    this.halted = false; // a refusal that reading again would not change (metrics off, no token)
    this.onVisibility = () => this.visibilityChanged();
  }

  start() {
    document.title = 'Status · schemadoc';
    this.state = h('p', { id: 'status-state', class: 'live-state', 'data-state': 'loading' },
      'Reading /metrics…');
    this.message = h('div', { id: 'status-message', 'aria-live': 'polite' });
    this.cards = h('div', { id: 'status-cards', class: 'status-cards' });
    clear(this.root).append(h('section', { class: 'status-view' },
      h('div', { class: 'doc-bar' }, h('h1', {}, 'Status'), this.state),
      h('p', { class: 'muted' }, 'Read from this server\'s /metrics every 2 seconds while this tab is visible; '
        + 'the charts show the last 5 minutes. The readings of /metrics themselves are not counted as requests.'),
      this.message, this.cards));
    document.addEventListener('visibilitychange', this.onVisibility);
    return this.poll();
  }

  destroy() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.controller) this.controller.abort();
    document.removeEventListener('visibilitychange', this.onVisibility);
  }

  visibilityChanged() {
    if (this.stopped || this.halted) return;
    clearTimeout(this.timer);
    this.timer = null;
    if (document.visibilityState === 'visible') {
      this.poll();
    } else {
      if (this.controller) this.controller.abort();
      this.setState('paused', 'Paused while this tab is hidden.');
    }
  }

  setState(state, text) {
    this.state.dataset.state = state;
    this.state.textContent = text;
  }

  schedule() {
    clearTimeout(this.timer);
    if (this.stopped || this.halted || document.visibilityState !== 'visible') return;
    this.timer = setTimeout(() => this.poll(), POLL_MS);
  }

  async poll() {
    if (this.stopped || this.halted) return;
    if (this.controller) this.controller.abort();
    const controller = new AbortController();
    this.controller = controller;
    const timeout = setTimeout(() => controller.abort(), TIMEOUT_MS);
    try {
      const text = await getText(METRICS_PATH, { signal: controller.signal });
      if (this.stopped || controller !== this.controller) return;
      this.history.add(Date.now(), summarize(parseMetrics(text)));
      this.message.replaceChildren();
      this.render();
      this.setState('live', `Updated ${new Date().toLocaleTimeString()}, every ${POLL_MS / 1000} s.`);
    } catch (error) {
      if (this.stopped || controller !== this.controller) return;
      if (controller.signal.aborted && document.visibilityState !== 'visible') return; // hidden: paused
      this.refused(error);
    } finally {
      clearTimeout(timeout);
    }
    this.schedule();
  }

  /** Say plainly why there is nothing to show, and how to fix it. */
  refused(error) {
    if (error.status === 404) {
      this.halted = true;
      this.setState('off', 'Metrics are turned off on this server.');
      this.message.replaceChildren(h('div', { class: 'error', role: 'alert', 'data-reason': 'metrics-off' },
        h('strong', {}, 'This server does not serve /metrics'),
        h('p', {}, 'It answered 404: its metrics are turned off. Turn them on with the metrics setting '
          + '(METRICS=true in the environment, or "metrics": true in the config file) and restart the server.'),
        h('button', { type: 'button', onclick: () => this.retry() }, 'Try again')));
    } else if (error.status === 401 || error.status === 403) {
      this.halted = true;
      this.setState('denied', 'The server refused to show its metrics.');
      const box = errorBox(error, error.status === 401 ? 'This server needs an access token to show its metrics'
        : 'This access token may not read /metrics');
      box.dataset.reason = error.status === 401 ? 'token-needed' : 'token-refused';
      box.append(h('p', {}, 'Any token of the server\'s tokens file may read the metrics, a read-only one too: give it '
        + 'with the Token button at the top of the page.'));
      if (error.status === 403) {
        box.append(h('button', { type: 'button', onclick: () => askToken().then((given) => given && this.retry()) },
          'Enter another access token'));
      }
      this.message.replaceChildren(box);
    } else {
      this.setState('error', 'Cannot read /metrics; trying again.');
      this.message.replaceChildren(errorBox(error, 'The metrics could not be read'));
    }
  }

  retry() {
    this.halted = false;
    this.message.replaceChildren();
    this.poll();
  }

  render() {
    const history = this.history;
    const latest = history.latest;
    const now = Date.now();
    // the last 5 minutes once there are 5 minutes of readings; until then the time since the first (1 minute at least)
    const span = Math.min(WINDOW_MS, Math.max(MIN_SPAN_MS, now - history.points[0].t));
    const chart = (label, series, options = {}) => lineChart({ series, now, span, label, ...options });

    const rate = history.rate('requests');
    const errors = history.rate('errors');
    const p50 = history.latency(0.5);
    const p95 = history.latency(0.95);
    const rateNow = StatusHistory.now(rate);
    const errorsNow = StatusHistory.now(errors);
    const p50Now = StatusHistory.now(p50);
    const p95Now = StatusHistory.now(p95);
    const doors = Object.entries(latest.doors).sort(([a], [b]) => a.localeCompare(b))
      .map(([door, value]) => `${door} ${formatCount(value)}`).join(', ');

    const top = history.topErrors();
    const topTable = top.length === 0 ? h('p', { class: 'muted', 'data-figure': 'no-errors' }, 'No errors answered.')
      : h('table', { class: 'error-codes' },
        h('caption', {}, 'Top error codes'),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'code'), h('th', { scope: 'col' }, 'last 5 min'),
          h('th', { scope: 'col' }, 'since start'))),
        h('tbody', {}, top.map((row) => h('tr', { 'data-code': row.code },
          h('td', {}, h('code', {}, row.code)),
          h('td', { class: 'num recent' }, formatCount(row.recent)),
          h('td', { class: 'num total' }, formatCount(row.total))))));

    const usedShare = latest.memoryBudget > 0 && latest.memoryUsed !== null
      ? `${((100 * latest.memoryUsed) / latest.memoryBudget).toFixed(1)} %` : missing;
    const lagV = history.gauge('lagVersions');
    const lagS = history.gauge('lagSeconds');
    const cards = [
      card('requests', 'Requests', {
        charts: [chart(`Requests per second: ${formatRate(rateNow)} now`, [{ name: 'requests', points: rate }], { format: formatRate })],
        figures: [figure('request-rate', 'now', formatRate(rateNow)),
          figure('requests-total', 'since start', formatCount(latest.requests)),
          figure('requests-by-door', 'by door', doors || missing)],
      }),
      card('latency', 'Latency', {
        charts: [chart(`Request latency over the last 30 s: p50 ${formatSeconds(p50Now)}, p95 ${formatSeconds(p95Now)}`,
          [{ name: 'p50', points: p50 }, { name: 'p95', points: p95 }], { format: formatSeconds }), legend(['p50', 'p95'])],
        figures: [figure('latency-p50', 'p50 (30 s)', formatSeconds(p50Now)),
          figure('latency-p95', 'p95 (30 s)', formatSeconds(p95Now))],
      }),
      card('errors', 'Errors', {
        charts: [chart(`Errors per second: ${formatRate(errorsNow)} now`, [{ name: 'errors', points: errors, kind: 'errors' }], { format: formatRate })],
        figures: [figure('error-rate', 'now', formatRate(errorsNow)),
          figure('errors-total', 'since start', formatCount(latest.errors))],
        extra: topTable,
      }),
      card('memory', 'Memory budget', {
        charts: [chart(`Memory used: ${formatSize(latest.memoryUsed)} of ${formatSize(latest.memoryBudget)}`,
          [{ name: 'used', points: history.gauge('memoryUsed') }], { limit: latest.memoryBudget, format: formatSize })],
        figures: [figure('memory-used', 'used', formatSize(latest.memoryUsed)),
          figure('memory-budget', 'budget', formatSize(latest.memoryBudget)),
          figure('memory-share', 'share', usedShare),
          figure('memory-documents', 'documents held', formatCount(latest.memoryDocuments)),
          figure('memory-evictions', 'evicted since start', formatCount(latest.evictions))],
      }),
      card('snapshots', 'Snapshot lag', {
        charts: [chart(`Snapshot lag: ${formatCount(latest.lagVersions)} versions`, [{ name: 'versions', points: lagV }]),
          legend(['versions']),
          chart(`Snapshot lag: ${formatSeconds(latest.lagSeconds)}`, [{ name: 'seconds', points: lagS }], { format: formatSeconds }),
          legend(['seconds'])],
        figures: [figure('lag-versions', 'versions', formatCount(latest.lagVersions)),
          figure('lag-seconds', 'oldest unsnapshotted write', formatSeconds(latest.lagSeconds))],
      }),
      card('subscribers', 'Subscribers and MCP sessions', {
        charts: [chart(`Subscribers: ${formatCount(latest.subscribers)}, MCP sessions: ${formatCount(latest.mcpSessions)}`,
          [{ name: 'subscribers', points: history.gauge('subscribers') },
            { name: 'mcp-sessions', points: history.gauge('mcpSessions') }]), legend(['subscribers', 'MCP sessions'])],
        figures: [figure('subscribers', 'subscribers', formatCount(latest.subscribers)),
          figure('mcp-sessions', 'MCP sessions', formatCount(latest.mcpSessions))],
      }),
      card('documents', 'Documents', {
        charts: [chart(`Documents: ${formatCount(latest.documents)}`, [{ name: 'documents', points: history.gauge('documents') }])],
        figures: [figure('documents', 'in the store', formatCount(latest.documents))],
      }),
    ];
    if (latest.postgresAvailable !== null) {
      cards.push(card('postgres', 'PostgreSQL', {
        figures: [figure('postgres-available', 'state', latest.postgresAvailable >= 1 ? 'available' : 'outage'),
          figure('postgres-pool', 'connections used',
            `${formatCount(latest.poolUsed)} of ${formatCount(latest.poolMax)} (${formatCount(latest.poolIdle)} idle)`)],
      }));
    }
    this.cards.replaceChildren(...cards);
  }
}
