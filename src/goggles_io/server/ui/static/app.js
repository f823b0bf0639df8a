// telemetry ui: runs table, charts grouped by exact metric name, stats and media views.
// Every string from a run is put into the page with textContent (never innerHTML), and into
// plotly (which reads a little HTML in labels) with <, > and & turned into entities.
"use strict";

const state = {
  runs: [], selected: new Set(), filter: "", axis: "step", smooth: 0, logy: false,
  tab: "charts", zoom: {}, counts: "", firstPaint: false,
};
const COLORS = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d"];

function el(tag, props, text) {
  const node = document.createElement(tag);
  Object.assign(node, props || {});
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}
function plotText(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
function age(seconds) {
  if (typeof seconds !== "number") return "?";
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
    if (seconds >= size) return (seconds / size).toFixed(1) + unit;
  }
  return seconds.toFixed(0) + "s";
}
async function getJson(url) {
  const reply = await fetch(url, { credentials: "same-origin" });
  if (!reply.ok) throw new Error(url + ": " + reply.status);
  return reply.json();
}
function runQuery(keys) {
  return keys.map((k) => "run=" + encodeURIComponent(k)).join("&");
}
function colorOf(key) {
  const index = state.runs.findIndex((r) => r.key === key);
  return COLORS[(index < 0 ? 0 : index) % COLORS.length];
}
function runName(key) {
  const run = state.runs.find((r) => r.key === key);
  return run ? run.name + " (" + run.run_id + ")" : key;
}

// -- runs table ------------------------------------------------------------------------------
function renderRuns() {
  const body = document.querySelector("#runs tbody");
  body.replaceChildren();
  const needle = state.filter.toLowerCase();
  for (const run of state.runs) {
    const hay = [run.name, run.run_id, run.group, run.status, ...(run.tags || [])].join(" ").toLowerCase();
    if (needle && !hay.includes(needle)) continue;
    const row = el("tr", { className: "run" });
    row.dataset.key = run.key;
    const box = el("input", { type: "checkbox", checked: state.selected.has(run.key) });
    box.addEventListener("change", () => {
      if (box.checked) state.selected.add(run.key); else state.selected.delete(run.key);
      state.zoom = {};
      refreshView();
    });
    const check = el("td"); check.append(box); row.append(check);
    const name = el("td", { className: "name", title: run.path || run.run_id }, run.name);
    name.addEventListener("click", () => showConfig(run));
    row.append(name);
    const status = el("td"); status.append(el("span", { className: "status " + run.status }, run.status));
    row.append(status);
    row.append(el("td", { className: "age" }, age(run.age_s)));
    row.append(el("td", { className: "last-step" }, run.last_step === null ? "-" : run.last_step));
    const group = el("td", {}, run.group);
    for (const tag of run.tags || []) group.append(" ", el("span", { className: "tag" }, tag));
    row.append(group);
    body.append(row);
  }
}
function showConfig(run) {
  const box = document.getElementById("config-box");
  box.hidden = false;
  document.getElementById("config-title").textContent = "config of " + run.name;
  const lines = Object.keys(run.config || {}).sort().map((k) => k + " = " + JSON.stringify(run.config[k]));
  document.getElementById("config").textContent = lines.length ? lines.join("\n") : "(none recorded)";
}

