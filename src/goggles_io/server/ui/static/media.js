// Media views, one per kind the logger takes: images (click to enlarge, step slider), video,
// histograms (one step as bars, all steps as a distribution heat map, both with axes),
// trajectories and vector fields (drawn on a canvas), text blocks (add_text), artifacts.
"use strict";

const KIND_TITLES = { image: "Images", video: "Videos", histogram: "Histograms",
  trajectories: "Trajectories", vector_field: "Vector fields", text: "Text", artifact: "Artifacts" };

function byName(items) {
  const out = new Map();
  for (const m of items) {
    if (!out.has(m.name)) out.set(m.name, []);
    out.get(m.name).push(m);
  }
  for (const list of out.values()) list.sort((a, b) => (a.step ?? -1) - (b.step ?? -1));
  return out;
}

function stepSlider(items, onPick) {
  const wrap = el("label", { className: "slider" });
  const text = el("span");
  const input = el("input", { type: "range", min: "0", max: String(items.length - 1), value: String(items.length - 1) });
  const pick = () => {
    const m = items[Number(input.value)];
    text.textContent = m.step === null || m.step === undefined ? "no step" : "step " + m.step;
    onPick(m);
  };
  input.addEventListener("input", pick);
  wrap.append(input, text);
  setTimeout(pick, 0);
  wrap.input = input;
  return wrap;
}

function canvas(width, height) {
  const c = el("canvas", { width: width * devicePixelRatio, height: height * devicePixelRatio });
  c.style.width = width + "px";
  c.style.height = height + "px";
  const ctx = c.getContext("2d");
  ctx.scale(devicePixelRatio, devicePixelRatio);
  return [c, ctx];
}

function bounds(points) {
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (const [x, y] of points) {
    if (x === null || y === null) continue;
    x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
  }
  const w = x1 - x0 || 1, h = y1 - y0 || 1;
  return { x0: x0 - w * 0.05, y0: y0 - h * 0.05, w: w * 1.1, h: h * 1.1 };
}

function drawTrajectories(box, data) {
  const [c, ctx] = canvas(360, 300);
  const b = bounds(data.lines.flat());
  data.lines.forEach((line, i) => {
    ctx.strokeStyle = `hsl(${(i * 137.508) % 360}, 70%, 45%)`;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    line.forEach(([x, y], j) => {
      const px = ((x - b.x0) / b.w) * 360, py = 300 - ((y - b.y0) / b.h) * 300;
      if (j) ctx.lineTo(px, py); else ctx.moveTo(px, py);
    });
    ctx.stroke();
  });
  box.replaceChildren(c, el("div", { className: "note" }, `${data.shown} of shape ${JSON.stringify(data.shape)}`));
}

function drawField(box, data) {
  const rows = data.u.length, cols = rows ? data.u[0].length : 0;
  const size = 320, cell = size / Math.max(rows, cols, 1);
  const [c, ctx] = canvas(size, size);
  let peak = 0;
  for (let r = 0; r < rows; r++) for (let k = 0; k < cols; k++) peak = Math.max(peak, Math.hypot(data.u[r][k], data.v[r][k]));
  ctx.strokeStyle = "#1d4ed8";
  for (let r = 0; r < rows; r++) {
    for (let k = 0; k < cols; k++) {
      const u = data.u[r][k] / (peak || 1), v = data.v[r][k] / (peak || 1);
      const cx = (k + 0.5) * cell, cy = (r + 0.5) * cell;
      const dx = u * cell * 0.45, dy = -v * cell * 0.45;
      ctx.beginPath(); ctx.moveTo(cx - dx, cy - dy); ctx.lineTo(cx + dx, cy + dy);
      const a = Math.atan2(dy, dx), head = Math.max(cell * 0.15, 2);
      ctx.lineTo(cx + dx - head * Math.cos(a - 0.5), cy + dy - head * Math.sin(a - 0.5));
      ctx.moveTo(cx + dx, cy + dy);
      ctx.lineTo(cx + dx - head * Math.cos(a + 0.5), cy + dy - head * Math.sin(a + 0.5));
      ctx.stroke();
    }
  }
  box.replaceChildren(c, el("div", { className: "note" }, `field ${JSON.stringify(data.shape)}, arrows scaled to the largest`));
}

