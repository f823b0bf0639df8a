// One chart panel with uPlot: runs (or groups: mean or median line, a std, stderr or min-max
// band, "n=" where the member count changes), smoothing by distance with the raw line faint
// behind, alert markers at the watcher's step, NaN marks, zoom by drag.
// Nothing from a run is handed to uPlot as a string: its legend is off, ours uses textContent.
"use strict";

const CHART_H = 210;

// Smoothing by distance, not by index (ADR 0064): a time-weighted, debiased EMA. The points are
// taken as a line (linear between them) and averaged under an exponential kernel whose length
// is set by the slider and the panel's x range (weight w: tau = range / 1000 / -ln w, as W&B's
// time-weighted EMA), integrated exactly segment by segment and divided by the kernel's own
// mass since the first point (the debiasing). The same curve logged 10x more densely gives the
// same line; on the time axis it smooths by seconds.
const SMOOTH_SCALE = 1000;
function twema(xs, ys, weight, span) {
  if (!weight || !(span > 0)) return ys;
  const tau = span / SMOOTH_SCALE / -Math.log(weight);
  const out = new Array(ys.length).fill(null);
  let num = 0, mass = 0, px = null, py = null;
  for (let i = 0; i < ys.length; i++) {
    const x = xs[i], y = ys[i];
    if (y === null || y === undefined || !isFinite(y) || x === null || !isFinite(x)) continue;
    if (px !== null && x > px) {
      const u = (x - px) / tau;
      const kept = Math.exp(-u), added = -Math.expm1(-u);  // e^-u and 1 - e^-u, exactly
      const slope = u < 1e-4 ? u / 2 : 1 - added / u;        // the far end's share of a segment
      num = kept * num + added * py + (y - py) * slope;
      mass = kept * mass + added;
    }
    out[i] = mass > 0 ? num / mass : y;
    px = x; py = y;
  }
  return out;
}

// The x range smoothing is measured against: the panel's whole range (kept while zoomed in,
// so zooming does not change the curve).
function smoothSpan(panel, xs) {
  let lo = Infinity, hi = -Infinity;
  for (const list of xs) for (const x of list) { if (x < lo) lo = x; if (x > hi) hi = x; }
  const here = hi > lo ? hi - lo : 0;
  if (!state.zoom[panel.dataset.metric]) panel.fullSpan = here;
  return panel.fullSpan || here;
}

function alpha(color, a) {
  return color.replace("hsl(", "hsla(").replace(")", `, ${a})`);
}

// The 5th-95th percentile of what is shown, padded: linearly, or by a factor on a log scale
// (where only positive values count).
function quantileRange(data, log) {
  const all = [];
  for (let s = 1; s < data.length; s++) {
    for (const v of data[s]) if (v !== null && v !== undefined && isFinite(v) && (!log || v > 0)) all.push(v);
  }
  if (all.length < 8) return null;
  all.sort((a, b) => a - b);
  const lo = all[Math.floor(all.length * 0.05)], hi = all[Math.ceil(all.length * 0.95) - 1];
  if (log) return lo === hi ? [lo / 2, hi * 2] : [lo / 1.2, hi * 1.2];
  const pad = (hi - lo) * 0.1 || Math.abs(hi) * 0.1 || 1;
  return [lo - pad, hi + pad];
}

// A log scale over whole decades (its ticks then sit at both ends). Zero and negative values
// cannot be placed on it: it starts at the smallest positive value shown.
function logRange(data, min, max) {
  let lo = min;
  if (!(lo > 0)) {
    lo = Infinity;
    for (let s = 1; s < data.length; s++) for (const v of data[s]) if (v > 0 && v < lo) lo = v;
    if (!isFinite(lo)) return [1, 10];
  }
  const hi = max > lo ? max : lo * 10;
  return [Math.pow(10, Math.floor(Math.log10(lo))), Math.pow(10, Math.ceil(Math.log10(hi)))];
}

function alertMatches(metric, alert) {
  const name = String(alert.metric || "");
  const source = alert.source ? String(alert.source) : "";
  if (!name) return false;
  if (metric === name || (source && metric === source + "/" + name)) return true;
  if (source) return metric.endsWith("/" + source + "/" + name);
  return metric.endsWith("/" + name);
}

// A group's line (mean or median) and its band (std, stderr or min-max around it; none).
function groupLines(g) {
  const center = state.center === "median" ? g.median : g.mean;
  if (state.band === "none") return { center, lo: null, hi: null };
  if (state.band === "minmax") return { center, lo: g.lo, hi: g.hi };
  const spread = state.band === "stderr" ? g.stderr : g.std;
  const shift = (sign) => center.map((c, i) => (c === null || spread[i] === null ? null : c + sign * spread[i]));
  return { center, lo: shift(-1), hi: shift(1) };
}

// Where a group's member count changes (and where it starts): the "n=" marks over the chart.
// A member that ends is still there at its last x: the smaller count is marked from that x on.
function countMarks(g) {
  const marks = [];
  let last = -1;
  g.count.forEach((n, i) => {
    if (n === last) return;
    if (n > 0) marks.push({ x: i && n < last && last > 0 ? g.x[i - 1] : g.x[i], n });
    last = n;
  });
  return marks;
}