// -- charts ----------------------------------------------------------------------------------
function ema(ys, weight) {
  if (!weight) return ys;
  const out = new Array(ys.length);
  let last = null;
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i];
    if (y === null) { out[i] = null; continue; }
    last = last === null ? y : last * weight + (1 - weight) * y;
    out[i] = last;
  }
  return out;
}
function xValues(xs) {
  return state.axis === "time" ? xs.map((ms) => new Date(ms)) : xs;
}
function tracesFor(perRun) {
  const traces = [];
  for (const [key, data] of Object.entries(perRun)) {
    const color = colorOf(key);
    const name = plotText(runName(key));
    const x = xValues(data.x);
    if (state.smooth > 0) {
      traces.push({ x, y: data.y, name, type: "scatter", mode: "lines", line: { color, width: 1 },
        opacity: 0.25, showlegend: false, hoverinfo: "skip" });
    }
    traces.push({ x, y: ema(data.y, state.smooth), name, type: "scatter", mode: "lines",
      line: { color, width: 1.5 } });
  }
  return traces;
}
function layoutFor(name, perRun) {
  const first = Object.values(perRun)[0];
  const axisName = state.axis === "custom" && first ? first.x_axis : state.axis;
  const layout = {
    margin: { l: 50, r: 10, t: 6, b: 36 }, showlegend: Object.keys(perRun).length > 1,
    legend: { orientation: "h", y: -0.25 }, hovermode: "x unified",
    xaxis: { title: { text: plotText(axisName || "step") }, type: state.axis === "time" ? "date" : "linear" },
    yaxis: { type: state.logy ? "log" : "linear" },
  };
  const zoom = state.zoom[name];
  if (zoom) { layout.xaxis.range = zoom.slice(); layout.xaxis.autorange = false; }
  return layout;
}
function markPainted() {
  if (!state.firstPaint) {
    state.firstPaint = true;
    window.__firstChartPaint = performance.now();
  }
}
function drawPanel(container, name, perRun) {
  let panel = container.querySelector(`.panel[data-metric="${CSS.escape(name)}"]`);
  if (!panel) {
    panel = el("div", { className: "panel" });
    panel.dataset.metric = name;
    panel.append(el("h3", { className: "metric-name" }, name));
    const chart = el("div", { className: "chart" });
    panel.append(chart);
    container.append(panel);
    Plotly.newPlot(chart, tracesFor(perRun), layoutFor(name, perRun),
      { responsive: true, displaylogo: false }).then(markPainted);
    chart.on("plotly_relayout", (ev) => onZoom(name, ev));
    return;
  }
  const chart = panel.querySelector(".chart");
  Plotly.react(chart, tracesFor(perRun), layoutFor(name, perRun)).then(markPainted);
}
async function onZoom(name, ev) {
  if (ev["xaxis.autorange"]) { delete state.zoom[name]; }
  else if (ev["xaxis.range[0]"] !== undefined) {
    let lo = ev["xaxis.range[0]"], hi = ev["xaxis.range[1]"];
    if (state.axis === "time") { lo = new Date(lo).getTime(); hi = new Date(hi).getTime(); }
    state.zoom[name] = [ev["xaxis.range[0]"], ev["xaxis.range[1]"]];
    state.zoomNum = state.zoomNum || {}; state.zoomNum[name] = [lo, hi];
  } else return;
  await loadSeries(name);
}
async function loadSeries(name) {
  const keys = [...state.selected];
  let url = `/api/series?${runQuery(keys)}&axis=${state.axis}&n=${chartWidth()}&metric=${encodeURIComponent(name)}`;
  const range = state.zoom[name] && state.zoomNum && state.zoomNum[name];
  if (range) url += `&x0=${range[0]}&x1=${range[1]}`;
  const reply = await getJson(url);
  drawPanel(document.getElementById("charts"), name, reply.charts[name] || {});
}
function chartWidth() {
  return Math.max(400, Math.min(2000, Math.round(window.innerWidth)));
}
async function loadCharts() {
  const container = document.getElementById("charts");
  const keys = [...state.selected];
  if (!keys.length) {
    container.replaceChildren(el("div", { className: "empty wide" }, "select a run on the left"));
    return;
  }
  const reply = await getJson(`/api/charts?${runQuery(keys)}&axis=${state.axis}&n=${chartWidth()}`);
  const names = Object.keys(reply.charts);
  for (const node of [...container.children]) {
    if (!node.dataset.metric || !(node.dataset.metric in reply.charts)) node.remove();
  }
  if (!names.length) container.append(el("div", { className: "empty wide" }, "no metrics logged yet"));
  for (const name of names) {
    if (state.zoom[name]) await loadSeries(name);
    else drawPanel(container, name, reply.charts[name]);
  }
}

// -- experiment stats ------------------------------------------------------------------------
function cell(value) {
  if (value === undefined || value === null) return "";
  if (typeof value === "number" && !Number.isInteger(value)) return value.toPrecision(4);
  return typeof value === "object" ? JSON.stringify(value) : value;
}
function table(rows, columns) {
  const t = el("table");
  const head = el("tr");
  for (const c of columns) head.append(el("th", {}, c));
  t.append(head);
  for (const row of rows) {
    const tr = el("tr");
    for (const c of columns) tr.append(el("td", {}, cell(row[c])));
    t.append(tr);
  }
  return t;
}
async function loadStats() {
  const container = document.getElementById("stats");
  container.replaceChildren();
  const runs = state.runs.filter((r) => state.selected.has(r.key) && r.stats);
  if (!runs.length) {
    container.append(el("div", { className: "empty wide" }, "no selected run has experiment stats (stats.jsonl)"));
    return;
  }
  for (const run of runs) {
    const data = await getJson("/api/stats?run=" + encodeURIComponent(run.key));
    const title = el("h3", { className: "wide" }, "experiment stats of " + run.name);
    container.append(title);
    const panel = el("div", { className: "panel wide" });
    panel.append(el("h3", {}, "% correct / confused / no match over episodes"));
    const chart = el("div", { className: "chart" });
    panel.append(chart);
    container.append(panel);
    const traces = [];
    const modes = [...new Set(data.overall.map((o) => o.mode))];
    for (const mode of modes) {
      const rows = data.overall.filter((o) => o.mode === mode);
      for (const [field, dash] of [["percent_correct", "solid"], ["percent_confused", "dot"], ["percent_no_match", "dash"]]) {
        traces.push({ x: rows.map((o) => o.num_episodes), y: rows.map((o) => o[field]), type: "scatter",
          mode: "lines+markers", name: plotText(mode + " " + field.replace("percent_", "% ")), line: { dash } });
      }
    }
    Plotly.newPlot(chart, traces, { margin: { l: 40, r: 10, t: 6, b: 36 }, xaxis: { title: { text: "episodes" } },
      yaxis: { range: [-2, 105] } }, { responsive: true, displaylogo: false });
    const latest = {};
    for (const o of data.overall) latest[o.mode] = o;
    const overall = el("div", { className: "panel" });
    overall.append(el("h3", {}, "latest totals per mode"));
    overall.append(table(Object.values(latest), ["mode", "epoch", "num_episodes", "percent_correct", "percent_confused", "percent_no_match", "percent_time_out"]));
    container.append(overall);
    const modules = el("div", { className: "panel" });
    modules.append(el("h3", {}, "per learning module verdicts"));
    const verdicts = [...new Set(data.modules.flatMap((m) => Object.keys(m).filter((k) => k !== "mode" && k !== "lm_id")))].sort();
    modules.append(table(data.modules, ["mode", "lm_id", ...verdicts]));
    container.append(modules);
    const episodes = el("div", { className: "panel wide" });
    episodes.append(el("h3", {}, "per-episode verdicts"));
    episodes.append(table(data.episodes, ["mode", "epoch", "episode", "target", "performance", "num_steps", "terminal_step"]));
    container.append(episodes);
    const alerts = el("div", { className: "panel wide" });
    alerts.append(el("h3", {}, `alerts (${data.alerts.length})`));
    alerts.append(table(data.alerts, ["severity", "metric", "message"]));
    container.append(alerts);
  }
}

