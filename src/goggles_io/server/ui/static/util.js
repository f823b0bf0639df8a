// telemetry ui: shared state, the URL that mirrors it, DOM and fetch helpers, run colours.
// Every string from a run reaches the page through textContent (el()), never as markup.
"use strict";

const state = {
  runs: [], selected: new Set(), filter: "", axis: "step", smooth: 0, logy: false,
  outliers: false, tab: "charts", search: "", groupBy: "", closed: new Set(), zoom: {},
  columns: [], diffOnly: true, sort: "", firstPaint: false,
  center: "mean", band: "std",            // groups: the line and the band around it
  brushes: {}, axes: [], colorBy: "", hsort: "",  // the hyperparameter view
};

// -- the hyperparameter view's brushes filter the runs everywhere ------------------------------
// A brush on an axis keeps the runs whose value lies in its range (a number axis) or among its
// values (a text axis); a run without the key is left out while the brush is there.
function hparamValue(run, key) {
  if (key.startsWith("summary.")) {
    const s = (run.summary || {})[key.slice(8)];
    return s ? s.last : undefined;
  }
  return (run.config || {})[key.startsWith("config.") ? key.slice(7) : key];
}
function passesBrushes(run) {
  for (const [key, b] of Object.entries(state.brushes)) {
    const v = hparamValue(run, key);
    if (v === undefined || v === null) return false;
    if (b.values) { if (!b.values.includes(fmt(v))) return false; }
    else if (!(typeof v === "number" && v >= b.lo && v <= b.hi)) return false;
  }
  return true;
}
// The ticked runs the brushes leave: what the charts, media and stats show.
function shownKeys() {
  return [...state.selected].filter((k) => { const r = runOf(k); return !r || passesBrushes(r); });
}

function el(tag, props, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "dataset") Object.assign(node.dataset, v);
    else if (k === "style") node.style.cssText = v;
    else node[k] = v;
  }
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

async function getJson(url) {
  const reply = await fetch(url, { credentials: "same-origin" });
  if (!reply.ok) throw new Error(url + ": " + reply.status);
  return reply.json();
}

function runQuery(keys) {
  return keys.map((k) => "run=" + encodeURIComponent(k)).join("&");
}

function age(seconds) {
  if (typeof seconds !== "number") return "?";
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
    if (seconds >= size) return (seconds / size).toFixed(1) + unit;
  }
  return seconds.toFixed(0) + "s";
}

