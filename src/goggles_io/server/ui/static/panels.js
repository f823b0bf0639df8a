// Chart panels grouped in sections by name prefix (episode/, diagnostic/ ...; system/ last), a
// metric search (substring or /regex/), lazy loading (only panels on screen fetch and draw),
// runs grouped by group / tag / a config value (mean or median, a band, the member count),
// CSV/JSON downloads.
"use strict";

const alertCache = new Map();
let observer = null;
let firstLoad = Promise.resolve();  // the first panel is fetched alone, the others after it

function metricNames() {
  const names = new Set();
  for (const key of shownKeys()) {
    const run = runOf(key);
    for (const name of Object.keys((run && run.metrics) || {})) names.add(name);
  }
  return [...names].sort();
}

function searchTest() {
  const q = state.search.trim();
  if (!q) return () => true;
  const re = q.length > 2 && q.startsWith("/") && q.endsWith("/") ? (() => {
    try { return new RegExp(q.slice(1, -1), "i"); } catch (e) { return null; }
  })() : null;
  const needle = q.toLowerCase();
  return re ? (name) => re.test(name) : (name) => name.toLowerCase().includes(needle);
}

function sectionOf(name) {
  const cut = name.indexOf("/");
  return cut > 0 ? name.slice(0, cut + 1) : "(no prefix)";
}

// Every group label of the ticked runs, sorted: a group's place here picks its colour.
function groupLabels() {
  return [...groupsOf(shownKeys()).keys()].sort((a, b) => a.localeCompare(b));
}

function groupsOf(keys) {
  const out = new Map();
  for (const key of keys) {
    const run = runOf(key);
    if (!run) continue;
    let label;
    if (state.groupBy === "group") label = run.group || "(no group)";
    else if (state.groupBy === "tag") label = (run.tags || [])[0] || "(no tag)";
    else label = fmt((run.config || {})[state.groupBy.replace(/^config\./, "")]);
    if (!out.has(label)) out.set(label, []);
    out.get(label).push(key);
  }
  return out;
}

async function alertsFor(key) {
  if (!alertCache.has(key)) {
    const run = runOf(key);
    alertCache.set(key, run && run.alerts ? getJson("/api/alerts?run=" + encodeURIComponent(key))
      .then((r) => r.alerts.map((a) => ({ ...a, run: key }))).catch(() => []) : Promise.resolve([]));
  }
  return alertCache.get(key);
}

function chartWidth(panel) {
  // one bucket per pixel column: each is drawn through its min and max (same pixels as all points)
  return Math.max(200, Math.min(2000, Math.round((panel && panel.clientWidth) || window.innerWidth / 2)));
}

// System metrics (the run's own sampler, ADR 0066) have no training step: on the step axis
// they are drawn over wall time, and the panel says so.
const SYSTEM_PREFIX = "system/";
function panelAxis(name) {
  return name.startsWith(SYSTEM_PREFIX) && state.axis === "step" ? "time" : state.axis;
}

async function loadPanel(panel) {
  const name = panel.dataset.metric;
  panel.dirty = false;
  const keys = shownKeys().filter((k) => { const r = runOf(k); return r && r.metrics && name in r.metrics; });
  const zoom = state.zoom[name];
  const axis = panelAxis(name);
  panel.axis = axis;
  let params = `axis=${axis}&n=${chartWidth(panel)}&metric=${encodeURIComponent(name)}`;
  if (zoom) params += `&x0=${zoom[0]}&x1=${zoom[1]}`;
  const ticket = (panel.ticket || 0) + 1;
  panel.ticket = ticket;
  let reply;
  if (state.groupBy) {
    const groups = [];
    await Promise.all([...groupsOf(keys)].map(async ([label, members]) => {
      const band = await getJson(`/api/group?${runQuery(members)}&${params}`);
      if (band.members) groups.push({ label, keys: members, ...band });
    }));
    groups.sort((a, b) => a.label.localeCompare(b.label));
    reply = { groups };
  } else {
    reply = await getJson(`/api/series?${runQuery(keys)}&${params}`);
  }
  if (ticket !== panel.ticket) return; // a newer request for this panel is on its way
  // drawn before its runs are indexed: the chart says how much it stands on
  reply.partial = keys.map((k) => ({ key: k, indexed: runOf(k).indexed })).filter((p) => p.indexed < 1);
  if (axis !== state.axis) reply.xNote = "x: wall time (system metrics have no step)";
  const alerts = [];
  if (axis === "step") {
    for (const key of keys) for (const a of await alertsFor(key)) if (alertMatches(name, a)) alerts.push(a);
  }
  panel.alerts = alerts;
  drawPanel(panel, name, reply);
}