// Axes for a media plot: numbers and ticks along the bottom (x) and the left (y), from the
// chart axes' own tick rules (axes.js), so a histogram reads in values and counts.
const HIST = { w: 400, h: 190, left: 46, bottom: 30, top: 6, right: 10 };
function ticksOf(lo, hi, pixels, space) {
  if (!(hi > lo)) return { ticks: [lo], labels: [fmt(lo)] };
  const incr = axisIncrs(null, 0, lo, hi, pixels, space)[0];
  const ticks = linearSplits(null, 0, lo, hi, incr);
  return { ticks, labels: tickLabels(ticks, incr) };
}
function drawAxes(ctx, xr, yr, xTitle, yTitle) {
  const pw = HIST.w - HIST.left - HIST.right, ph = HIST.h - HIST.top - HIST.bottom;
  const px = (v) => HIST.left + ((v - xr[0]) / (xr[1] - xr[0] || 1)) * pw;
  const py = (v) => HIST.top + ph - ((v - yr[0]) / (yr[1] - yr[0] || 1)) * ph;
  ctx.strokeStyle = "#6b7280"; ctx.fillStyle = "#374151"; ctx.lineWidth = 1; ctx.font = "10px system-ui";
  ctx.beginPath(); ctx.moveTo(HIST.left, HIST.top); ctx.lineTo(HIST.left, HIST.top + ph); ctx.lineTo(HIST.left + pw, HIST.top + ph); ctx.stroke();
  const xs = ticksOf(xr[0], xr[1], pw, 70), ys = ticksOf(yr[0], yr[1], ph, 30);
  ctx.textAlign = "center"; ctx.textBaseline = "top";
  xs.ticks.forEach((t, i) => { const x = px(t); ctx.beginPath(); ctx.moveTo(x, HIST.top + ph); ctx.lineTo(x, HIST.top + ph + 4); ctx.stroke(); ctx.fillText(xs.labels[i], x, HIST.top + ph + 5); });
  ctx.textAlign = "right"; ctx.textBaseline = "middle";
  ys.ticks.forEach((t, i) => { const y = py(t); ctx.beginPath(); ctx.moveTo(HIST.left - 4, y); ctx.lineTo(HIST.left, y); ctx.stroke(); ctx.fillText(ys.labels[i], HIST.left - 6, y); });
  ctx.textAlign = "left"; ctx.textBaseline = "bottom";
  ctx.fillText(xTitle, HIST.left + pw - ctx.measureText(xTitle).width, HIST.h - 1);
  ctx.save(); ctx.translate(10, HIST.top + ph / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = "center"; ctx.fillText(yTitle, 0, 0); ctx.restore();
  return { px, py, pw, ph };
}

function drawBars(box, data) {
  const [c, ctx] = canvas(HIST.w, HIST.h);
  const peak = Math.max(...data.counts, 1), n = data.counts.length;
  const lo = data.edges[0], hi = data.edges[data.edges.length - 1];
  const a = drawAxes(ctx, [lo, hi], [0, peak], "value", "count");
  ctx.fillStyle = "#2563eb";
  data.counts.forEach((v, i) => {
    const x0 = a.px(data.edges[i]), x1 = a.px(data.edges[i + 1]);
    ctx.fillRect(x0, a.py(v), Math.max(x1 - x0 - 1, 1), a.py(0) - a.py(v));
  });
  box.replaceChildren(c, el("div", { className: "note" }, `${data.finite} values in [${fmt(lo)}, ${fmt(hi)}]`));
}

function drawDistribution(box, data) {
  if (!data.steps.length) { box.replaceChildren(el("div", { className: "note" }, "no values")); return; }
  const n = data.steps.length, bins = data.counts[0].length;
  const [c, ctx] = canvas(HIST.w, HIST.h);
  const first = data.steps[0], last = data.steps[n - 1];
  // each step's column reaches halfway to its neighbours: a column is centred on its step
  const s = data.steps.map(Number), gap = n > 1 ? (last - first) / (n - 1) : 1;
  const cuts = [s[0] - gap / 2, ...s.slice(1).map((v, i) => (s[i] + v) / 2), s[n - 1] + gap / 2];
  const a = drawAxes(ctx, [cuts[0], cuts[n]], [data.edges[0], data.edges[bins]], "step", "value");
  const rowH = a.ph / bins;
  data.counts.forEach((counts, i) => {
    const peak = Math.max(...counts, 1), x0 = a.px(cuts[i]), x1 = a.px(cuts[i + 1]);
    counts.forEach((v, j) => {
      ctx.fillStyle = `rgba(37, 99, 235, ${(v / peak).toFixed(3)})`;
      ctx.fillRect(x0, HIST.top + a.ph - (j + 1) * rowH, x1 - x0 + 0.5, rowH + 0.5);
    });
  });
  box.replaceChildren(c, el("div", { className: "note" },
    `distribution over ${n} steps (${first}–${last}); y: [${fmt(data.edges[0])}, ${fmt(data.edges[bins])}]`));
}

function enlarge(items, start) {
  const dialog = document.getElementById("viewer");
  const img = el("img", { className: "full", alt: items[0].name });
  const close = el("button", { className: "close" }, "close");
  close.addEventListener("click", () => dialog.close());
  const slider = stepSlider(items, (m) => { img.src = m.url; });
  slider.input.value = String(start);
  const title = el("h3");
  title.append(bdi(items[0].name));
  dialog.replaceChildren(title, slider, close, el("br"), img);
  dialog.showModal();
}

function mediaBlock(key, kind, name, items) {
  const block = el("div", { className: "panel media-view" });
  block.dataset.kind = kind;
  block.dataset.name = name;
  const title = el("h3");
  title.append(bdi(name));
  block.append(title, chip(key));
  const view = el("div", { className: "view" });
  const data = (m) => getJson(`/api/media/data?run=${encodeURIComponent(key)}&path=${encodeURIComponent(m.file)}&kind=${kind}`);
  const failed = (err) => view.replaceChildren(el("div", { className: "note" }, String(err.message || err)));
  if (kind === "image") {
    const img = el("img", { className: "thumb", alt: name, title: "click to enlarge" });
    img.addEventListener("click", () => enlarge(items, items.findIndex((m) => m.url === img.getAttribute("src"))));
    block.append(stepSlider(items, (m) => { img.src = m.url; }));
    view.append(img);
  } else if (kind === "video") {
    block.append(stepSlider(items, (m) => {
      const node = /gif$/i.test(m.file) ? el("img", { src: m.url, className: "thumb" })
        : el("video", { src: m.url, controls: true, loop: true, muted: true, className: "thumb" });
      view.replaceChildren(node);
    }));
  } else if (kind === "histogram") {
    const over = el("div", { className: "view" });
    getJson(`/api/media/histograms?run=${encodeURIComponent(key)}&name=${encodeURIComponent(name)}`)
      .then((d) => drawDistribution(over, d)).catch(failed);
    block.append(stepSlider(items, (m) => data(m).then((d) => drawBars(view, d)).catch(failed)));
    block.extraView = over;
  } else if (kind === "text") {
    block.append(stepSlider(items, (m) => {
      const pre = el("pre", { className: "text-block" }, m.text + (m.truncated ? "\n… (cut: the run's log holds all of it)" : ""));
      view.replaceChildren(pre);
    }));
  } else if (kind === "trajectories" || kind === "vector_field") {
    const draw = kind === "trajectories" ? drawTrajectories : drawField;
    block.append(stepSlider(items, (m) => data(m).then((d) => draw(view, d)).catch(failed)));
  } else {
    const list = el("ul", { className: "artifacts" });
    for (const m of items) {
      const li = el("li");
      const link = el("a", { href: m.url, download: "" });
      link.append(bdi(m.file.split("/").pop()));
      const show = el("button", {}, "preview");
      const pre = el("pre", { hidden: true });
      show.addEventListener("click", () => data(m).then((d) => {
        pre.hidden = false;
        pre.textContent = d.text === null ? d.note : d.text + (d.truncated ? "\n…" : "");
      }).catch(failed));
      li.append(link, " ", el("span", { className: "rid" }, m.step === null ? "" : "step " + m.step), " ", show, pre);
      list.append(li);
    }
    view.append(list);
  }
  block.append(view);
  if (block.extraView) block.append(block.extraView);
  return block;
}

let mediaTicket = 0;
async function loadMedia() {
  const container = document.getElementById("media");
  const ticket = ++mediaTicket;  // only the latest of overlapping loads renders
  const sections = new Map(Object.keys(KIND_TITLES).map((k) => [k, []]));
  for (const key of shownKeys()) {
    const reply = await getJson("/api/media?run=" + encodeURIComponent(key));
    const items = reply.media.filter((m) => !m.error);
    for (const [kind] of sections) {
      for (const [name, list] of byName(items.filter((m) => m.kind === kind))) {
        sections.get(kind).push(mediaBlock(key, kind, name, list));
      }
    }
  }
  const nodes = [];
  for (const [kind, blocks] of sections) {
    if (!blocks.length) continue;
    const section = el("details", { className: "section", open: true });
    section.dataset.section = kind;
    section.append(el("summary", {}, `${KIND_TITLES[kind]} (${blocks.length})`));
    const grid = el("div", { className: "grid" });
    grid.append(...blocks);
    section.append(grid);
    nodes.push(section);
  }
  if (!nodes.length) {
    nodes.push(el("div", { className: "empty" }, state.selected.size
      ? "the selected runs logged no media (images, video, histograms, trajectories, vector fields, artifacts)"
      : "tick a run on the left to see its media"));
  }
  if (ticket === mediaTicket) container.replaceChildren(...nodes);
}
