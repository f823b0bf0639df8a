// The hyperparameter view (ADR 0065): runs x (config keys, summary metrics) as a sortable table,
// and parallel coordinates over chosen keys, each line coloured by a chosen metric. Dragging
// along an axis brushes a range (a number axis) or a set of values (a text axis); the runs
// outside every brush leave the runs table, the charts, media and stats (state.brushes, kept
// in the URL). A click on an axis without a drag clears its brush. Text from runs is DOM
// text (textContent, each in its bidi isolate), never drawn into the canvas.
"use strict";

const PC_H = 330, PC_TOP = 34, PC_BOTTOM = 22, PC_SIDE = 60, PC_GRAB = 16;
// A perceptual ramp (dark blue -> teal -> yellow), low values to high.
const RAMP = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];

function rampColor(t) {
  const p = Math.min(Math.max(t, 0), 1) * (RAMP.length - 1), i = Math.min(Math.floor(p), RAMP.length - 2), f = p - i;
  const c = RAMP[i].map((v, k) => Math.round(v + (RAMP[i + 1][k] - v) * f));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

// Every config key and summary metric of the runs, config first; keys whose value differs
// between runs before the ones all runs share.
function hparamColumns(runs) {
  const config = new Set(), summary = new Set();
  for (const r of runs) {
    for (const k of Object.keys(r.config || {})) config.add("config." + k);
    for (const k of Object.keys(r.summary || {})) summary.add("summary." + k);
  }
  const varies = (key) => new Set(runs.map((r) => fmt(hparamValue(r, key)))).size > 1;
  const order = (keys) => { const all = [...keys].sort(); return [...all.filter(varies), ...all.filter((k) => !varies(k))]; };
  return { config: order(config), summary: [...summary].sort(), varies };
}

function colorKey(cols) {
  if (state.colorBy && cols.summary.concat(cols.config).includes(state.colorBy)) return state.colorBy;
  return cols.summary.find((k) => /loss|return|reward|acc/i.test(k)) || cols.summary[0] || "";
}

function chosenAxes(cols, color) {
  const known = new Set([...cols.config, ...cols.summary]);
  const axes = state.axes.filter((a) => known.has(a));
  if (axes.length) return axes;
  const picked = cols.config.filter(cols.varies).slice(0, 7);
  if (color && !picked.includes(color)) picked.push(color);
  return picked;
}

// One axis's scale: numbers (linear, or log when all positive over 3+ decades) or text values.
function axisScale(key, runs) {
  const values = runs.map((r) => hparamValue(r, key)).filter((v) => v !== undefined && v !== null);
  if (values.length && values.every((v) => typeof v === "number" && isFinite(v))) {
    let lo = Math.min(...values), hi = Math.max(...values);
    const log = lo > 0 && hi / lo >= 1000;
    if (lo === hi) { lo -= 1; hi += 1; }
    const f = log ? Math.log10 : (v) => v;
    const pos = (v) => (f(v) - f(lo)) / (f(hi) - f(lo));
    const val = (t) => (log ? Math.pow(10, Math.log10(lo) + t * (Math.log10(hi) - Math.log10(lo))) : lo + t * (hi - lo));
    const ticks = log ? [lo, Math.sqrt(lo * hi), hi] : [lo, (lo + hi) / 2, hi];
    return { key, numeric: true, log, pos, val, ticks };
  }
  const cats = [...new Set(values.map(fmt))].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  const pos = (v) => (cats.length > 1 ? cats.indexOf(fmt(v)) / (cats.length - 1) : 0.5);
  return { key, numeric: false, cats, pos, ticks: cats };
}

function pcLayout(canvasWidth, axes) {
  const step = axes.length > 1 ? (canvasWidth - 2 * PC_SIDE) / (axes.length - 1) : 0;
  const x = (i) => (axes.length > 1 ? PC_SIDE + i * step : canvasWidth / 2);
  const y = (t) => PC_TOP + (1 - t) * (PC_H - PC_TOP - PC_BOTTOM);
  return { x, y };
}

function drawParallel(box, runs, axes, color) {
  const width = Math.max(box.clientWidth || 900, 360);
  const [c, ctx] = canvas(width, PC_H);
  c.className = "pc-canvas";
  const scales = axes.map((k) => axisScale(k, runs));
  const colorScale = color ? axisScale(color, runs) : null;
  const L = pcLayout(width, axes);
  const kept = runs.filter(passesBrushes), out = runs.filter((r) => !passesBrushes(r));
  const line = (run, stroke, w) => {
    ctx.strokeStyle = stroke; ctx.lineWidth = w;
    ctx.beginPath();
    let open = false;
    scales.forEach((s, i) => {
      const v = hparamValue(run, s.key);
      if (v === undefined || v === null || (s.numeric && !(typeof v === "number" && isFinite(v)))) { open = false; return; }
      const px = L.x(i), py = L.y(s.pos(v));
      if (open) ctx.lineTo(px, py); else ctx.moveTo(px, py);
      open = true;
    });
    ctx.stroke();
  };
  for (const run of out) line(run, "rgba(156, 163, 175, 0.35)", 1);
  for (const run of kept) {
    const v = colorScale ? hparamValue(run, color) : undefined;
    line(run, v === undefined || v === null ? "rgb(107, 114, 128)" : rampColor(colorScale.pos(v)), 1.6);
  }
  ctx.strokeStyle = "#374151"; ctx.lineWidth = 1;
  const overlay = el("div", { className: "pc-labels" });
  scales.forEach((s, i) => {
    const x = L.x(i);
    ctx.beginPath(); ctx.moveTo(x, L.y(1)); ctx.lineTo(x, L.y(0)); ctx.stroke();
    const b = state.brushes[s.key];
    if (b) {
      const ts = b.values ? b.values.map((v) => s.pos(v)) : [s.pos(b.lo), s.pos(b.hi)];
      const top = L.y(Math.max(...ts)) - 4, bottom = L.y(Math.min(...ts)) + 4;
      ctx.fillStyle = "rgba(37, 99, 235, 0.22)"; ctx.fillRect(x - 8, top, 16, bottom - top);
      ctx.strokeStyle = "#1d4ed8"; ctx.strokeRect(x - 8, top, 16, bottom - top); ctx.strokeStyle = "#374151";
    }
    const title = el("div", { className: "pc-title", title: isolated(s.key) + (s.log ? " (log scale)" : "") });
    title.append(bdi(s.key.replace(/^(config|summary)\./, "")), s.log ? " (log)" : "");
    title.style.left = x + "px";
    title.dataset.key = s.key;
    overlay.append(title);
    const ticks = s.numeric ? s.ticks : s.ticks.length > 12 ? [s.ticks[0], s.ticks[s.ticks.length - 1]] : s.ticks;
    const last = i === scales.length - 1 && scales.length > 1;  // its labels go left of it
    for (const t of ticks) {
      const label = el("div", { className: "pc-tick" + (last ? " left" : "") });
      label.append(bdi(s.numeric ? fmt(+t.toPrecision(4)) : t));
      label.style.left = (last ? x - 5 : x + 5) + "px";
      label.style.top = L.y(s.pos(t)) - 7 + "px";
      overlay.append(label);
    }
  });
  const frame = el("div", { className: "pc-frame" });
  frame.append(c, overlay);
  brushing(c, scales, L, runs);
  return { frame, scales, colorScale, layout: L, width };
}

// Drag along an axis to brush it; a click (no drag) on an axis clears its brush.
let pcDragging = false;
function brushing(c, scales, L, runs) {
  let drag = null;
  const local = (ev) => { const r = c.getBoundingClientRect(); return [ev.clientX - r.left, ev.clientY - r.top]; };
  c.addEventListener("pointerdown", (ev) => {
    const [px, py] = local(ev);
    const i = scales.findIndex((s, k) => Math.abs(L.x(k) - px) <= PC_GRAB);
    if (i < 0) return;
    drag = { i, y0: py };
    pcDragging = true;
    c.setPointerCapture(ev.pointerId);
    ev.preventDefault();
  });
  c.addEventListener("pointercancel", () => { drag = null; pcDragging = false; });
  c.addEventListener("pointerup", (ev) => {
    if (!drag) return;
    const s = scales[drag.i], y1 = local(ev)[1];
    const t0 = 1 - (Math.min(drag.y0, y1) - PC_TOP) / (PC_H - PC_TOP - PC_BOTTOM);
    const t1 = 1 - (Math.max(drag.y0, y1) - PC_TOP) / (PC_H - PC_TOP - PC_BOTTOM);
    const lo = Math.max(Math.min(t0, t1), -0.02), hi = Math.min(Math.max(t0, t1), 1.02);
    drag = null;
    pcDragging = false;
    if (Math.abs(hi - lo) * (PC_H - PC_TOP - PC_BOTTOM) < 4) delete state.brushes[s.key];
    else if (s.numeric) state.brushes[s.key] = { lo: s.val(Math.max(lo, 0)), hi: s.val(Math.min(hi, 1)) };
    else state.brushes[s.key] = { values: s.cats.filter((v) => s.pos(v) >= lo && s.pos(v) <= hi) };
    brushesChanged();
    renderHparams();
  });
}

function hparamsTable(runs, columns) {
  const t = el("table", { className: "data hp-table" });
  const head = el("tr");
  const sortCol = state.hsort.replace(/^-/, ""), desc = state.hsort.startsWith("-");
  for (const col of ["run", ...columns]) {
    const th = el("th", { className: "sortable" + (col === "run" ? " sticky" : "") });
    th.dataset.column = col;
    th.append(bdi(col.replace(/^(config|summary)\./, "")), col === sortCol ? (desc ? " ▼" : " ▲") : "");
    th.title = isolated(col) + " (click to sort)";
    th.addEventListener("click", () => { state.hsort = state.hsort === col ? "-" + col : col; writeUrl(); renderHparams(); });
    head.append(th);
  }
  const body = el("tbody");
  const sorted = sortCol ? runs.slice().sort((x, y) => {
    const a = sortCol === "run" ? runLabel(x.key) : hparamValue(x, sortCol), b = sortCol === "run" ? runLabel(y.key) : hparamValue(y, sortCol);
    if (a === b) return 0;
    if (a === undefined || a === null) return 1;
    if (b === undefined || b === null) return -1;
    const c = typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b), undefined, { numeric: true });
    return desc ? -c : c;
  }) : runs;
  for (const run of sorted) {
    const tr = el("tr", { className: "hp-run" + (state.selected.has(run.key) ? " selected" : "") });
    tr.dataset.key = run.key;
    const first = el("td", { className: "sticky name" });
    const box = el("input", { type: "checkbox", checked: state.selected.has(run.key), title: "chart this run" });
    box.addEventListener("change", () => {
      if (box.checked) state.selected.add(run.key); else state.selected.delete(run.key);
      tr.classList.toggle("selected", box.checked);
      renderRuns();
      selectionChanged();
    });
    first.append(box, chip(run.key));
    tr.append(first);
    for (const col of columns) {
      const v = hparamValue(run, col);
      const td = el("td", { className: typeof v === "number" ? "num" : "" });
      td.append(bdi(fmt(v)));
      tr.append(td);
    }
    body.append(tr);
  }
  t.append(el("thead"), body);
  t.firstChild.append(head);
  return scrolling(t);
}