// -- media -----------------------------------------------------------------------------------
async function loadMedia() {
  const container = document.getElementById("media");
  container.replaceChildren();
  let any = false;
  for (const key of state.selected) {
    const data = await getJson("/api/media?run=" + encodeURIComponent(key));
    const byName = {};
    for (const m of data.media) (byName[m.name] = byName[m.name] || []).push(m);
    for (const [name, items] of Object.entries(byName)) {
      any = true;
      const panel = el("div", { className: "panel media" });
      panel.append(el("h3", {}, name + " — " + runName(key)));
      const pick = el("select");
      items.forEach((m, i) => pick.append(el("option", { value: String(i) }, "step " + m.step)));
      const img = el("img", { alt: name, src: items[items.length - 1].url });
      pick.value = String(items.length - 1);
      pick.addEventListener("change", () => { img.src = items[Number(pick.value)].url; });
      panel.append(pick, el("br"), img);
      container.append(panel);
    }
  }
  if (!any) container.append(el("div", { className: "empty wide" }, "no images logged by the selected runs"));
}

// -- wiring ----------------------------------------------------------------------------------
async function refreshView() {
  if (state.tab === "charts") await loadCharts();
  else if (state.tab === "stats") await loadStats();
  else await loadMedia();
}
function countsOfSelected() {
  return JSON.stringify(state.runs.filter((r) => state.selected.has(r.key)).map((r) => [r.key, r.metrics]));
}
function applyRuns(runs) {
  const first = !state.runs.length;
  state.runs = runs;
  if (first && !state.selected.size) {
    const wanted = new URLSearchParams(location.search).getAll("run");
    const pick = wanted.length ? wanted : runs.slice(-3).map((r) => r.key);
    for (const key of pick) state.selected.add(key);
  }
  renderRuns();
  const counts = countsOfSelected();
  if (counts !== state.counts) {
    state.counts = counts;
    if (state.tab === "charts") loadCharts();
  }
}
function wire() {
  document.getElementById("filter").addEventListener("input", (e) => { state.filter = e.target.value; renderRuns(); });
  document.getElementById("axis").addEventListener("change", (e) => { state.axis = e.target.value; state.zoom = {}; resetCharts(); });
  document.getElementById("smooth").addEventListener("input", (e) => {
    state.smooth = Number(e.target.value);
    document.getElementById("smooth-value").textContent = e.target.value;
    loadCharts();
  });
  document.getElementById("logy").addEventListener("change", (e) => { state.logy = e.target.checked; loadCharts(); });
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => {
      state.tab = button.dataset.tab;
      for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b === button);
      for (const s of document.querySelectorAll("section.tab")) s.hidden = s.id !== state.tab;
      refreshView();
    });
  }
}
function resetCharts() {
  document.getElementById("charts").replaceChildren();
  loadCharts();
}
function live() {
  const dot = document.getElementById("live");
  const source = new EventSource("/api/stream");
  source.onopen = () => dot.classList.add("on");
  source.onerror = () => dot.classList.remove("on");
  source.onmessage = (ev) => applyRuns(JSON.parse(ev.data).runs);
}
wire();
(window.__runsRequest || getJson("/api/runs")).then((reply) => { applyRuns(reply.runs); live(); });