function fmt(value) {
  if (value === null || value === undefined) return "–";
  if (typeof value === "number") {
    if (Number.isInteger(value)) return String(value);
    const a = Math.abs(value);
    return a !== 0 && (a < 1e-3 || a >= 1e6) ? value.toExponential(3) : String(+value.toPrecision(5));
  }
  if (typeof value === "boolean") return value ? "true" : "false";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

// -- colours: one per run, fixed by its place in the runs list (stable across views/reloads);
// the golden angle puts consecutive runs far apart on the hue circle.
function colorOf(key) {
  const i = Math.max(0, state.runs.findIndex((r) => r.key === key));
  const hue = (i * 137.508 + 215) % 360;
  const light = i % 2 ? 58 : 42;
  return `hsl(${hue.toFixed(1)}, 72%, ${light}%)`;
}
// Groups have their own colours, by their place among all groups of the ticked runs (the same
// in every panel; never a member's, so no two groups share one).
function groupColor(label, labels) {
  const i = Math.max(0, labels.indexOf(label));
  return `hsl(${((i * 137.508 + 35) % 360).toFixed(1)}, 85%, ${i % 2 ? 36 : 46}%)`;
}
function runOf(key) { return state.runs.find((r) => r.key === key); }
function shortId(run) {
  const id = String(run.run_id || "");
  return id.length > 6 ? id.slice(-6) : id;
}
function runLabel(key) {
  const run = runOf(key);
  if (!run) return key;
  return run.name === run.run_id ? run.name : run.name + " · " + shortId(run);
}

// -- bidi: every text a run supplies (names, ids, metric names, config, tags, messages, media
// and file names, stats cells) is printed in its own isolate, so a right-to-left override in
// it ends with it and cannot reorder what the page prints next to it.
function bdi(text) { return el("bdi", {}, text); }
// The same for text that cannot hold an element (tooltips, <option>s): FSI ... PDI marks.
function isolated(text) { return "\u2068" + String(text) + "\u2069"; }
// A run's label as nodes: its name, then its short id, each isolated.
function runLabelNodes(key) {
  const run = runOf(key);
  if (!run) return [bdi(key)];
  return run.name === run.run_id ? [bdi(run.name)] : [bdi(run.name), " · ", bdi(shortId(run))];
}
// A colour key and a label (a run's by default; else a list of nodes and strings).
function chip(key, label, color) {
  const node = el("span", { className: "chip", title: isolated(key) });
  const text = el("span");
  text.append(...(label === undefined ? runLabelNodes(key) : label));
  node.append(el("i", { style: "background:" + (color || colorOf(key)) }), text);
  return node;
}

// -- URL state: everything that shapes the view, so a link restores it ------------------------
const URL_FLAGS = { logy: "log", outliers: "outliers" };
function writeUrl() {
  const q = new URLSearchParams();
  for (const key of state.selected) q.append("run", key);
  if (state.tab !== "charts") q.set("tab", state.tab);
  if (state.axis !== "step") q.set("axis", state.axis);
  if (state.smooth) q.set("smooth", String(state.smooth));
  for (const [k, name] of Object.entries(URL_FLAGS)) if (state[k]) q.set(name, "1");
  if (state.search) q.set("q", state.search);
  if (state.filter) q.set("filter", state.filter);
  if (state.groupBy) q.set("group", state.groupBy);
  if (state.sort) q.set("sort", state.sort);
  if (!state.diffOnly) q.set("diff", "all");
  for (const c of state.columns) q.append("col", c);
  for (const s of state.closed) q.append("closed", s);
  for (const [m, z] of Object.entries(state.zoom)) q.append("zoom", `${z[0]}~${z[1]}~${m}`);
  if (state.groupBy && state.center !== "mean") q.set("center", state.center);
  if (state.groupBy && state.band !== "std") q.set("band", state.band);
  for (const [k, b] of Object.entries(state.brushes)) {
    q.append("brush", b.values ? `=${JSON.stringify(b.values)}~${k}` : `${b.lo}~${b.hi}~${k}`);
  }
  for (const a of state.axes) q.append("hp", a);
  if (state.colorBy) q.set("color", state.colorBy);
  if (state.hsort) q.set("hsort", state.hsort);
  const text = q.toString();
  history.replaceState(null, "", text ? "?" + text : location.pathname);
}
function readUrl() {
  const q = new URLSearchParams(location.search);
  state.selected = new Set(q.getAll("run"));
  state.tab = q.get("tab") || "charts";
  state.axis = ["step", "time", "custom"].includes(q.get("axis")) ? q.get("axis") : "step";
  state.smooth = Math.min(Math.max(Number(q.get("smooth")) || 0, 0), 0.99);
  for (const [k, name] of Object.entries(URL_FLAGS)) state[k] = q.get(name) === "1";
  state.search = q.get("q") || "";
  state.filter = q.get("filter") || "";
  state.groupBy = q.get("group") || "";
  state.sort = q.get("sort") || "";
  state.diffOnly = q.get("diff") !== "all";
  state.columns = q.getAll("col");
  state.closed = new Set(q.getAll("closed"));
  state.center = q.get("center") === "median" ? "median" : "mean";
  state.band = ["std", "stderr", "minmax", "none"].includes(q.get("band")) ? q.get("band") : "std";
  state.brushes = {};
  for (const b of q.getAll("brush")) {
    const cut = b.indexOf("~");
    if (b.startsWith("=")) {
      const end = b.lastIndexOf("]~");
      try { if (end > 0) state.brushes[b.slice(end + 2)] = { values: JSON.parse(b.slice(1, end + 1)).map(String) }; } catch (e) { /* a broken link: no brush */ }
      continue;
    }
    const [a, c, ...rest] = b.split("~");
    if (cut > 0 && rest.length && Number.isFinite(+a) && Number.isFinite(+c)) state.brushes[rest.join("~")] = { lo: +a, hi: +c };
  }
  state.axes = q.getAll("hp");
  state.colorBy = q.get("color") || "";
  state.hsort = q.get("hsort") || "";
  state.zoom = {};
  for (const z of q.getAll("zoom")) {
    const [a, b, ...rest] = z.split("~");
    if (rest.length && Number.isFinite(+a) && Number.isFinite(+b)) state.zoom[rest.join("~")] = [+a, +b];
  }
  return q.has("run");
}
