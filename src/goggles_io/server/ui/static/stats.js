// Two views of the selected runs: "Compare" (their config side by side, what differed
// highlighted) and "Experiment stats" (the harness's recognition stats, or why there are none).
"use strict";

// A table of run-supplied rows in a box that scrolls sideways when it is wider than the panel.
function table(rows, columns) {
  const t = el("table", { className: "data" });
  const head = el("tr");
  for (const c of columns) { const th = el("th"); th.append(bdi(c)); head.append(th); }
  t.append(head);
  for (const row of rows) {
    const tr = el("tr");
    for (const c of columns) {
      const v = row[c];
      const td = el("td", { className: typeof v === "number" ? "num" : "" });
      td.append(bdi(v === undefined ? "" : fmt(v)));
      tr.append(td);
    }
    t.append(tr);
  }
  return scrolling(t);
}

function scrolling(node) {
  const box = el("div", { className: "table-scroll" });
  box.append(node);
  return box;
}

// An alert's identity in the stats tab's table: what a chart marker links to.
function alertKey(a) {
  return [a.source || "", a.metric || "", a.check || "", a.step].join("|");
}

// A chart marker's link: the stats tab, scrolled to the alert's row (of its run), highlighted.
async function showAlert(a) {
  await showTab("stats");
  const scope = a.run ? `#stats .stats-run[data-key="${CSS.escape(a.run)}"]` : "#stats";
  const row = document.querySelector(`${scope} tr[data-alert="${CSS.escape(alertKey(a))}"]`);
  for (const old of document.querySelectorAll("#stats tr.focused")) old.classList.remove("focused");
  if (!row) return;
  row.classList.add("focused");
  row.scrollIntoView({ block: "center" });
}

let compareTicket = 0, statsTicket = 0;  // only the latest of overlapping loads renders
async function loadCompare() {
  const container = document.getElementById("compare");
  const ticket = ++compareTicket;
  const keys = shownKeys();
  if (keys.length < 1) {
    container.replaceChildren(el("div", { className: "empty" }, "tick two or more runs to compare their config"));
    return;
  }
  const diff = await getJson("/api/diff?" + runQuery(keys));
  if (ticket !== compareTicket) return;
  const only = el("label", {}, " show only keys that differ");
  const box = el("input", { type: "checkbox", checked: state.diffOnly });
  box.addEventListener("change", () => { state.diffOnly = box.checked; writeUrl(); loadCompare(); });
  only.prepend(box);
  const rows = diff.rows.filter((r) => !state.diffOnly || r.differs);
  const t = el("table", { className: "data diff" });
  const head = el("tr");
  head.append(el("th", {}, "config key"));
  for (const key of diff.runs) { const th = el("th"); th.append(chip(key)); head.append(th); }
  t.append(head);
  for (const row of rows) {
    const tr = el("tr", { className: row.differs ? "differs" : "" });
    tr.dataset.key = row.key;
    const keyCell = el("td", { className: "key" });
    keyCell.append(bdi(row.key));
    tr.append(keyCell);
    row.values.forEach((v, i) => {
      const present = row.present[i];
      const td = el("td", { className: (typeof v === "number" ? "num" : "") + (present ? "" : " missing") });
      td.append(present ? bdi(fmt(v)) : "(not set)");
      tr.append(td);
    });
    t.append(tr);
  }
  const differing = diff.rows.filter((r) => r.differs).length;
  const summary = el("p", {}, `${differing} of ${diff.rows.length} config keys differ between ${diff.runs.length} runs`
    + " (the same comparison: telemetry diff RUN_DIR RUN_DIR ...)");
  container.replaceChildren(el("div", { className: "panel wide" }));
  container.firstChild.append(summary, only, rows.length ? scrolling(t) : el("p", { className: "empty" },
    diff.rows.length ? "no key differs" : "none of these runs recorded a config"));
}

// A legend key drawn like its line: the series colour, solid, dashed or dotted.
const DASH_STYLE = { 0: "solid", 4: "dashed", 1: "dotted" };
function legendKey(color, dash, label) {
  const node = el("span", { className: "chip" });
  node.append(el("i", { className: "line-key", style: `border-top: 3px ${DASH_STYLE[dash[0] || 0]} ${color}` }), ...label);
  return node;
}

