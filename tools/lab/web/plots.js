// Chart helpers on uPlot, shared by the live lab's views (an ES module served at /plots.js) and the
// HTML report (tools/lab/report/embed_assets.cmake inlines this file, `export` stripped, ahead of
// report.js in the report's one module script). Nothing here knows an allocator.
//   chart, noPlots, PALETTE, colours, AXIS_FONT, axisSize, axis, formatBytes, formatNs, byteSplits,
//   linTicks, pow2Ticks, decadeSplits, bytesAxis, nsAxis, nines, ninesLabel, ninesSplits, ninesAxis,
//   maxOf, minOf, align, decimate
// Rules that keep it inlinable: no import, no `export` other than at the start of a line, no
// URL, no HTML comment or script tag (embed_assets.cmake refuses the report otherwise).

/// Colours for up to 16 series; the first 8 distinct in print and for the common colour blindnesses.
export const PALETTE = ['#c62828', '#6a1b9a', '#8d6e00', '#00838f', '#d9822b', '#1f6feb', '#2e7d32', '#555555',
    '#17becf', '#e377c2', '#bcbd22', '#393b79', '#ad494a', '#637939', '#8c564b', '#3182bd'];

/// colours(): a function name -> colour that gives each new name the next PALETTE entry, so a name
/// keeps its colour on every chart that uses the same function.
export function colours(palette = PALETTE) {
    const seen = new Map();
    return (name) => {
        if (!seen.has(name)) seen.set(name, palette[seen.size % palette.length]);
        return seen.get(name);
    };
}

const dpr = () => globalThis.devicePixelRatio || 1;

/// chart(uPlot, box, opts, data, { height, minWidth, fallbackWidth }): a uPlot in `box`, as wide as
/// `box` is and redrawn at the new width whenever `box` is resized (ResizeObserver -> setSize at the
/// next frame). Returns the uPlot; its destroy() also stops watching. Without ResizeObserver (node)
/// the chart keeps its first width.
export function chart(uPlot, box, opts, data, { height = 260, minWidth = 160, fallbackWidth = 600 } = {}) {
    box.style.minWidth = '0';
    box.style.overflow = 'hidden';
    const width = () => Math.max(minWidth, Math.floor(box.clientWidth || fallbackWidth));
    let last = width();
    const u = new uPlot({ ...opts, width: last, height }, data, box);
    if (typeof ResizeObserver !== 'function') return u;
    let frame = 0;
    // Resized at the next frame, not inside the observer: setSize inside it would resize the box
    // again within the same observation.
    const ro = new ResizeObserver(() => {
        if (frame) return;
        frame = requestAnimationFrame(() => {
            frame = 0;
            const w = width();
            if (w !== last) { last = w; u.setSize({ width: w, height }); }
        });
    });
    ro.observe(box);
    const destroy = u.destroy.bind(u);
    u.destroy = () => { ro.disconnect(); if (frame) cancelAnimationFrame(frame); destroy(); };
    return u;
}

/// Returns: a box saying plots are unavailable (the build has no uPlot).
export function noPlots() {
    const d = document.createElement('div');
    d.className = 'noplots';
    d.textContent = 'plots unavailable (built without uPlot)';
    return d;
}

// --- folds: not Math.max(...xs), which overflows the stack on a long series ----------------------
/// maxOf(xs, init), minOf(xs, init): the largest / smallest non-null value, or `init`.
export const maxOf = (xs, init = -Infinity) => xs.reduce((m, v) => (v !== null && v > m ? v : m), init);
export const minOf = (xs, init = Infinity) => xs.reduce((m, v) => (v !== null && v < m ? v : m), init);

// --- axes sized to their widest label, so labels never run over the ticks ------------------------
/// The font of every axis axis() makes; axisSize measures with it.
export const AXIS_FONT = '12px system-ui, -apple-system, "DejaVu Sans", sans-serif';
const LABEL_FONT = 'bold 12px system-ui, -apple-system, "DejaVu Sans", sans-serif';
let measureCtx;
function textWidth(s) {
    if (measureCtx === undefined) {
        measureCtx = document.createElement('canvas').getContext('2d') || null;
        if (measureCtx) measureCtx.font = AXIS_FONT;
    }
    return measureCtx ? measureCtx.measureText(String(s)).width : 7 * String(s).length;
}
/// axisSize(u, values): a uPlot axis `size` that fits the widest tick label, the tick and the gap
/// of an axis() (tick 4 px, gap 4 px) and a margin.
export function axisSize(u, values) {
    if (!values || !values.length) return 40;
    return Math.ceil(maxOf(values.map((v) => textWidth(String(v ?? ''))), 0)) + 16;
}

