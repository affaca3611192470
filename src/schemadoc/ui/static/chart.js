// Small inline SVG line charts, drawn by the page itself: time on x (a fixed span ending now), one
// or more series on y from 0, a gap wherever a value is missing. Labels are set as text only.

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 320;
const HEIGHT = 84;
const PAD = { top: 6, right: 4, bottom: 4, left: 4 };

function svg(tag, attributes = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) el.setAttribute(key, String(value));
  return el;
}

/** A round number at or above `value` (1, 2 or 5 times a power of ten), so the scale does not jitter. */
export function niceCeiling(value) {
  if (!(value > 0) || !Number.isFinite(value)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) {
    if (value <= step * power) return step * power;
  }
  return 10 * power;
}

/** The SVG path of one series: [[t, value]...], broken where a value is null, NaN or infinite. */
function pathOf(points, x, y) {
  let d = '';
  let run = 0; // points in the current stretch without a gap; a lone point is drawn as a dot
  const end = () => { if (run === 1) d += 'h0.1'; run = 0; };
  for (const [t, value] of points) {
    if (value === null || value === undefined || !Number.isFinite(value)) {
      end();
      continue;
    }
    d += `${run ? 'L' : 'M'}${x(t).toFixed(1)} ${y(value).toFixed(1)}`;
    run += 1;
  }
  end();
  return d;
}

/**
 * A chart: `series` [{name, points: [[t, value]...], kind}] over the `span` milliseconds ending at
 * `now`; `ceiling` (optional) a value the scale must reach, e.g. a limit drawn as a dashed line
 * (`limit`); `format` writes the top of the scale. `label` becomes the chart's accessible name (the figures are also shown as text).
 */
export function lineChart({ series, now, span, label, ceiling = 0, limit = null, format = String }) {
  let top = ceiling;
  for (const one of series) {
    for (const [, value] of one.points) if (Number.isFinite(value) && value > top) top = value;
  }
  const hasLimit = limit !== null && Number.isFinite(limit) && limit > 0;
  top = hasLimit && top <= limit ? limit : niceCeiling(top); // under a limit, the chart's top is the limit
  const x = (t) => PAD.left + ((t - (now - span)) / span) * (WIDTH - PAD.left - PAD.right);
  const y = (value) => HEIGHT - PAD.bottom - (Math.max(0, value) / top) * (HEIGHT - PAD.top - PAD.bottom);
  const chart = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: 'chart-plot', role: 'img',
    preserveAspectRatio: 'none' });
  chart.setAttribute('aria-label', label);
  const title = svg('title');
  title.textContent = label;
  chart.append(title);
  chart.append(svg('line', { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(0), y2: y(0), class: 'axis' }));
  if (hasLimit) {
    chart.append(svg('line', { x1: PAD.left, x2: WIDTH - PAD.right, y1: y(limit), y2: y(limit), class: 'limit' }));
  }
  const scale = svg('text', { x: PAD.left + 2, y: PAD.top + 8, class: 'scale' }); // old points are on the left
  scale.textContent = format(top);
  chart.append(scale);
  series.forEach((one, index) => {
    const d = pathOf(one.points.filter(([t]) => t >= now - span), x, y);
    if (d) chart.append(svg('path', { d, class: `series series-${one.kind ?? index}`, 'data-series': one.name }));
  });
  return chart;
}

/** A legend for a chart of several series: each name beside a swatch of its line's colour. */
export function legend(names) {
  const list = document.createElement('ul');
  list.className = 'legend';
  names.forEach((name, index) => {
    const item = document.createElement('li');
    const swatch = document.createElement('span');
    swatch.className = `swatch series-${index}`;
    swatch.setAttribute('aria-hidden', 'true');
    item.append(swatch, name);
    list.append(item);
  });
  return list;
}
