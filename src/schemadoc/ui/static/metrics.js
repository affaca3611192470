// The Prometheus text format, read as far as the status view needs it: samples with their labels,
// sums over series, histogram buckets and quantiles (as Prometheus' histogram_quantile computes them).

/** A sample value: a decimal number, +Inf / -Inf / NaN (any case), or null when it is none of these. */
export function parseValue(text) {
  const lower = text.toLowerCase();
  if (lower === '+inf' || lower === 'inf') return Infinity;
  if (lower === '-inf') return -Infinity;
  if (lower === 'nan') return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text) && !/^[+-]?0x[0-9a-f]+$/i.test(text)) return null;
  const value = Number(text);
  return Number.isNaN(value) ? null : value;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const ESCAPES = { '\\': '\\', '"': '"', n: '\n' };

/** The labels of `{a="x",b="y\"z"}` starting at `line[start] === '{'`: [labels, index after '}'], or null. */
function parseLabels(line, start) {
  const labels = {};
  let i = start + 1;
  for (;;) {
    while (line[i] === ' ' || line[i] === '\t') i += 1;
    if (line[i] === '}') return [labels, i + 1];
    const name = LABEL_NAME.exec(line.slice(i));
    if (!name) return null;
    i += name[0].length;
    while (line[i] === ' ' || line[i] === '\t') i += 1;
    if (line[i] !== '=') return null;
    i += 1;
    while (line[i] === ' ' || line[i] === '\t') i += 1;
    if (line[i] !== '"') return null;
    i += 1;
    let value = '';
    for (;;) {
      if (i >= line.length) return null;
      const char = line[i];
      if (char === '"') break;
      if (char === '\\') {
        const next = line[i + 1];
        value += next in ESCAPES ? ESCAPES[next] : `\\${next ?? ''}`; // an unknown escape stays as written
        i += 2;
      } else {
        value += char;
        i += 1;
      }
    }
    labels[name[0]] = value;
    i += 1;
    while (line[i] === ' ' || line[i] === '\t') i += 1;
    if (line[i] === ',') i += 1;
    else if (line[i] !== '}') return null;
  }
}

/** One sample line, or null when it is not one. */
function parseSample(line) {
  const name = NAME.exec(line);
  if (!name) return null;
  let labels = {};
  let i = name[0].length;
  if (line[i] === '{') {
    const parsed = parseLabels(line, i);
    if (!parsed) return null;
    [labels, i] = parsed;
  }
  let tail = line.slice(i);
  const exemplar = tail.indexOf(' # '); // OpenMetrics: an exemplar after the value
  if (exemplar >= 0) tail = tail.slice(0, exemplar);
  const rest = tail.trim().split(/[ \t]+/);
  if (rest.length < 1 || rest.length > 2) return null; // the value, and perhaps a timestamp
  const value = parseValue(rest[0]);
  return value === null ? null : { name: name[0], labels, value };
}

/**
 * The samples of an exposition in the text format: [{name, labels, value}], in order.
 * `# HELP`, `# TYPE`, other comments and blank lines are skipped, and so is any line that is not a
 * sample (counted in `skipped`), so one odd line never hides the rest.
 */
export function parseMetrics(text) {
  const samples = [];
  let skipped = 0;
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const sample = parseSample(trimmed);
    if (sample) samples.push(sample);
    else skipped += 1;
  }
  samples.skipped = skipped;
  return samples;
}

const matches = (labels, where) => !where || where(labels);

/** The sum of every series named `name` whose labels pass `where`; null when there is none. */
export function sumOf(samples, name, where) {
  let total = null;
  for (const sample of samples) {
    if (sample.name === name && matches(sample.labels, where) && !Number.isNaN(sample.value)) {
      total = (total ?? 0) + sample.value;
    }
  }
  return total;
}

/** Sums of the series named `name` grouped by one label: {labelValue: sum}. */
export function sumBy(samples, name, label, where) {
  const sums = {};
  for (const sample of samples) {
    if (sample.name === name && matches(sample.labels, where) && !Number.isNaN(sample.value)) {
      const key = sample.labels[label] ?? '';
      sums[key] = (sums[key] ?? 0) + sample.value;
    }
  }
  return sums;
}

/**
 * The buckets of histogram `name` (its `_bucket` series), summed by upper bound over every series
 * whose labels pass `where`, as Prometheus' `sum by (le)`: [{le, count}] sorted by `le`.
 */
export function bucketsOf(samples, name, where) {
  const byBound = new Map();
  for (const sample of samples) {
    if (sample.name !== `${name}_bucket` || !matches(sample.labels, where)) continue;
    const le = parseValue(sample.labels.le ?? '');
    if (le === null || Number.isNaN(le)) continue;
    byBound.set(le, (byBound.get(le) ?? 0) + sample.value);
  }
  return [...byBound].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
}

/**
 * What was observed between two readings of the same buckets (`before` may be null: everything).
 * A counter that went down means the server restarted: then `now` is what happened since.
 */
export function bucketsDelta(now, before) {
  if (!before) return now;
  const earlier = new Map(before.map((bucket) => [bucket.le, bucket.count]));
  const delta = now.map((bucket) => ({ le: bucket.le, count: bucket.count - (earlier.get(bucket.le) ?? 0) }));
  return delta.some((bucket) => bucket.count < 0) ? now : delta;
}

/** What a counter grew by between two readings; a counter that went down restarted from zero. */
export function counterDelta(now, before) {
  if (now === null || now === undefined) return null;
  if (before === null || before === undefined) return null;
  return now >= before ? now - before : now;
}

/**
 * The q-quantile (0 <= q <= 1) of the observations counted in cumulative `buckets` ([{le, count}]),
 * interpolated linearly inside the bucket that holds it, exactly as Prometheus' histogram_quantile:
 * NaN without a +Inf bucket or without observations; the highest finite bound when the quantile
 * falls in the +Inf bucket; a first bucket with a bound <= 0 gives that bound.
 */
export function histogramQuantile(q, buckets) {
  if (Number.isNaN(q)) return NaN;
  if (q < 0) return -Infinity;
  if (q > 1) return Infinity;
  const sorted = [...buckets].sort((a, b) => a.le - b.le);
  if (sorted.length === 0 || sorted[sorted.length - 1].le !== Infinity) return NaN;
  const merged = [];
  for (const bucket of sorted) { // buckets with one bound: their counts add up
    const last = merged[merged.length - 1];
    if (last && last.le === bucket.le) last.count += bucket.count;
    else merged.push({ le: bucket.le, count: bucket.count });
  }
  for (let i = 1; i < merged.length; i += 1) { // counts never go down as the bound grows
    if (merged[i].count < merged[i - 1].count) merged[i].count = merged[i - 1].count;
  }
  if (merged.length < 2) return NaN;
  const observations = merged[merged.length - 1].count;
  if (!(observations > 0)) return NaN;
  let rank = q * observations;
  let b = merged.findIndex((bucket, i) => i < merged.length - 1 && bucket.count >= rank);
  if (b < 0) b = merged.length - 1;
  if (b === merged.length - 1) return merged[merged.length - 2].le;
  if (b === 0 && merged[0].le <= 0) return merged[0].le;
  let start = 0;
  let count = merged[b].count;
  if (b > 0) {
    start = merged[b - 1].le;
    count -= merged[b - 1].count;
    rank -= merged[b - 1].count;
  }
  return start + (merged[b].le - start) * (rank / count);
}