function downloadMenu(panel, name) {
  const menu = el("details", { className: "menu" });
  menu.append(el("summary", { title: "download this chart's data" }, "⋮"));
  const list = el("div", { className: "menu-list" });
  menu.addEventListener("toggle", () => {
    list.replaceChildren();
    for (const key of shownKeys()) {
      const run = runOf(key);
      if (!run || !run.metrics || !(name in run.metrics)) continue;
      for (const format of ["csv", "json"]) {
        const href = `/api/export?run=${encodeURIComponent(key)}&metric=${encodeURIComponent(name)}&format=${format}`;
        const link = el("a", { href, className: "download", download: "" });
        link.append(...runLabelNodes(key), ` .${format}`);
        list.append(link);
      }
    }
  });
  menu.append(list);
  return menu;
}

function makePanel(name) {
  const panel = el("div", { className: "panel" });
  panel.dataset.metric = name;
  const head = el("div", { className: "panel-head" });
  const title = el("h3", { className: "metric-name", title: isolated(name) });
  title.append(bdi(name));
  head.append(title, downloadMenu(panel, name));
  panel.append(head, el("div", { className: "chart" }), el("div", { className: "legend" }),
    el("div", { className: "note" }));
  panel.dirty = true;
  return panel;
}

function ensureObserver() {
  if (observer) return observer;
  observer = new IntersectionObserver((entries) => {
    for (const e of entries) {
      e.target.visible = e.isIntersecting;
      if (e.isIntersecting && e.target.dirty) {
        firstLoad.then(() => { if (e.target.dirty) loadPanel(e.target).catch(() => {}); });
      }
    }
  }, { rootMargin: "200px" });
  return observer;
}

function renderPanels() {
  const container = document.getElementById("charts");
  const names = metricNames();
  const test = searchTest();
  const shown = names.filter(test);
  const hidden = state.selected.size - shownKeys().length;
  document.getElementById("metric-count").textContent = state.selected.size
    ? `${shown.length} of ${names.length} metrics` + (hidden ? ` · ${hidden} ticked run${hidden === 1 ? "" : "s"} outside the hyperparameter brushes` : "") : "";
  if (!state.selected.size) {
    container.replaceChildren(el("div", { className: "empty" }, "tick a run on the left to chart it"));
    return;
  }
  if (!shown.length) {
    const empty = el("div", { className: "empty" });
    if (names.length) empty.append("no metric matches “", bdi(state.search), "”");
    else empty.append("no metrics logged yet by the selected runs");
    container.replaceChildren(empty);
    return;
  }
  const old = new Map([...container.querySelectorAll(".panel")].map((p) => [p.dataset.metric, p]));
  const sections = new Map();
  for (const name of shown) {
    const s = sectionOf(name);
    if (!sections.has(s)) sections.set(s, []);
    sections.get(s).push(name);
  }
  const nodes = [];
  // unprefixed names last, then the run's system metrics
  const order = (t) => (t === SYSTEM_PREFIX ? "\uffff\uffff" : t === "(no prefix)" ? "\uffff" : t);
  for (const [title, members] of [...sections].sort((a, b) => order(a[0]).localeCompare(order(b[0])))) {
    const section = el("details", { className: "section", open: !state.closed.has(title) });
    section.dataset.section = title;
    const summary = el("summary");
    summary.append(bdi(title), ` (${members.length})`);
    section.append(summary);
    section.addEventListener("toggle", () => {
      if (section.open) state.closed.delete(title); else state.closed.add(title);
      writeUrl();
    });
    const grid = el("div", { className: "grid" });
    for (const name of members) grid.append(old.get(name) || makePanel(name));
    section.append(grid);
    nodes.push(section);
  }
  container.replaceChildren(...nodes);
  const first = container.querySelector(".section[open] .panel");
  if (first && first.dirty) firstLoad = loadPanel(first).catch(() => {});  // no wait for a frame
  const obs = ensureObserver();
  for (const p of container.querySelectorAll(".panel")) obs.observe(p);
}

function refreshPanels(all) {
  for (const p of document.querySelectorAll("#charts .panel")) {
    if (!p.dirty && !p.uplot && !all) continue;  // its first load is on its way
    p.dirty = true;
    if (all) { if (p.uplot) p.uplot.destroy(); p.uplot = null; }
    if (p.visible) loadPanel(p).catch(() => {});
  }
}