// Build the aligned uPlot data and series list for one panel.
function panelModel(panel, reply) {
  const pairs = [], series = [{}], bands = [], legend = [], nan = [], marks = [];
  const smooth = state.smooth;
  if (reply.groups) {
    const labels = groupLabels();
    const span = smoothSpan(panel, reply.groups.map((g) => g.x));
    for (const g of reply.groups) {
      const color = groupColor(g.label, labels);
      const lines = groupLines(g);
      const dots = { show: g.x.length <= 60, size: 6, fill: color };  // single points are points
      if (lines.lo) {
        const base = series.length;
        pairs.push([g.x, twema(g.x, lines.hi, smooth, span)], [g.x, twema(g.x, lines.lo, smooth, span)]);
        series.push({ stroke: alpha(color, 0.0), points: { show: false } },
          { stroke: alpha(color, 0.0), points: { show: false } });
        bands.push({ series: [base, base + 1], fill: alpha(color, 0.18) });
      }
      if (smooth > 0) {
        pairs.push([g.x, lines.center]);
        series.push({ stroke: alpha(color, 0.25), width: 1, points: { show: false } });
      }
      pairs.push([g.x, twema(g.x, lines.center, smooth, span)]);
      series.push({ stroke: color, width: 1.6, points: dots });
      legend.push({ key: g.label, label: [bdi(g.label), ` (n=${g.members})`], index: series.length - 1, color });
      marks.push({ color, label: g.label, marks: countMarks(g) });
    }
  } else {
    const span = smoothSpan(panel, Object.values(reply.series || {}).map((s) => s.x));
    for (const [key, s] of Object.entries(reply.series || {})) {
      const color = colorOf(key);
      const dots = { show: s.x.length <= 60, size: 5, fill: color };  // a few points: show them
      if (smooth > 0) {
        pairs.push([s.x, s.y]);
        series.push({ stroke: alpha(color, 0.25), width: 1, points: { show: false } });
      }
      pairs.push([s.x, twema(s.x, s.y, smooth, span)]);
      series.push({ stroke: color, width: 1.4, points: dots, spanGaps: true });
      legend.push({ key, label: runLabelNodes(key), index: series.length - 1, color });
      for (const x of s.nan || []) nan.push(x);
    }
  }
  const data = pairs.length ? uPlot.join(pairs) : [[]];
  return { data, series, bands, legend, nan, marks };
}

const MARK_ROW = 13;
function marksHeight(panel) {
  return panel.model && panel.model.marks.length ? panel.model.marks.length * MARK_ROW : 0;
}

// The "n=" marks of groups: at each x where a group's member count changes, in its colour,
// one row per group in the strip above the plot (text: textContent, and a handle for tests).
function drawCountMarks(u, panel) {
  for (const old of u.over.querySelectorAll(".n-mark")) old.remove();
  panel.model.marks.forEach((group, row) => {
    for (const m of group.marks) {
      const left = u.valToPos(m.x, "x");
      if (left < -1 || left > u.over.clientWidth + 1) continue;
      const mark = el("div", { className: "n-mark", title: isolated(group.label) + `: ${m.n} member${m.n === 1 ? "" : "s"} from here` }, `n=${m.n}`);
      mark.dataset.x = String(m.x);
      mark.dataset.n = String(m.n);
      mark.style.left = left + "px";
      mark.style.top = -marksHeight(panel) - 2 + row * MARK_ROW + "px";
      mark.style.color = group.color;
      mark.style.borderLeftColor = group.color;
      u.over.append(mark);
    }
  });
}

function drawMarkers(u, panel) {
  const ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
  ctx.save();
  ctx.lineWidth = 1.5 * devicePixelRatio;
  ctx.strokeStyle = "rgba(220,38,38,0.9)";
  ctx.setLineDash([5 * devicePixelRatio, 4 * devicePixelRatio]);
  for (const a of panel.alerts || []) {
    const x = u.valToPos(a.step, "x", true);
    if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
    ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + h); ctx.stroke();
  }
  ctx.setLineDash([]);
  ctx.strokeStyle = "rgba(75,85,99,0.9)";
  const s = 4 * devicePixelRatio, y = top + h - s - 2;
  for (const v of panel.model.nan) {
    const x = u.valToPos(v, "x", true);
    if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
    ctx.beginPath(); ctx.moveTo(x - s, y - s); ctx.lineTo(x + s, y + s);
    ctx.moveTo(x + s, y - s); ctx.lineTo(x - s, y + s); ctx.stroke();
  }
  ctx.restore();
  // DOM markers over the canvas: hover text (textContent) and a handle for tests
  for (const old of u.over.querySelectorAll(".alert-marker")) old.remove();
  for (const a of panel.alerts || []) {
    const left = u.valToPos(a.step, "x");
    if (left < 0 || left > u.over.clientWidth) continue;
    const title = isolated(a.message || "alert") + " (click: its entry in the stats tab)";
    const mark = el("div", { className: "alert-marker " + (a.severity || ""), title, role: "link", tabIndex: 0 }, "▼");
    mark.dataset.step = String(a.step);
    mark.addEventListener("click", () => showAlert(a));
    mark.addEventListener("keydown", (e) => { if (e.key === "Enter") showAlert(a); });
    mark.style.left = left + "px";
    u.over.append(mark);
  }
}