function statsChart(box, overall) {
  const modes = [...new Set(overall.map((o) => o.mode))];
  const pairs = [], series = [{}];
  const legend = el("div", { className: "legend" });
  modes.forEach((mode, i) => {
    const rows = overall.filter((o) => o.mode === mode);
    for (const [field, dash] of [["percent_correct", []], ["percent_confused", [4, 3]], ["percent_no_match", [1, 3]]]) {
      if (!rows.some((o) => typeof o[field] === "number")) continue;
      const color = `hsl(${(i * 137.508 + 215) % 360}, 70%, 45%)`;
      pairs.push([rows.map((o) => o.num_episodes ?? o.episode), rows.map((o) => o[field] ?? null)]);
      series.push({ stroke: color, dash, width: 1.5 });
      legend.append(legendKey(color, dash, [bdi(mode), ` ${field.replace("percent_", "% ")}`]));
    }
  });
  if (!pairs.length) return;
  const opts = { width: Math.max(box.clientWidth - 12, 400), height: 220, legend: { show: false },
    scales: { x: { time: false }, y: { range: [-2, 105] } }, series };
  const chart = el("div", { className: "stats-chart" });
  box.append(chart, legend);
  chart.__uplot = new uPlot(opts, uPlot.join(pairs), chart);
}

async function loadStats() {
  const container = document.getElementById("stats");
  const ticket = ++statsTicket;
  container.replaceChildren();
  const keys = shownKeys();
  if (!keys.length) {
    container.append(el("div", { className: "empty" }, "tick a run on the left to see its experiment stats"));
    return;
  }
  for (const key of keys) {
    const data = await getJson("/api/stats?run=" + encodeURIComponent(key));
    if (ticket !== statsTicket) return;
    const panel = el("div", { className: "panel wide stats-run" });
    panel.dataset.key = key;
    const head = el("h3");
    head.append(chip(key), " experiment stats");
    panel.append(head);
    container.append(panel);
    if (data.reason) panel.append(el("p", { className: "reason" }, data.reason));
    for (const [file, n] of Object.entries(data.unreadable || {})) {
      if (n) panel.append(el("p", { className: "reason unreadable" }, `${file}: ${n} unreadable line${n === 1 ? "" : "s"} (not shown)`));
    }
    if (data.records) panel.append(el("p", { className: "note records" }, `${data.records} stat record${data.records === 1 ? "" : "s"} read from stats.jsonl`));
    if (data.overall.length) {
      panel.append(el("h4", {}, "% correct / confused / no match over episodes"));
      statsChart(panel, data.overall);
      const latest = {};
      for (const o of data.overall) latest[o.mode] = o;
      const cols = [...new Set(Object.values(latest).flatMap((o) => Object.keys(o)))]
        .filter((c) => !["kind", "version", "timestamp"].includes(c));
      panel.append(el("h4", {}, "latest totals per mode"), table(Object.values(latest), cols));
    }
    if (data.modules.length) {
      const verdicts = [...new Set(data.modules.flatMap((m) => Object.keys(m).filter((k) => k !== "mode" && k !== "lm_id")))].sort();
      panel.append(el("h4", {}, "per learning module verdicts"), table(data.modules, ["mode", "lm_id", ...verdicts]));
    }
    if (data.episodes.length) {
      const cols = [...new Set(data.episodes.flatMap((o) => Object.keys(o)))].filter((c) => !["kind", "version", "timestamp"].includes(c));
      panel.append(el("h4", {}, `per-episode records (${data.episodes.length})`), table(data.episodes.slice(-200), cols));
    }
    for (const [file, t] of Object.entries(data.tables || {})) {
      const rows = t.rows.slice(-200).map((r) => Object.fromEntries(t.columns.map((c, i) => [c, r[i]])));
      const title = el("h4");
      title.append(bdi(file), ` (${t.total} rows)`);
      panel.append(title, table(rows, t.columns));
    }
    panel.append(el("h4", {}, `alerts (${data.alerts.length})`));
    if (data.alerts.length) {
      const t = table(data.alerts, ["step", "severity", "source", "metric", "message"]);
      [...t.querySelector("table").rows].slice(1).forEach((tr, i) => { tr.dataset.alert = alertKey(data.alerts[i]); });
      panel.append(t);
    }
    else panel.append(el("p", { className: "note" }, "no metric watcher fired"));
  }
}
