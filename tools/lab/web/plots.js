// Charts for the live lab's views, on uPlot: chart() makes one that follows its container's width
// (a ResizeObserver calls setSize), and the axes the views share: bytes on binary steps, latency in
// ns on a log scale, percentiles on a "nines" scale. Nothing here knows an allocator.
//   chart, PALETTE, formatBytes, byteSplits, byteAxis, formatNs, decadeSplits, nsAxis,
//   nines, ninesLabel, ninesSplits, ninesAxis, axisSize
import { el } from './draw.js';

/// Colours for up to 8 series, distinct in print and for the common colour blindnesses.
export const PALETTE = ['#c62828', '#6a1b9a', '#8d6e00', '#00838f', '#d9822b', '#1f6feb', '#2e7d32', '#555555'];

/// chart(uPlot, box, opts, data, { height }): a uPlot in `box` as wide as `box` is, redrawn at the
/// new width whenever `box` is resized. Returns the uPlot; its destroy() also stops watching.
export function chart(uPlot, box, opts, data, { height = 260, minWidth = 160 } = {}) {
    box.style.minWidth = '0';
    box.style.overflow = 'hidden';
    const width = () => Math.max(minWidth, Math.floor(box.clientWidth || 600));
    let last = width();
    const u = new uPlot({ ...opts, width: last, height }, data, box);
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
    return el('div', { class: 'noplots', text: 'plots unavailable (built without uPlot)' });
}

// --- text widths: axes sized to their widest label, so labels never run over the ticks ---------
const AXIS_FONT = '12px system-ui, -apple-system, sans-serif'; // uPlot's axis font
let measureCtx = null;
function textWidth(s) {
    if (!measureCtx) { measureCtx = document.createElement('canvas').getContext('2d'); measureCtx.font = AXIS_FONT; }
    return measureCtx.measureText(s).width;
}
/// axisSize(u, values): a uPlot axis `size` that fits the widest tick label, the tick and a gap.
export function axisSize(u, values) {
    if (!values || !values.length) return 40;
    return Math.ceil(Math.max(...values.map((v) => textWidth(String(v ?? ''))))) + 18;
}

// --- bytes -----------------------------------------------------------------------------------
/// formatBytes(n): 0, 512 B, 64 KiB, 1.5 MiB (binary units, a decimal only when needed).
export function formatBytes(n) {
    if (n === 0) return '0';
    const units = [['GiB', 2 ** 30], ['MiB', 2 ** 20], ['KiB', 2 ** 10]];
    for (const [u, s] of units) {
        if (Math.abs(n) >= s) {
            const v = n / s;
            return (Number.isInteger(v) ? String(v) : v.toFixed(Math.abs(v) < 10 ? 2 : 1).replace(/\.?0+$/, '')) + ' ' + u;
        }
    }
    return Math.round(n) + ' B';
}

/// byteSplits(min, max, most): ticks at multiples of a power of two (16, 32, 64 KiB ...), at most
/// `most` of them.
export function byteSplits(min, max, most = 6) {
    const span = max - min;
    if (!(span > 0)) return [min];
    let step = 1;
    while (span / step > Math.max(1, most - 1)) step *= 2;
    const out = [];
    for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(v);
    return out;
}

/// byteAxis(label, most): a uPlot y axis of bytes with binary ticks, at most `most` of them.
export function byteAxis(label, most = 6) {
    return {
        label,
        size: axisSize,
        splits: (u, ai, min, max) => byteSplits(min, max, most),
        values: (u, vs) => vs.map((v) => (v == null ? '' : formatBytes(v))),
    };
}

// --- latency (ns, log scale) ------------------------------------------------------------------
/// formatNs(ns): 8 ns, 1.2 µs, 16.6 µs, 3 ms.
export function formatNs(ns) {
    const f = (v) => (v >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toPrecision(v >= 10 ? 3 : 2).replace(/\.?0+$/, ''));
    if (ns >= 1e6) return f(ns / 1e6) + ' ms';
    if (ns >= 1e3) return f(ns / 1e3) + ' µs';
    return f(ns) + ' ns';
}

/// decadeSplits(min, max): the powers of ten in [min, max] (with 2x and 5x when under two decades).
export function decadeSplits(min, max) {
    const out = [];
    const lo = Math.floor(Math.log10(Math.max(min, 1e-3))), hi = Math.ceil(Math.log10(Math.max(max, 1e-3)));
    const mults = hi - lo <= 2 ? [1, 2, 5] : [1];
    for (let e = lo; e <= hi; e++) {
        for (const m of mults) {
            const v = m * 10 ** e;
            if (v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9)) out.push(v);
        }
    }
    return out;
}

/// nsAxis(label, vertical): a uPlot axis of nanoseconds for a log scale (distr 3): ticks at
/// decades. A vertical (y) axis is as wide as its widest label.
export function nsAxis(label, vertical = false) {
    return { label, size: vertical ? axisSize : 30, splits: (u, ai, min, max) => decadeSplits(min, max), values: (u, vs) => vs.map((v) => (v == null ? '' : formatNs(v))) };
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
/// ninesSplits(min, max): min, p50, p90, p99, p99.9 ... within [min, max].
export function ninesSplits(min, max) {
    return [0, Math.log10(2), 1, 2, 3, 4, 5, 6].filter((n) => n >= min - 1e-9 && n <= max + 1e-9);
}
/// ninesAxis(label): a uPlot x axis whose values are nines(p), labelled as percentiles (p50 left
/// out where it would touch 'min').
export function ninesAxis(label) {
    const splits = (u, ai, min, max) => {
        const perNine = u.bbox.width / (window.devicePixelRatio || 1) / Math.max(1e-9, max - min);
        return ninesSplits(min, max).filter((n) => !(n > 0 && n < 1 && perNine * n < 44));
    };
    return { label, size: 30, splits, values: (u, vs) => vs.map((v) => (v == null ? '' : ninesLabel(v))) };
}