function updateLegend(panel, idx) {
  const u = panel.uplot;
  for (const item of panel.legendItems) {
    const v = idx === null || idx === undefined ? null : u.data[item.index][idx];
    item.value.textContent = v === null || v === undefined ? "" : fmt(v);
  }
}

function renderLegend(panel) {
  const box = panel.querySelector(".legend");
  box.replaceChildren();
  panel.legendItems = [];
  for (const item of panel.model.legend) {
    const c = chip(item.key, item.label, item.color);
    const value = el("b", { className: "value" });
    c.append(value);
    box.append(c);
    panel.legendItems.push({ index: item.index, value });
  }
}

function plotOptions(panel, name, width) {
  const time = (panel.axis || state.axis) === "time";
  return {
    width, height: CHART_H + marksHeight(panel),
    legend: { show: false },
    // the "n=" marks of groups get a strip of their own above the plot: they never hide data
    ...(marksHeight(panel) ? { padding: [marksHeight(panel) + 4, null, null, null] } : {}),
    cursor: { drag: { x: true, y: false, setScale: false }, sync: { key: "telemetry" }, points: { show: false } },
    scales: {
      x: { time },
      y: {
        distr: state.logy ? 3 : 1,
        range: (u, min, max) => {
          const q = state.outliers ? quantileRange(u.data, state.logy) : null;
          if (q) return q;
          if (min === null || max === null || !isFinite(min) || !isFinite(max)) return state.logy ? [1, 10] : [0, 1];
          if (state.logy) return logRange(u.data, min, max);
          if (min === max) return [min - 1, max + 1];
          const pad = (max - min) * 0.05;
          return isFinite(pad) ? [min - pad, max + pad] : [min, max];
        },
      },
    },
    axes: [
      { ...(time ? {} : numericAxis(false)), size: time ? 48 : 34, font: "11px system-ui" },
      { ...numericAxis(state.logy), size: axisWidth, font: "11px system-ui" },
    ],
    series: panel.model.series,
    bands: panel.model.bands,
    hooks: {
      draw: [(u) => {
        drawMarkers(u, panel);
        drawCountMarks(u, panel);
        if (!state.firstPaint && u.data[0].length) {
          state.firstPaint = true;
          window.__firstChartPaint = performance.now();
        }
      }],
      setCursor: [(u) => updateLegend(panel, u.cursor.idx)],
      setSelect: [(u) => {
        if (u.select.width < 4) return;
        const lo = u.posToVal(u.select.left, "x"), hi = u.posToVal(u.select.left + u.select.width, "x");
        u.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
        state.zoom[name] = [lo, hi];
        writeUrl();
        loadPanel(panel);
      }],
    },
  };
}

function drawPanel(panel, name, reply) {
  panel.reply = reply;
  panel.model = panelModel(panel, reply);
  const body = panel.querySelector(".chart");
  const notes = [];
  const partial = reply.partial || [];  // drawn before its runs were indexed: said on the chart
  if (partial.length === 1) {
    notes.push([el("b", { className: "partial" }, `partial: ${Math.floor(partial[0].indexed * 100)}% indexed`), " (", ...runLabelNodes(partial[0].key), ")"]);
  } else if (partial.length) {
    const pct = partial.map((p) => Math.floor(p.indexed * 100));
    notes.push([el("b", { className: "partial" }, `partial: ${partial.length} runs ${Math.min(...pct)}–${Math.max(...pct)}% indexed`)]);
  }
  if (reply.xNote) notes.push([reply.xNote]);
  for (const g of reply.groups || []) if (g.note) notes.push([bdi(g.label), ": ", bdi(g.note)]);
  for (const [key, s] of Object.entries(reply.series || {})) {
    if (s.note) notes.push([...runLabelNodes(key), ": ", bdi(s.note)]);
    if (s.nan && s.nan.length) notes.push([...runLabelNodes(key), `: ${s.nan.length} NaN/inf marked ×`]);
  }
  panel.querySelector(".note").replaceChildren(...notes.flatMap((n, i) => (i ? [" · ", ...n] : n)));
  const width = Math.max(body.clientWidth || panel.clientWidth - 12, 280);
  if (panel.uplot) panel.uplot.destroy();
  body.replaceChildren();
  panel.uplot = new uPlot(plotOptions(panel, name, width), panel.model.data, body);
  body.__uplot = panel.uplot;
  const zoom = state.zoom[name];
  if (zoom) panel.uplot.setScale("x", { min: zoom[0], max: zoom[1] });
  panel.uplot.over.addEventListener("dblclick", () => {
    if (!state.zoom[name]) return;
    delete state.zoom[name];
    writeUrl();
    loadPanel(panel);
  });
  renderLegend(panel);
  updateLegend(panel, null);
}
