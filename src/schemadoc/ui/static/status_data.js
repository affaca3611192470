// What the status view keeps of the server's /metrics: one summary per reading, in a window bounded
// in time and in points, and the series the charts draw from it (rates from counter deltas,
// latency quantiles from histogram bucket deltas).

import { bucketsDelta, bucketsOf, counterDelta, histogramQuantile, sumOf } from './metrics.js';

export const WINDOW_MS = 5 * 60 * 1000;
export const LATENCY_WINDOW_MS = 30 * 1000;
export const MAX_POINTS = 300;

const REQUESTS = 'schemadoc_requests_total';
const DURATION = 'schemadoc_request_duration_seconds';

/** Requests counted by the view: every one but the readings of /metrics themselves (this page's, Prometheus'). */
const counted = (labels) => labels.operation !== 'metrics';
/** Requests timed for the latency: an event stream's duration is how long it stayed open, so streams are left out. */
const timed = (labels) => counted(labels) && labels.operation !== 'events';
/** An answer that is an error: an HTTP status of 400 or more, or `error` (stdio). */
export const isError = (labels) => labels.status === 'error' || Number(labels.status) >= 400;

/** The figures the view shows, from one parsed reading of /metrics (null where the server reports none). */
export function summarize(samples) {
  const errorCodes = {};
  const doors = {};
  for (const sample of samples) {
    if (sample.name !== REQUESTS || !counted(sample.labels) || Number.isNaN(sample.value)) continue;
    const door = sample.labels.door || 'other';
    doors[door] = (doors[door] ?? 0) + sample.value;
    if (isError(sample.labels)) {
      const code = sample.labels.code || `HTTP ${sample.labels.status}`;
      errorCodes[code] = (errorCodes[code] ?? 0) + sample.value;
    }
  }
  const requests = sumOf(samples, REQUESTS, counted);
  const errors = sumOf(samples, REQUESTS, (labels) => counted(labels) && isError(labels));
  const pool = (state) => sumOf(samples, 'schemadoc_postgres_pool_connections', (labels) => labels.state === state);
  return {
    requests,
    errors: requests === null ? null : errors ?? 0, // no error series yet: none answered
    errorCodes,
    doors,
    buckets: bucketsOf(samples, DURATION, timed),
    documents: sumOf(samples, 'schemadoc_documents'),
    memoryBudget: sumOf(samples, 'schemadoc_memory_budget_bytes'),
    memoryUsed: sumOf(samples, 'schemadoc_memory_used_bytes'),
    memoryDocuments: sumOf(samples, 'schemadoc_memory_documents'),
    evictions: sumOf(samples, 'schemadoc_memory_evictions_total'),
    lagVersions: sumOf(samples, 'schemadoc_snapshot_lag_versions'),
    lagSeconds: sumOf(samples, 'schemadoc_snapshot_lag_seconds'),
    subscribers: sumOf(samples, 'schemadoc_subscribers'),
    mcpSessions: sumOf(samples, 'schemadoc_mcp_sessions'),
    postgresAvailable: sumOf(samples, 'schemadoc_postgres_available'),
    poolUsed: pool('used'),
    poolIdle: pool('idle'),
    poolMax: sumOf(samples, 'schemadoc_postgres_pool_size_max'),
  };
}

/** The readings of the last `window` milliseconds (at most `maxPoints` of them), oldest first. */
export class StatusHistory {
  constructor({ window = WINDOW_MS, latencyWindow = LATENCY_WINDOW_MS, maxPoints = MAX_POINTS } = {}) {
    this.window = window;
    this.latencyWindow = latencyWindow;
    this.maxPoints = maxPoints;
    this.points = [];
  }

  /** Add the summary read at time `t` (milliseconds), dropping what falls out of the window. */
  add(t, summary) {
    this.points.push({ t, summary });
    while (this.points.length > this.maxPoints || (this.points.length && this.points[0].t < t - this.window)) {
      this.points.shift();
    }
  }

  get latest() {
    return this.points.length ? this.points[this.points.length - 1].summary : null;
  }

  /** One figure over time: [[t, value]...]. */
  gauge(key) {
    return this.points.map(({ t, summary }) => [t, summary[key]]);
  }

  /** A counter's growth per second between consecutive readings: [[t, perSecond]...], null at the first. */
  rate(key) {
    return this.points.map(({ t, summary }, i) => {
      if (i === 0) return [t, null];
      const before = this.points[i - 1];
      const seconds = (t - before.t) / 1000;
      const delta = counterDelta(summary[key], before.summary[key]);
      return [t, delta === null || seconds <= 0 ? null : delta / seconds];
    });
  }

  /** The q-quantile of request durations over the `latencyWindow` before each reading: [[t, seconds]...]. */
  latency(q) {
    return this.points.map(({ t, summary }, i) => {
      const from = this.points.findIndex((point) => point.t >= t - this.latencyWindow);
      if (from < 0 || from >= i) return [t, null];
      return [t, histogramQuantile(q, bucketsDelta(summary.buckets, this.points[from].summary.buckets))];
    });
  }

  /** The latest value of `series` (the last point), or null. */
  static now(series) {
    return series.length ? series[series.length - 1][1] : null;
  }

  /** The error codes answered most: [{code, recent, total}], `recent` within the window, most first. */
  topErrors(limit = 5) {
    const latest = this.latest;
    if (!latest) return [];
    const first = this.points[0].summary.errorCodes;
    const rows = Object.entries(latest.errorCodes).map(([code, total]) => {
      const recent = this.points.length > 1 ? counterDelta(total, first[code] ?? 0) : null;
      return { code, recent, total };
    });
    rows.sort((a, b) => (b.recent ?? 0) - (a.recent ?? 0) || b.total - a.total || a.code.localeCompare(b.code));
    return rows.slice(0, limit);
  }
}