// The axis' length in CSS px (uPlot's bbox is in canvas px).
const axisPx = (u, ai) => ([0, 2].includes(u.axes[ai].side) ? u.bbox.width : u.bbox.height) / dpr();

/// axis(label, side, ticks, fmt, extra): a uPlot axis on `side` (2 bottom, 3 left, 1 right, 0 top)
/// whose ticks are ticks(min, max, lengthInCssPx) and labels fmt(value); every tick is labelled.
/// A vertical axis is as wide as its widest label. `extra` overrides any option.
export function axis(label, side, ticks, fmt, extra = {}) {
    const vertical = side === 1 || side === 3;
    return {
        label, side, font: AXIS_FONT, labelFont: LABEL_FONT, stroke: '#5b6673', gap: 4, labelSize: 20,
        grid: { stroke: '#e3e7ec', width: 1 }, ticks: { stroke: '#c6cdd4', width: 1, size: 4 },
        filter: (u, splits) => splits, // every split labelled (uPlot's log default drops some)
        splits: (u, ai, min, max) => ticks(min, max, axisPx(u, ai)),
        values: (u, splits) => splits.map((v) => (v == null ? '' : fmt(v))),
        size: vertical ? axisSize : 34,
        ...extra,
    };
}

// --- formats ------------------------------------------------------------------------------------
/// formatBytes(n): 0, 512 B, 64 KiB, 1.5 MiB (binary units, 3 significant digits); '–' for none.
export function formatBytes(n) {
    if (n === null || n === undefined || !isFinite(n)) return '–';
    if (n === 0) return '0';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; ++i; }
    return (i === 0 ? n.toFixed(0) : String(+n.toPrecision(3))) + ' ' + units[i];
}
/// formatNs(ns): 8 ns, 16.6 ns, 1.25 µs, 3 ms (3 significant digits); '–' for none.
export function formatNs(ns) {
    if (ns === null || ns === undefined || !isFinite(ns)) return '–';
    if (ns === 0) return '0';
    if (ns >= 1e6) return +(ns / 1e6).toPrecision(3) + ' ms';
    if (ns >= 1e3) return +(ns / 1e3).toPrecision(3) + ' µs';
    return (ns >= 100 ? ns.toFixed(0) : +ns.toPrecision(3)) + ' ns';
}

// --- ticks: pure functions of the range (and the axis' length in CSS px) --------------------------
/// linTicks(lo, hi, px, minPx, bytes): linear ticks at least `minPx` apart: steps of 1, 2, 2.5,
/// 5 x 10^k, or with `bytes` powers of two (which read round in KiB / MiB / GiB).
export function linTicks(lo, hi, px, minPx, bytes = false) {
    if (!(hi > lo)) return [lo];
    const raw = (hi - lo) / Math.max(1, Math.floor(px / minPx));
    let step;
    if (bytes) step = 2 ** Math.max(0, Math.ceil(Math.log2(raw) - 1e-9));
    else {
        const mag = 10 ** Math.floor(Math.log10(raw));
        step = [1, 2, 2.5, 5, 10].map((s) => s * mag).find((s) => s >= raw * (1 - 1e-9));
    }
    const out = [];
    for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return out;
}
/// byteSplits(min, max, most): ticks at multiples of a power of two (16, 32, 64 KiB ...), at most
/// `most` of them.
export function byteSplits(min, max, most = 6) {
    return linTicks(min, max, Math.max(1, most - 1), 1, true);
}
/// pow2Ticks(lo, hi, px, minPx): ticks for a log2 axis: the powers of two in [lo, hi], every one or
/// every 2nd, 4th ... so that they are at least `minPx` apart.
export function pow2Ticks(lo, hi, px, minPx) {
    const k0 = Math.ceil(Math.log2(lo) - 1e-9), k1 = Math.floor(Math.log2(hi) + 1e-9), out = [];
    let step = 1;
    while ((px / Math.max(1, Math.log2(hi / lo))) * step < minPx && step < 64) step *= 2;
    for (let k = Math.ceil(k0 / step) * step; k <= k1; k += step) out.push(2 ** k);
    return out;
}
/// decadeSplits(min, max, px, minPx): ticks for a log10 axis over [min, max]: 1, 2 and 5 x 10^k
/// when a decade has room for three labels `minPx` apart, else every decade (or every k-th one).
/// Without px: 1-2-5 over at most two decades, decades beyond.
export function decadeSplits(min, max, px = 240, minPx = 40) {
    if (!(min > 0) || !(max >= min)) return [];
    const e0 = Math.floor(Math.log10(min) + 1e-9), e1 = Math.ceil(Math.log10(max) - 1e-9);
    const perDecade = px / Math.max(Math.log10(max / min), 1e-9);
    const fine = perDecade >= 3 * minPx;
    const step = fine ? 1 : Math.max(1, Math.ceil(minPx / perDecade));
    const out = [];
    for (let e = e0; e <= e1; e += step) {
        for (const k of fine ? [1, 2, 5] : [1]) {
            const v = k * 10 ** e;
            if (v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9)) out.push(v);
        }
    }
    return out;
}

