// Axis ticks for any magnitude. uPlot's built-in increments stop at 1e±16: past them it finds
// no tick spacing and draws neither numbers nor grid lines (a q_mean exploding to 4.6e35 had a
// bare axis). These functions choose 1-2-2.5-5 steps from the scale itself, powers of ten on a
// log scale over any number of decades, and labels precise enough to tell neighbours apart.
"use strict";

const MAX_TICKS = 60;

// The one increment uPlot is offered: the smallest 1-2-2.5-5 step whose ticks are at least
// minSpace pixels apart (divided before subtracting, so ±1e308 does not overflow).
function axisIncrs(u, axisIdx, min, max, fullDim, minSpace) {
  const raw = (max / fullDim - min / fullDim) * minSpace;
  if (!(raw > 0) || !isFinite(raw)) return [];
  const decade = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * decade).find((s) => s >= raw);
  return [step || raw];
}

// Ticks at whole multiples of the step (0 among them when the scale crosses it), with the
// floating-point noise of k * step rounded off (0.30000000000000004 is 0.3).
function linearSplits(u, axisIdx, min, max, incr) {
  if (!(incr > 0) || !isFinite(min) || !isFinite(max)) return [];
  const first = Math.ceil(min / incr), last = Math.floor(max / incr);
  const out = [];
  for (let k = first; k <= last && out.length < MAX_TICKS; k++) out.push(k === 0 ? 0 : +(k * incr).toPrecision(12));
  return out;
}

// Powers of ten, at most ~6 of them, over any number of decades; within two decades also the
// 2x and 5x marks, so a narrow log scale still has several ticks.
function logSplits(u, axisIdx, min, max) {
  if (!(min > 0) || !isFinite(max) || !(max > min)) return [];
  const lo = Math.floor(Math.log10(min)), hi = Math.ceil(Math.log10(max));
  const few = hi - lo <= 2;
  const step = Math.max(1, Math.ceil((hi - lo) / 6));
  const out = [];
  for (let k = lo; k <= hi; k += step) {
    for (const m of few ? [1, 2, 5] : [1]) {
      const v = +(m * Math.pow(10, k)).toPrecision(12);
      if (v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9)) out.push(v);
    }
  }
  return out.length ? out : [min, max];
}

// Shortest text of a number rounded to `digits` decimals, trailing zeros dropped: "1.5", not "1.50".
function trimmed(v, digits) {
  return String(+v.toFixed(Math.min(Math.max(digits, 0), 20)));
}

// "4.6e35" rather than JavaScript's "4.60e+35".
function expLabel(v, digits) {
  const [mantissa, exp] = v.toExponential(Math.min(Math.max(digits, 0), 15)).split("e");
  return String(+mantissa) + "e" + exp.replace("+", "");
}

const SI = [["T", 12], ["G", 9], ["M", 6], ["k", 3]];

// Labels for one axis's ticks, each as precise as the step needs (neighbours never read the
// same): plain below 1e3, SI suffixes from there to 1e15, exponents when the axis reaches 1e15
// or stays under 1e-3.
function tickLabels(ticks, incr) {
  const finite = ticks.filter((t) => t !== null && t !== undefined && isFinite(t));
  const top = Math.max(0, ...finite.map(Math.abs));
  const step = incr > 0 && isFinite(incr) ? incr : top || 1;
  const stepExp = Math.floor(Math.log10(step));
  const extra = Math.abs(step / Math.pow(10, stepExp) - 2.5) < 1e-9 ? 1 : 0;  // 2.5, 25, 0.25 ...
  return ticks.map((v) => {
    if (v === null || v === undefined || !isFinite(v)) return "";
    if (v === 0) return "0";
    if (top >= 1e15 || top < 1e-3) return expLabel(v, Math.floor(Math.log10(Math.abs(v))) - stepExp + extra);
    for (const [suffix, exp] of SI) {
      if (Math.abs(v) >= Math.pow(10, exp)) return trimmed(v / Math.pow(10, exp), exp - stepExp + extra) + suffix;
    }
    return trimmed(v, -stepExp + extra);
  });
}

// Log ticks are labelled one by one (each is its own decade), in one style per axis: 0.01,
// 100, 1k, 1M when all lie between 1e-3 and 1e15; exponents (1e-12 ... 1e36) when any is beyond.
function logLabels(ticks) {
  const finite = ticks.filter((t) => t !== null && t !== undefined && isFinite(t) && t !== 0).map(Math.abs);
  const exp = finite.some((a) => a >= 1e15 || a < 1e-3);
  return ticks.map((v) => {
    if (v === null || v === undefined || !isFinite(v)) return "";
    const a = Math.abs(v);
    if (exp) return a === 1 ? String(v) : expLabel(v, 2);
    for (const [suffix, e] of SI) if (a >= Math.pow(10, e)) return String(+(v / Math.pow(10, e)).toPrecision(3)) + suffix;
    return String(+v.toPrecision(3));
  });
}

// A y axis as wide as its longest label (11px digits are about 6.5px wide).
function axisWidth(u, values) {
  const longest = Math.max(0, ...(values || []).map((v) => String(v).length));
  return Math.max(40, Math.ceil(longest * 6.5) + 16);
}

// The axis options of a numeric axis (linear or log): ticks, labels and grid at any magnitude.
function numericAxis(log) {
  return {
    incrs: axisIncrs,
    filter: (u, splits) => splits,  // uPlot's log filter blanks most labels of a wide log axis
    splits: log ? logSplits : linearSplits,
    values: log ? (u, ticks) => logLabels(ticks) : (u, ticks, axisIdx, space, incr) => tickLabels(ticks, incr),
  };
}
