// telemetry ui: wiring. Reads the view from the URL, lists the runs, follows them live.
"use strict";

let countsSeen = "", hparamsSeen = "";

function showTab(tab) {
  state.tab = tab;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === tab);
  for (const s of document.querySelectorAll("section.tab")) s.hidden = s.id !== tab;
  writeUrl();
  return refreshView();
}

// The view's load, as a promise (a chart marker waits for the stats tab before scrolling).
function refreshView() {
  if (state.tab === "charts") { renderPanels(); return refreshPanels(false); }
  if (state.tab === "compare") return loadCompare();
  if (state.tab === "hparams") return loadHparams();
  if (state.tab === "stats") return loadStats();
  return loadMedia();
}

function selectionChanged() {
  writeUrl();
  countsSeen = countsOfSelected();
  refreshView();
}

function countsOfSelected() {
  return JSON.stringify(state.runs.filter((r) => state.selected.has(r.key)).map((r) => [r.key, r.metrics, r.media, r.indexed]));
}

function groupChoices() {
  const pick = document.getElementById("group-by");
  const keep = state.groupBy;
  pick.replaceChildren(el("option", { value: "" }, "no grouping"), el("option", { value: "group" }, "group / project"),
    el("option", { value: "tag" }, "tag"));
  const keys = new Set();
  for (const run of state.runs) for (const k of Object.keys(run.config || {})) keys.add(k);
  for (const k of [...keys].sort()) pick.append(el("option", { value: "config." + k }, "config " + isolated(k)));
  pick.value = [...pick.options].some((o) => o.value === keep) ? keep : "";
}

// The group's line and band pickers show while runs are grouped.
function groupStyle() {
  document.getElementById("group-style").hidden = !state.groupBy;
}

// The brushes changed (the hyperparameter view): every view shows the runs they leave.
function brushesChanged() {
  writeUrl();
  renderRuns();
  countsSeen = countsOfSelected();
  if (state.tab === "charts") { renderPanels(); refreshPanels(true); }
  else if (state.tab !== "hparams") refreshView();
}

function applyRuns(runs) {
  const first = !state.runs.length;
  state.runs = runs;
  if (first && !state.selected.size) for (const r of newestFirst(runs).slice(0, 3)) state.selected.add(r.key);
  if (first) writeUrl();
  renderRuns();
  groupChoices();
  groupStyle();
  if (state.tab === "hparams") {  // only when what it shows changed: a drag is not cut short
    const seen = JSON.stringify(runs.map((r) => [r.key, r.config, r.summary]));
    if (seen !== hparamsSeen) { hparamsSeen = seen; renderHparams(); }
  }
  const counts = countsOfSelected();
  if (counts !== countsSeen) {
    countsSeen = counts;
    alertCache.clear();
    if (state.tab === "charts") { renderPanels(); refreshPanels(false); }
    else if (first) refreshView();
  }
}

function wire() {
  const on = (id, ev, fn) => document.getElementById(id).addEventListener(ev, fn);
  const axis = document.getElementById("axis");
  axis.value = state.axis;
  on("axis", "change", () => { state.axis = axis.value; state.zoom = {}; writeUrl(); refreshPanels(true); });
  const smooth = document.getElementById("smooth");
  smooth.value = String(state.smooth);
  document.getElementById("smooth-value").textContent = String(state.smooth);
  on("smooth", "input", () => {
    state.smooth = Number(smooth.value);
    document.getElementById("smooth-value").textContent = smooth.value;
    writeUrl();
    refreshPanels(false);
  });
  for (const [id, key] of [["logy", "logy"], ["outliers", "outliers"]]) {
    const box = document.getElementById(id);
    box.checked = state[key];
    on(id, "change", () => { state[key] = box.checked; writeUrl(); refreshPanels(true); });
  }
  const search = document.getElementById("search");
  search.value = state.search;
  on("search", "input", () => { state.search = search.value; writeUrl(); renderPanels(); });
  on("group-by", "change", (ev) => { state.groupBy = ev.target.value; groupStyle(); writeUrl(); refreshPanels(true); });
  for (const id of ["center", "band"]) {
    const pick = document.getElementById(id);
    pick.value = state[id];
    on(id, "change", () => { state[id] = pick.value; writeUrl(); refreshPanels(true); });
  }
  on("copy-link", "click", () => {
    const done = () => { document.getElementById("copy-link").textContent = "link copied"; };
    if (navigator.clipboard) navigator.clipboard.writeText(location.href).then(done, done); else done();
  });
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  window.addEventListener("resize", () => refreshPanels(true));
  wireRuns();
}

function live() {
  const dot = document.getElementById("live");
  const source = new EventSource("/api/stream");
  source.onopen = () => dot.classList.add("on");
  source.onerror = () => dot.classList.remove("on");
  source.onmessage = (ev) => applyRuns(JSON.parse(ev.data).runs);
}

readUrl();
wire();
for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === state.tab);
for (const s of document.querySelectorAll("section.tab")) s.hidden = s.id !== state.tab;
(window.__runsRequest || getJson("/api/runs")).then((reply) => {
  applyRuns(reply.runs);
  if (state.tab !== "charts") refreshView();
  live();
});
