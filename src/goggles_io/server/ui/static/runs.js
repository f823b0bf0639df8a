// The runs table: colour chip, name, status, age, last step, alerts, plus config.* and
// summary.* columns the user adds; a filter box (text, key=value, key>number); header sort.
"use strict";

function runValue(run, column) {
  if (column === "name") return runLabel(run.key);
  if (column === "status") return run.status;
  if (column === "age") return run.age_s;
  if (column === "last_step") return run.last_step;
  if (column === "group") return run.group;
  if (column.startsWith("config.")) return (run.config || {})[column.slice(7)];
  if (column.startsWith("summary.")) {
    const s = (run.summary || {})[column.slice(8)];
    return s ? s.last : undefined;
  }
  return (run.config || {})[column];
}

const FILTER_RE = /^([^<>=!]+)(<=|>=|!=|=|<|>)(.*)$/;
function matches(run, token) {
  const m = token.match(FILTER_RE);
  if (!m) {
    const hay = [run.name, run.run_id, run.group, run.status, ...(run.tags || [])].join(" ").toLowerCase();
    return hay.includes(token.toLowerCase());
  }
  const [, key, op, want] = m;
  let got = key === "tag" ? (run.tags || []).join(",") : runValue(run, key);
  if (got === undefined && !key.includes(".")) got = runValue(run, "config." + key);
  if (got === undefined || got === null) return op === "!=";
  const a = Number(got), b = Number(want);
  const numeric = want !== "" && Number.isFinite(b) && Number.isFinite(a) && typeof got !== "boolean";
  if (key === "tag") return op === "!=" ? !(run.tags || []).includes(want) : (run.tags || []).includes(want);
  switch (op) {
    case "=": return numeric ? a === b : String(got) === want;
    case "!=": return numeric ? a !== b : String(got) !== want;
    case "<": return numeric && a < b;
    case ">": return numeric && a > b;
    case "<=": return numeric && a <= b;
    default: return numeric && a >= b;
  }
}
// When a run started, in seconds: run.kv's start, else (collector runs) now less its age.
function startedAt(run) {
  const t = Date.parse(run.started || "");
  if (Number.isFinite(t)) return t / 1000;
  return typeof run.age_s === "number" ? Date.now() / 1000 - run.age_s : -Infinity;
}

// The runs, newest first (ties keep the server's order, reversed).
function newestFirst(runs) {
  return runs.map((r, i) => [startedAt(r), i, r]).sort((a, b) => b[0] - a[0] || b[1] - a[1]).map((x) => x[2]);
}

// The runs the filter box leaves (and the hyperparameter brushes, unless `brushed` is false),
// newest first or in the table's sort order.
function visibleRuns(brushed = true) {
  const tokens = state.filter.split(/\s+/).filter(Boolean);
  let runs = newestFirst(state.runs).filter((r) => (!brushed || passesBrushes(r)) && tokens.every((t) => matches(r, t)));
  if (state.sort) {
    const desc = state.sort.startsWith("-");
    const col = desc ? state.sort.slice(1) : state.sort;
    runs = runs.slice().sort((x, y) => {
      const a = runValue(x, col), b = runValue(y, col);
      if (a === b) return 0;
      if (a === undefined || a === null) return 1;
      if (b === undefined || b === null) return -1;
      const c = typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b));
      return desc ? -c : c;
    });
  }
  return runs;
}

function columnChoices() {
  const config = new Set(), summary = new Set();
  for (const run of state.runs) {
    for (const k of Object.keys(run.config || {})) config.add("config." + k);
    for (const k of Object.keys(run.summary || {})) summary.add("summary." + k);
  }
  return [...[...config].sort(), ...[...summary].sort()].filter((c) => !state.columns.includes(c));
}

function headerCell(label, column, removable) {
  const th = el("th", { className: "sortable" });
  th.dataset.column = column;
  const mark = state.sort === column ? " ▲" : state.sort === "-" + column ? " ▼" : "";
  const text = el("span");
  text.append(bdi(label), mark);
  th.append(text);
  th.addEventListener("click", () => {
    state.sort = state.sort === column ? "-" + column : column;
    writeUrl();
    renderRuns();
  });
  if (removable) {
    const x = el("button", { className: "drop", title: "remove column" }, "×");
    x.addEventListener("click", (ev) => {
      ev.stopPropagation();
      state.columns = state.columns.filter((c) => c !== column);
      writeUrl();
      renderRuns();
    });
    th.append(x);
  }
  return th;
}