function keyPicker(label, keys, chosen, onPick) {
  const pick = el("select", { title: label });
  pick.append(el("option", { value: "" }, label));
  for (const k of keys) pick.append(el("option", { value: k, selected: k === chosen }, isolated(k)));
  pick.addEventListener("change", () => onPick(pick.value));
  return pick;
}

function renderHparams() {
  const container = document.getElementById("hparams");
  if (container.hidden || pcDragging) return;
  const t0 = performance.now();
  const runs = visibleRuns(false);  // the filter box's runs; brushed-out ones drawn grey
  if (!runs.length) {
    container.replaceChildren(el("div", { className: "empty" }, "no runs (the filter box leaves none)"));
    return;
  }
  const cols = hparamColumns(runs);
  const color = colorKey(cols);
  const axes = chosenAxes(cols, color);
  const bar = el("div", { className: "bar hp-bar" });
  bar.append("colour by ", keyPicker("(none)", [...cols.summary, ...cols.config], color, (k) => { state.colorBy = k; writeUrl(); renderHparams(); }));
  const axisChips = el("span", { className: "hp-axes" });
  for (const a of axes) {
    const chipNode = el("span", { className: "hp-axis" });
    chipNode.append(bdi(a.replace(/^(config|summary)\./, "")));
    const x = el("button", { className: "drop", title: "remove this axis" }, "×");
    x.addEventListener("click", () => { state.axes = axes.filter((k) => k !== a); if (!state.axes.length) state.axes = axes.slice(0, 1); writeUrl(); renderHparams(); });
    chipNode.append(x);
    axisChips.append(chipNode);
  }
  bar.append(" axes ", axisChips, keyPicker("+ axis", [...cols.config, ...cols.summary].filter((k) => !axes.includes(k)), "",
    (k) => { if (k) { state.axes = [...axes, k]; writeUrl(); renderHparams(); } }));
  const inside = runs.filter(passesBrushes).length;
  const brushed = Object.keys(state.brushes).length;
  bar.append(el("span", { className: "hp-count" }, brushed ? `${inside} of ${runs.length} runs inside ${brushed} brush${brushed === 1 ? "" : "es"}` : `${runs.length} runs · drag along an axis to filter`));
  if (brushed) {
    const clear = el("button", {}, "clear brushes");
    clear.addEventListener("click", () => { state.brushes = {}; brushesChanged(); renderHparams(); });
    bar.append(clear);
  }
  const chart = el("div", { className: "panel wide pc-panel" });
  container.replaceChildren(bar, chart);
  const drawn = drawParallel(chart, runs, axes, color);
  chart.append(drawn.frame);
  if (drawn.colorScale) {
    const legend = el("div", { className: "pc-legend" });
    const lo = drawn.colorScale.numeric ? fmt(drawn.colorScale.val(0)) : drawn.colorScale.cats[0];
    const hi = drawn.colorScale.numeric ? fmt(drawn.colorScale.val(1)) : drawn.colorScale.cats[drawn.colorScale.cats.length - 1];
    legend.append("colour: ", bdi(color.replace(/^(config|summary)\./, "")), " ", bdi(lo), el("i", { className: "ramp" }), bdi(hi));
    chart.append(legend);
  }
  chart.pc = drawn;
  container.append(hparamsTable(runs.filter(passesBrushes), [...cols.config, ...cols.summary]));
  window.__hparamsDrawn = performance.now() - t0;
  window.__hparamsEnd = performance.now();
}

async function loadHparams() {
  renderHparams();
}
