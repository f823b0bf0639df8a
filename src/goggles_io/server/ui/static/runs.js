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
function visibleRuns() {
  const tokens = state.filter.split(/\s+/).filter(Boolean);
  let runs = state.runs.filter((r) => tokens.every((t) => matches(r, t)));
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
  th.append(el("span", {}, label + mark));
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
    const name = el("td", { className: "name", title: (run.path || run.run_id) + (run.note ? "\n" + run.note : "") });
    name.append(el("span", {}, run.name));
    if (run.name !== run.run_id) name.append(el("span", { className: "rid" }, " " + shortId(run)));
    if (run.indexed < 1) name.append(el("span", { className: "rid" }, ` indexing ${Math.floor(run.indexed * 100)}%`));
    if (run.unreadable) name.append(el("span", { className: "rid unreadable", title: "lines skipped: not JSON, torn, or longer than 4 MiB" },
                                       ` ${run.unreadable} unreadable line${run.unreadable === 1 ? "" : "s"}`));
    row.append(name);
    const status = el("td");
    const lost = run.lost ? run.lost + " logged events never reached a sink (run.kv lost=" + run.lost + ")" : "";
    status.append(el("span", { className: "status " + run.status.split(" ")[0] + (run.lost ? " lost" : ""),
                               title: [lost, run.note || ""].filter(Boolean).join("; ") }, run.status));
    row.append(status, el("td", { className: "age" }, age(run.age_s)),
      el("td", { className: "last-step num" }, run.last_step === null ? "–" : run.last_step));
    for (const c of state.columns) {
      const v = runValue(run, c);
      row.append(el("td", { className: typeof v === "number" ? "num" : "" }, fmt(v)));
    }
    body.append(row);
  }
  table.replaceChildren(thead, body);
  document.getElementById("run-count").textContent = `${runs.length} of ${state.runs.length} runs`;
  const pick = document.getElementById("add-column");
  const keep = pick.value;
  pick.replaceChildren(el("option", { value: "" }, "+ column"));
  for (const c of columnChoices()) pick.append(el("option", { value: c }, c));
  pick.value = keep && [...pick.options].some((o) => o.value === keep) ? keep : "";
}

function wireRuns() {
  const filter = document.getElementById("filter");
  filter.value = state.filter;
  filter.addEventListener("input", () => { state.filter = filter.value; writeUrl(); renderRuns(); });
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