// Folders that share a run id (a copied run folder) -> for each, the shortest tail of its path
// that tells it from the others, and a tooltip naming them. A run's folder and its collector
// copy are one run, not copies: only folders count.
function copiesOf(runs) {
  const byId = new Map();
  for (const run of runs) {
    if (!run.path) continue;
    if (!byId.has(run.run_id)) byId.set(run.run_id, []);
    byId.get(run.run_id).push(run);
  }
  const out = new Map();
  for (const same of byId.values()) {
    if (same.length < 2) continue;
    const parts = same.map((r) => String(r.path).split(/[\\/]/).filter(Boolean));
    let n = 1;
    const tail = (p) => p.slice(-n).join("/");
    while (n < Math.max(...parts.map((p) => p.length)) && new Set(parts.map(tail)).size < same.length) n++;
    same.forEach((run, i) => {
      const others = same.filter((r) => r !== run).map((r) => r.path);
      out.set(run.key, { folder: tail(parts[i]), title: `a copy: the same run id ${run.run_id} is in ${others.join(", ")}` });
    });
  }
  return out;
}

function renderRuns() {
  const table = document.getElementById("runs");
  const head = el("tr");
  head.append(el("th"), headerCell("run", "name"), headerCell("status", "status"),
    headerCell("age", "age"), headerCell("last step", "last_step"));
  for (const c of state.columns) head.append(headerCell(c.replace(/^(config|summary)\./, ""), c, true));
  const thead = el("thead");
  thead.append(head);
  const body = el("tbody");
  const runs = visibleRuns();
  const copies = copiesOf(state.runs);
  for (const run of runs) {
    const row = el("tr", { className: "run" + (state.selected.has(run.key) ? " selected" : "") });
    row.dataset.key = run.key;
    const box = el("input", { type: "checkbox", checked: state.selected.has(run.key), title: "show this run" });
    box.addEventListener("change", () => {
      if (box.checked) state.selected.add(run.key); else state.selected.delete(run.key);
      row.classList.toggle("selected", box.checked);
      selectionChanged();
    });
    const first = el("td");
    first.append(box, el("i", { className: "swatch", style: "background:" + colorOf(run.key) }));
    row.append(first);
    const name = el("td", { className: "name",
      title: isolated(run.path || run.run_id) + (run.note ? "\n" + isolated(run.note) : "") });
    const label = el("span", { className: "run-name" });
    label.append(bdi(run.name));
    name.append(label);
    if (run.name !== run.run_id) name.append(" ", el("span", { className: "rid" }, shortId(run)));
    const twin = copies.get(run.key);
    if (twin) {
      const where = el("span", { className: "folder", title: isolated(run.path) + "\n" + isolated(twin.title) }, "copy · ");
      where.append(bdi(twin.folder));
      name.append(" ", where);
    }
    if (run.indexed < 1) name.append(el("span", { className: "rid" }, ` indexing ${Math.floor(run.indexed * 100)}%`));
    if (run.unreadable) name.append(el("span", { className: "rid unreadable", title: "lines skipped: not JSON, torn, or longer than 4 MiB" },
                                       ` ${run.unreadable} unreadable line${run.unreadable === 1 ? "" : "s"}`));
    row.append(name);
    const status = el("td");
    const lost = run.lost ? run.lost + " logged events never reached a sink (run.kv lost=" + run.lost + ")" : "";
    status.append(el("span", { className: "status " + run.status.split(" ")[0] + (run.lost ? " lost" : ""),
                               title: [lost, run.note ? isolated(run.note) : ""].filter(Boolean).join("; ") }, run.status));
    row.append(status, el("td", { className: "age" }, age(run.age_s)),
      el("td", { className: "last-step num" }, run.last_step === null ? "–" : run.last_step));
    for (const c of state.columns) {
      const v = runValue(run, c);
      const cell = el("td", { className: typeof v === "number" ? "num" : "" });
      cell.append(bdi(fmt(v)));
      row.append(cell);
    }
    body.append(row);
  }
  table.replaceChildren(thead, body);
  document.getElementById("run-count").textContent = `${runs.length} of ${state.runs.length} runs`;
  const pick = document.getElementById("add-column");
  const keep = pick.value;
  pick.replaceChildren(el("option", { value: "" }, "+ column"));
  for (const c of columnChoices()) pick.append(el("option", { value: c }, isolated(c)));
  pick.value = keep && [...pick.options].some((o) => o.value === keep) ? keep : "";
}

function wireRuns() {
  const filter = document.getElementById("filter");
  filter.value = state.filter;
  filter.addEventListener("input", () => {
    state.filter = filter.value;
    writeUrl();
    renderRuns();
    if (state.tab === "hparams") renderHparams();
  });
  document.getElementById("add-column").addEventListener("change", (ev) => {
    if (ev.target.value) state.columns.push(ev.target.value);
    writeUrl();
    renderRuns();
  });
  document.getElementById("select-shown").addEventListener("click", () => {
    for (const run of visibleRuns()) state.selected.add(run.key);
    renderRuns();
    selectionChanged();
  });
  document.getElementById("select-none").addEventListener("click", () => {
    state.selected.clear();
    renderRuns();
    selectionChanged();
  });
}