/// bytesAxis(label, side, log): an axis of bytes: binary steps (linear) or powers of two (log2).
export function bytesAxis(label, side = 3, log = false, extra = {}) {
    const vertical = side === 1 || side === 3;
    const ticks = log ? (lo, hi, px) => pow2Ticks(lo, hi, px, vertical ? 24 : 64)
        : (lo, hi, px) => linTicks(lo, hi, px, vertical ? 30 : 72, true);
    return axis(label, side, ticks, formatBytes, extra);
}
/// nsAxis(label, side): an axis of nanoseconds on a log10 scale (distr 3), ticks 1-2-5 by length.
export function nsAxis(label, side = 2, extra = {}) {
    const minPx = side === 1 || side === 3 ? 22 : 56;
    return axis(label, side, (lo, hi, px) => decadeSplits(lo, hi, px, minPx), formatNs, extra);
}

// --- percentiles on a "nines" scale ----------------------------------------------------------
/// nines(p): -log10(1 - p/100): p90 -> 1, p99 -> 2, p99.9 -> 3 (evenly spaced tail).
export function nines(p) { return -Math.log10(Math.max(1e-12, 1 - p / 100)); }
/// ninesLabel(n): the percentile at `n` nines, as p50, p99.9 ('min' at 0).
export function ninesLabel(n) {
    if (n <= 1e-9) return 'min';
    const p = 100 * (1 - 10 ** -n);
    return 'p' + String(Number(p.toFixed(Math.max(0, Math.ceil(n - 2) + 1)))).replace(/\.0+$/, '');
}
/// ninesSplits(min, max, px, minPx): min, p50, p90, p99, p99.9 ... within [min, max]; with px, at
/// least `minPx` apart (every k-th nine; p50 only where it clears its neighbours).
export function ninesSplits(min, max, px = 0, minPx = 48) {
    const perNine = px ? px / Math.max(1e-9, max - min) : Infinity;
    const step = Math.max(1, Math.ceil(minPx / perNine));
    const half = Math.log10(2);
    return [0, half, 1, 2, 3, 4, 5, 6, 7].filter((n) => n >= min - 1e-9 && n <= max + 1e-9 &&
        (n === half ? step === 1 && perNine * half >= minPx && perNine * (1 - half) >= minPx : n % step === 0));
}
/// ninesAxis(label, side): an axis whose values are nines(p), labelled as percentiles.
export function ninesAxis(label, side = 2, extra = {}) {
    return axis(label, side, (lo, hi, px) => ninesSplits(lo, hi, px), ninesLabel, extra);
}

// --- data -------------------------------------------------------------------------------------------
/// align(tables): series [xs, ys] with different x values on one shared x: the union of the x
/// values, null where a series has none (uPlot wants aligned columns; spanGaps joins the lines).
export function align(tables) {
    const xs = [...new Set(tables.flatMap((t) => t[0]))].sort((a, b) => a - b);
    const at = new Map(xs.map((x, i) => [x, i]));
    return [xs, ...tables.map(([tx, ty]) => {
        const col = new Array(xs.length).fill(null);
        tx.forEach((x, j) => { col[at.get(x)] = ty[j] === undefined ? null : ty[j]; });
        return col;
    })];
}
/// decimate(xs, ys, buckets): at most 2 x `buckets` points: per bucket of consecutive samples its
/// lowest and highest value, in order, so peaks survive and a 200,000-point series draws as fast
/// as a short one.
export function decimate(xs, ys, buckets = 2000) {
    const n = Math.min(xs.length, ys.length);
    if (n <= 2 * buckets) return [xs.slice(0, n), ys.slice(0, n)];
    const ox = [], oy = [];
    for (let b = 0; b < buckets; ++b) {
        const i0 = Math.floor((b * n) / buckets), i1 = Math.floor(((b + 1) * n) / buckets);
        let lo = -1, hi = -1;
        for (let i = i0; i < i1; ++i) {
            if (ys[i] === null) continue;
            if (lo < 0 || ys[i] < ys[lo]) lo = i;
            if (hi < 0 || ys[i] > ys[hi]) hi = i;
        }
        for (const i of lo < 0 ? [] : lo === hi ? [lo] : [Math.min(lo, hi), Math.max(lo, hi)]) { ox.push(xs[i]); oy.push(ys[i]); }
    }
    return [ox, oy];
}
