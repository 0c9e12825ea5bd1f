// strata-lab report: renders inline SVG plots from the JSON embedded in #strata-data.
// Dependency-free ES module; see docs/lab-report.md for the schema and how to read each plot.
// The SVG namespace, spelled so that the page contains no URL at all (the tests look for none).
const SVG = ['http:', '', 'www.w3.org', '2000', 'svg'].join('/');
const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf',
                 '#7f7f7f', '#bcbd22', '#393b79', '#ad494a', '#637939', '#843c39', '#3182bd', '#e6550d'];
const W = 560, H = 300, M = { l: 64, r: 16, t: 12, b: 44 };

const colours = new Map();
// Math.max(...xs) passes every element as an argument: a long series (--from JSON) overflowed the
// stack. These fold instead.
const maxOf = (xs, init = -Infinity) => xs.reduce((m, v) => (v > m ? v : m), init);
const minOf = (xs, init = Infinity) => xs.reduce((m, v) => (v < m ? v : m), init);

function colour(name) {
    if (!colours.has(name)) colours.set(name, PALETTE[colours.size % PALETTE.length]);
    return colours.get(name);
}

function el(tag, attrs = {}, parent = null, text = null) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
}
function sv(tag, attrs = {}, parent = null, text = null) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
}
function tip(node, text) { sv('title', {}, node, text); return node; }

function fmtNs(ns) {
    if (ns === null || ns === undefined || !isFinite(ns)) return '–';
    if (ns === 0) return '0';
    if (ns >= 1e6) return (ns / 1e6).toPrecision(3) + ' ms';
    if (ns >= 1e3) return (ns / 1e3).toPrecision(3) + ' µs';
    return (ns >= 100 ? ns.toFixed(0) : ns.toPrecision(3)) + ' ns';
}
function fmtBytes(b) {
    if (b === null || b === undefined || !isFinite(b)) return '–';
    if (b === 0) return '0';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (Math.abs(b) >= 1024 && i < u.length - 1) { b /= 1024; ++i; }
    return (i === 0 ? b.toFixed(0) : String(+b.toPrecision(3))) + ' ' + u[i];
}
function fmtPct(x) { return x === null || x === undefined ? '–' : (100 * x).toFixed(1) + ' %'; }
function fmtNum(x) {
    if (x === null || x === undefined || !isFinite(x)) return '–';
    if (Math.abs(x) >= 1e6) return (x / 1e6).toPrecision(3) + 'M';
    if (Math.abs(x) >= 1e3) return (x / 1e3).toPrecision(3) + 'k';
    return Number.isInteger(x) ? String(x) : x.toPrecision(3);
}
function fmtUnit(x, unit) {
    if (unit === 'ns') return fmtNs(x);
    if (unit === 'bytes' || unit === 'B') return fmtBytes(x);
    if (unit === '%') return x.toPrecision(3) + ' %';
    return fmtNum(x) + (unit ? ' ' + unit : '');
}

// Linear "nice" ticks.
function niceTicks(lo, hi, n = 5) {
    if (!(hi > lo)) hi = lo + 1;
    const raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map(s => s * mag).find(s => s >= raw);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
    return { ticks: out, lo: Math.min(lo, out[0]), hi: Math.max(hi, out[out.length - 1]) };
}

// A plot frame: figure.plot with title, legend, svg, caption. Returns {fig, svg}. `size` (default
// W x H) is the svg's viewBox: a plot given a row of its own is wider, so its text stays the size
// of the others'.
function figure(parent, title, caption, legend, size = { w: W, h: H }) {
    const fig = el('figure', { class: 'plot' }, parent);
    el('h3', {}, fig, title);
    if (legend && legend.length) {
        const lg = el('div', { class: 'legend' }, fig);
        for (const [name, c] of legend) {
            const s = el('span', {}, lg);
            el('span', { class: 'swatch', style: `background:${c}` }, s);
            s.appendChild(document.createTextNode(name));
        }
    }
    const svg = sv('svg', { viewBox: `0 0 ${size.w} ${size.h}`, role: 'img', 'aria-label': title }, fig);
    el('figcaption', {}, fig, caption);
    return { fig, svg };
}

// A plot that has nothing to draw: its title and a note saying why, instead of empty axes (which
// read as "every bin empty" or as a broken page).
function notMeasured(parent, title, note) {
    const fig = el('figure', { class: 'plot not-measured' }, parent);
    el('h3', {}, fig, title);
    el('p', { class: 'note' }, fig, note);
    return fig;
}
const NO_LATENCY = 'Not measured: this run timed no single calls (--latency-passes 0), so there is no latency ' +
    'distribution to draw. ns/op in the table is still measured.';

function axes(svg, xs, ys, xlabel, ylabel, size = { w: W, h: H }) {
    const w = size.w, h = size.h;
    const g = sv('g', {}, svg);
    for (const t of ys.ticks) {
        const y = ys.map(t.v);
        const tg = sv('g', { class: 'tick' }, g);
        sv('line', { class: 'gridline', x1: M.l, x2: w - M.r, y1: y, y2: y }, tg);
        sv('text', { x: M.l - 6, y: y + 3.5, 'text-anchor': 'end' }, tg, t.label);
    }
    for (const t of xs.ticks) {
        const x = xs.map(t.v);
        const tg = sv('g', { class: 'tick' }, g);
        sv('line', { class: 'gridline', x1: x, x2: x, y1: M.t, y2: h - M.b }, tg);
        const anchor = x > w - M.r - 20 ? 'end' : 'middle';
        sv('text', { x: anchor === 'end' ? w - M.r : x, y: h - M.b + 15, 'text-anchor': anchor }, tg, t.label);
    }
    sv('line', { class: 'axis', x1: M.l, x2: w - M.r, y1: h - M.b, y2: h - M.b }, g);
    sv('line', { class: 'axis', x1: M.l, x2: M.l, y1: M.t, y2: h - M.b }, g);
    sv('text', { x: (M.l + w - M.r) / 2, y: h - 6, 'text-anchor': 'middle' }, g, xlabel);
    sv('text', { x: 10, y: (M.t + h - M.b) / 2, 'text-anchor': 'middle',
                 transform: `rotate(-90 10 ${(M.t + h - M.b) / 2})` }, g, ylabel);
}

function logScale(lo, hi, px0, px1, fmt) {
    const l0 = Math.floor(Math.log10(lo)), l1 = Math.ceil(Math.log10(hi));
    const span = Math.max(1, l1 - l0);
    const map = v => px0 + (Math.log10(Math.max(v, Math.pow(10, l0))) - l0) / span * (px1 - px0);
    const ticks = [];
    for (let e = l0; e <= l1; ++e) {
        ticks.push({ v: Math.pow(10, e), label: fmt(Math.pow(10, e)) });
        // Few decades: label 2x and 5x too.
        if (span <= 2 && e < l1) for (const k of [2, 5]) ticks.push({ v: k * Math.pow(10, e), label: fmt(k * Math.pow(10, e)) });
    }
    return { map, ticks };
}
// Linear scale for bytes: ticks at round KiB/MiB/GiB values.
function byteScale(lo, hi, px0, px1) {
    let unit = 1;
    while (hi / unit >= 1024 * 2 && unit < Math.pow(1024, 4)) unit *= 1024;
    const n = niceTicks(lo / unit, hi / unit);
    const map = v => px0 + (v / unit - n.lo) / (n.hi - n.lo) * (px1 - px0);
    return { map, ticks: n.ticks.map(v => ({ v: v * unit, label: fmtBytes(v * unit) })) };
}
// Log scale for bytes: ticks at powers of two (every second or fourth one when the span is wide).
function logByteScale(lo, hi, px0, px1) {
    const k0 = Math.floor(Math.log2(Math.max(1, lo))), k1 = Math.ceil(Math.log2(Math.max(2, hi)));
    const span = Math.max(1, k1 - k0), step = span > 16 ? 4 : span > 8 ? 2 : 1;
    const map = v => px0 + (Math.log2(Math.max(v, Math.pow(2, k0))) - k0) / span * (px1 - px0);
    const ticks = [];
    for (let k = k0; k <= k1; k += step) ticks.push({ v: Math.pow(2, k), label: fmtBytes(Math.pow(2, k)) });
    return { map, ticks };
}
function linScale(lo, hi, px0, px1, fmt) {
    const n = niceTicks(lo, hi);
    const map = v => px0 + (v - n.lo) / (n.hi - n.lo) * (px1 - px0);
    return { map, ticks: n.ticks.map(v => ({ v, label: fmt(v) })) };
}

// ---- latency histogram (log x) ---------------------------------------------------------------
function plotHistogram(parent, wl, binsPerDoubling) {
    const hist = a => (a.histogram_filtered && a.histogram_filtered.length ? a.histogram_filtered : a.histogram_raw);
    const allocs = wl.allocators.filter(a => (hist(a) || []).some(c => c > 0));
    if (!allocs.length) return notMeasured(parent, `Latency histogram: ${wl.name}`, NO_LATENCY);
    const edge = i => Math.pow(2, i / binsPerDoubling);
    let hiBin = 1, maxFrac = 0;
    const totals = allocs.map(a => hist(a).reduce((s, c) => s + c, 0) || 1);
    const fracs = allocs.map((a, k) => {
        const h = hist(a), total = totals[k];
        h.forEach((c, i) => { if (c > 0) hiBin = Math.max(hiBin, i + 1); });
        const f = h.map(c => c / total);
        maxFrac = maxOf(f, maxFrac);
        return f;
    });
    const { svg } = figure(parent, `Latency histogram: ${wl.name}`,
        'Share of operations (y, log scale) per latency bin (x, log scale; ' + binsPerDoubling +
        ' bins per doubling), from the filtered pass (per-operation minimum over the latency passes; raw when ' +
        'there is one pass). Read it as: the tallest step is the typical cost; anything far to the right is the ' +
        'tail (page faults, refills, lock waits); the log y axis keeps a bin of a single operation visible. Latencies are net of the timer overhead, so the leftmost ' +
        'bin collects operations at or below the timer resolution. Hover a step for the allocator and bin.',
        allocs.map(a => [a.name, colour(a.name)]));
    const xs = logScale(1, edge(hiBin), M.l, W - M.r, fmtNs);
    // y: share of operations on a log axis from 100 % down to a power of 10 at least 2x below the
    // smallest non-zero share, so every non-empty bin stands visibly above the axis (a share of exactly
    // 10^-k on its own decade's floor would read as empty), and at most 100 %.
    let minFrac = 1;
    for (const f of fracs) for (const v of f) if (v > 0) minFrac = Math.min(minFrac, v);
    let floorExp = Math.floor(Math.log10(minFrac));
    if (minFrac < 2 * Math.pow(10, floorExp)) floorExp -= 1; // at least ~0.3 decade above the axis
    const floor = Math.pow(10, floorExp);
    // (1 + 1e-9): logScale takes the decade of its bounds, and log10(10^k) may round just below k.
    const ys = logScale(floor * (1 + 1e-9), Math.min(1, Math.max(maxFrac, floor * 10)), H - M.b, M.t,
                        v => (v >= 0.01 ? (100 * v).toFixed(0) : String(+(100 * v).toPrecision(1))) + ' %');
    const yOf = v => (v > 0 ? ys.map(Math.max(v, floor)) : H - M.b);
    axes(svg, xs, ys, 'latency per operation (log)', 'share of operations (log)');
    allocs.forEach((a, k) => {
        const f = fracs[k], h = hist(a);
        let d = '';
        for (let i = 0; i < hiBin; ++i) {
            const x0 = xs.map(Math.max(1, edge(i))), x1 = xs.map(Math.max(1, edge(i + 1)));
            const y = yOf(f[i] || 0);
            d += (i === 0 ? `M${x0.toFixed(1)},${(H - M.b).toFixed(1)}` : '') + `L${x0.toFixed(1)},${y.toFixed(1)}L${x1.toFixed(1)},${y.toFixed(1)}`;
        }
        d += `L${xs.map(edge(hiBin)).toFixed(1)},${(H - M.b).toFixed(1)}Z`;
        const g = sv('g', { class: 'series', 'data-name': a.name }, svg);
        sv('path', { d, fill: colour(a.name), 'fill-opacity': 0.12, stroke: colour(a.name), 'stroke-width': 1.4,
                     'stroke-opacity': 0.9, 'stroke-linejoin': 'round' }, g);
        // Invisible hover targets per non-empty bin.
        f.forEach((v, i) => {
            if (!v) return;
            const x0 = xs.map(Math.max(1, edge(i))), x1 = xs.map(Math.max(1, edge(i + 1)));
            tip(sv('rect', { x: x0, y: yOf(v) - 2, width: Math.max(1, x1 - x0), height: 4,
                             fill: colour(a.name), 'fill-opacity': 0.25 }, g),
                `${a.name}: ${(100 * v).toPrecision(3)} % of ops (${fmtNum(h[i])} of ${fmtNum(totals[k])}) in ` +
                `[${fmtNs(edge(i))}, ${fmtNs(edge(i + 1))})`);
        });
    });
}

// ---- tail CDF on a "nines" axis ----------------------------------------------------------------
function plotTail(parent, wl) {
    const tail = a => (a.tail_filtered && a.tail_filtered.length ? a.tail_filtered : a.tail_raw);
    const allocs = wl.allocators.filter(a => (tail(a) || []).length);
    if (!allocs.length) {
        const timed = wl.allocators.some(a => [a.histogram_filtered, a.histogram_raw].some(h => (h || []).some(c => c > 0)));
        return notMeasured(parent, `Tail latency: ${wl.name}`,
                           timed ? 'Too few timed operations to draw a tail.' : NO_LATENCY);
    }
    const nines = p => -Math.log10(Math.max(1e-9, 1 - p / 100));
    let maxN = 1, lo = Infinity, hi = 1;
    for (const a of allocs) for (const [p, ns] of tail(a)) {
        maxN = Math.max(maxN, Math.min(nines(p), 7));
        if (ns > 0) { lo = Math.min(lo, ns); hi = Math.max(hi, ns); }
    }
    maxN = Math.ceil(maxN);
    const { svg } = figure(parent, `Tail latency: ${wl.name}`,
        'Latency (y, log) reached by a given fraction of operations (x, "nines" axis: 90 %, 99 %, 99.9 %, … ' +
        'are equally spaced, so the rare tail gets as much room as the median). Filtered pass. Read it as: ' +
        'a line lower is faster at that percentile; a line that rises steeply on the right has a long tail ' +
        '(one op in 10^k pays that much). Hover a point for the exact value.',
        allocs.map(a => [a.name, colour(a.name)]));
    const xsMap = v => M.l + v / maxN * (W - M.r - M.l);
    const xTicks = [];
    for (let k = 0; k <= maxN; ++k) xTicks.push({ v: k, label: k === 0 ? '0 %' : (100 - Math.pow(10, 2 - k)).toFixed(Math.max(0, k - 2)) + ' %' });
    const xs = { map: xsMap, ticks: xTicks };
    const ys = logScale(Math.max(1, isFinite(lo) ? lo : 1), hi, H - M.b, M.t, fmtNs);
    axes(svg, xs, ys, 'percentile (nines axis)', 'latency (log)');
    for (const a of allocs) {
        const pts = tail(a).filter(([p]) => nines(p) <= maxN + 1e-9);
        const g = sv('g', { class: 'series', 'data-name': a.name }, svg);
        const d = pts.map(([p, ns], i) => `${i ? 'L' : 'M'}${xsMap(nines(p)).toFixed(1)},${ys.map(Math.max(1, ns)).toFixed(1)}`).join('');
        sv('path', { d, fill: 'none', stroke: colour(a.name), 'stroke-width': 1.8 }, g);
        for (const [p, ns] of pts)
            tip(sv('circle', { cx: xsMap(nines(p)), cy: ys.map(Math.max(1, ns)), r: 2.6, fill: colour(a.name) }, g),
                `${a.name}: p${+p.toPrecision(6)} = ${fmtNs(ns)}`);
    }
}

// ---- a series over the replay (footprint, largest free block) --------------------------------
function plotSeries(parent, wl, key, title, caption, withLive) {
    const allocs = wl.allocators.filter(a => a.series && Array.isArray(a.series[key]) && a.series[key].length);
    if (!allocs.length) return false;
    let maxOp = 1, maxY = 1, minY = Infinity;
    for (const a of allocs) {
        maxOp = maxOf(a.series.op, maxOp);
        const vals = a.series[key].filter(v => v !== null);
        maxY = maxOf(vals, maxY);
        minY = minOf(vals.filter(v => v > 0), minY);
    }
    if (withLive && allocs[0].series.live_bytes) maxY = maxOf(allocs[0].series.live_bytes, maxY);
    // Allocators that differ by more than 16x share the plot on a log axis.
    const logY = isFinite(minY) && maxY / minY > 16;
    const legend = allocs.map(a => [a.name, colour(a.name)]);
    if (withLive) legend.push(['live bytes (requested)', '#222']);
    const { svg } = figure(parent, title, caption + (logY ? ' The y axis is logarithmic here: the allocators differ by more than 16×.' : ''), legend);
    const xs = linScale(0, maxOp, M.l, W - M.r, fmtNum);
    const ys = logY ? logByteScale(minY / 2, maxY, H - M.b, M.t) : byteScale(0, maxY * 1.05, H - M.b, M.t);
    axes(svg, xs, ys, 'memory operation #', logY ? 'bytes (log)' : 'bytes');
    const line = (ops, vals) => ops.map((o, i) => vals[i] === null ? '' : `${i ? 'L' : 'M'}${xs.map(o).toFixed(1)},${ys.map(vals[i]).toFixed(1)}`).join('');
    if (withLive) {
        const a = allocs[0];
        tip(sv('path', { d: line(a.series.op, a.series.live_bytes), fill: 'none', stroke: '#222', 'stroke-width': 1.2,
                         'stroke-dasharray': '4 3', class: 'live' }, svg),
            'live bytes the workload holds (the same for every allocator)');
    }
    for (const a of allocs) {
        const g = sv('g', { class: 'series', 'data-name': a.name }, svg);
        tip(sv('path', { d: line(a.series.op, a.series[key]), fill: 'none', stroke: colour(a.name), 'stroke-width': 1.7 }, g),
            `${a.name}: peak ${fmtBytes(maxOf(a.series[key].filter(v => v !== null)))}`);
    }
    return true;
}

// ---- bars (showdown, versus malloc) -------------------------------------------------------------
function plotBars(parent, b) {
    const groups = b.groups || [];
    const series = [];
    for (const g of groups) for (const k of Object.keys(g.values || {})) if (!series.includes(k)) series.push(k);
    // "log_scale": values spanning decades (a published 0.64 s beside a measured 50 µs) on a log x axis;
    // a value <= 0 has no place on it and is left out (the caption says so).
    const logX = b.log_scale === true;
    const drawable = v => typeof v === 'number' && isFinite(v) && (!logX || v > 0);
    let maxV = 0, minV = Infinity;
    for (const g of groups) for (const v of Object.values(g.values || {})) if (drawable(v)) {
        maxV = Math.max(maxV, v);
        if (v > 0) minV = Math.min(minV, v);
    }
    const unit = b.unit || '';
    const how = b.lower_is_better === false ? 'Longer bars are better.' : 'Shorter bars are better.';
    const caption = b.caption ? b.caption + (/[.!?]$/.test(b.caption) ? ' ' : '. ') : '';
    const logNote = logX ? ' The x axis is logarithmic (each grid line is 10× the one before) and every bar starts ' +
        'at its left end, so read the values, not the lengths: a bar twice as long is not twice the value.' +
        ' Values of 0 or less cannot be drawn on it and are left out.' : '';
    const { svg } = figure(parent, b.title || 'bars', caption + how +
        ' Values are labelled at the bar end' + (unit ? ` (${unit})` : '') + '; hover a bar for the exact value.' + logNote,
        series.map(s => [s, colour(s)]));
    const rowH = Math.max(8, Math.min(18, 200 / Math.max(1, series.length)));
    const groupH = rowH * series.length + 12;
    const left = 150, height = M.t + groups.length * groupH + 34;
    svg.setAttribute('viewBox', `0 0 ${W} ${height}`);
    // Log: ticks at powers of 10, from the decade of half the smallest value (so the shortest bar is
    // at least 0.3 decade long, not a sliver at the axis) to one that leaves room for the largest
    // bar's label (x3, about half a decade).
    const logTick = v => (unit === 'ns' || unit === 'bytes' || unit === 'B' ? fmtUnit(v, unit)
                                                                           : String(+v.toPrecision(3)) + (unit ? ' ' + unit : ''));
    const xs = logX && isFinite(minV)
        ? logScale(minV / 2, maxV * 3, left, W - M.r - 10, logTick)
        : linScale(0, maxV * 1.12 || 1, left, W - M.r - 10, v => fmtUnit(v, unit));
    // Many decades (then every tick is a power of 10): label every other one, or the labels run
    // into each other.
    const thin = logX && xs.ticks.length > 1 &&
        Math.round(Math.log10(xs.ticks[xs.ticks.length - 1].v / xs.ticks[0].v)) > 5;
    xs.ticks.forEach((t, i) => { if (thin && i % 2) t.label = ''; });
    for (const t of xs.ticks) {
        const tg = sv('g', { class: 'tick', 'data-value': t.v }, svg);
        sv('line', { class: 'gridline', x1: xs.map(t.v), x2: xs.map(t.v), y1: M.t, y2: height - 30 }, tg);
        sv('text', { x: xs.map(t.v), y: height - 16, 'text-anchor': 'middle' }, tg, t.label);
    }
    sv('line', { class: 'axis', x1: left, x2: left, y1: M.t, y2: height - 30 }, svg);
    groups.forEach((g, gi) => {
        const y0 = M.t + gi * groupH + 6;
        sv('text', { x: left - 8, y: y0 + (rowH * series.length) / 2 + 4, 'text-anchor': 'end' }, svg, g.label);
        series.forEach((s, si) => {
            const v = (g.values || {})[s];
            if (!drawable(v)) return;
            const y = y0 + si * rowH;
            const gg = sv('g', { class: 'series', 'data-name': s }, svg);
            tip(sv('rect', { x: left, y: y + 1, width: Math.max(1, xs.map(v) - left), height: rowH - 2, fill: colour(s),
                             'data-value': v }, gg),
                `${g.label} / ${s}: ${fmtUnit(v, unit)}`);
            if (rowH >= 10) sv('text', { x: Math.max(left, xs.map(v)) + 4, y: y + rowH / 2 + 3.5, 'font-size': 10 }, gg, fmtUnit(v, unit));
        });
    });
}

// ---- AoS vs SoA layout picture -------------------------------------------------------------------
function layoutLines(L) {
    const line = L.cache_line || 64, E = L.entity_bytes, f = L.field_bytes, off = L.field_offset || 0, n = L.entities || 16;
    const linesOf = (ranges) => { const s = new Set(); for (const [a, b] of ranges) for (let l = Math.floor(a / line); l <= Math.floor((b - 1) / line); ++l) s.add(l); return s; };
    const aosOne = [], aosAll = [], soaOne = [], soaAll = [];
    for (let i = 0; i < n; ++i) { aosOne.push([i * E + off, i * E + off + f]); aosAll.push([i * E, i * E + E]); soaOne.push([i * f, i * f + f]); }
    soaAll.push([0, n * E]);
    return {
        line, total: Math.ceil(n * E / line),
        rows: [
            { label: 'AoS, touch one field', used: aosOne, lines: linesOf(aosOne), usedBytes: n * f },
            { label: 'SoA, touch one field', used: soaOne, lines: linesOf(soaOne), usedBytes: n * f },
            { label: 'AoS, touch all fields', used: aosAll, lines: linesOf(aosAll), usedBytes: n * E },
            { label: 'SoA, touch all fields', used: soaAll, lines: linesOf(soaAll), usedBytes: n * E },
        ],
    };
}
function plotLayout(parent, L) {
    const n = L.entities || 16;
    const m = layoutLines(L);
    const { svg } = figure(parent, L.title || 'AoS vs SoA: which cache lines a loop loads',
        (L.caption ? L.caption + ' ' : '') + `Each box is one ${m.line}-byte cache line of the ${n} entities' ` +
        `data (${L.entity_bytes} B per entity, the touched field is ${L.field_bytes} B at offset ${L.field_offset || 0}). ` +
        'Shaded boxes are the lines the loop loads; the dark part is the bytes it actually uses. ' +
        'Read it as: the same work, fewer shaded boxes = less memory traffic. "loaded / used" on the right is ' +
        'the bytes moved from memory per byte the loop needs (1.0 is perfect).',
        [['cache line loaded', '#9ecae1'], ['bytes used', '#08519c'], ['not loaded', '#f0f0f0']]);
    const left = 150, right = 124, cols = m.total;
    const bw = Math.min(28, (W - left - right) / cols), rowH = 40;
    const height = M.t + m.rows.length * rowH + 10;
    svg.setAttribute('viewBox', `0 0 ${W} ${height}`);
    svg.style.maxWidth = `${Math.round(W * 1.35)}px`;
    m.rows.forEach((r, ri) => {
        const y = M.t + ri * rowH;
        const g = sv('g', { class: 'series', 'data-name': r.label }, svg);
        sv('text', { x: left - 8, y: y + 17, 'text-anchor': 'end' }, g, r.label);
        for (let l = 0; l < cols; ++l) {
            const loaded = r.lines.has(l);
            const box = sv('rect', { x: left + l * bw, y: y + 4, width: bw - 2, height: 22, rx: 2,
                                     fill: loaded ? '#9ecae1' : '#f0f0f0', stroke: '#c6cdd4', 'stroke-width': 0.6 }, g);
            tip(box, `${r.label}: line ${l} (bytes ${l * m.line}-${(l + 1) * m.line - 1}) ${loaded ? 'loaded' : 'not loaded'}`);
            if (!loaded) continue;
            for (const [a, b] of r.used) {
                const s = Math.max(a, l * m.line), e = Math.min(b, (l + 1) * m.line);
                if (e <= s) continue;
                sv('rect', { x: left + l * bw + (s - l * m.line) / m.line * (bw - 2), y: y + 4,
                             width: Math.max(0.8, (e - s) / m.line * (bw - 2)), height: 22, fill: '#08519c' }, g);
            }
        }
        const loadedB = r.lines.size * m.line;
        sv('text', { x: W - right + 6, y: y + 12 }, g, `${fmtBytes(loadedB)} / ${fmtBytes(r.usedBytes)}`);
        sv('text', { x: W - right + 6, y: y + 25, class: 'ratio' }, g, `${(loadedB / r.usedBytes).toFixed(1)}× loaded/used`);
    });
}

// ---- summary table ----------------------------------------------------------------------------------
function summaryTable(parent, wl) {
    const t = el('table', { class: 'summary' }, parent);
    const hr = el('tr', {}, el('thead', {}, t));
    for (const h of ['allocator', 'ns/op', 'p99 (f)', 'p99.99 (f)', 'peak footprint', 'internal waste', 'worst frag', 'failed'])
        el('th', {}, hr, h);
    const tb = el('tbody', {}, t);
    const lat = a => a.latency_filtered || a.latency_raw || {};
    const cols = [
        a => a.ns_per_op, a => lat(a).p99, a => lat(a)['p99.99'], a => a.peak_footprint, a => a.internal_waste,
        a => a.worst_fragmentation,
    ];
    const best = cols.map(c => minOf(wl.allocators.map(c).filter(v => v !== null && v !== undefined && isFinite(v))));
    for (const a of wl.allocators) {
        const tr = el('tr', {}, tb);
        const td0 = el('td', {}, tr);
        el('span', { class: 'swatch', style: `background:${colour(a.name)}` }, td0);
        td0.appendChild(document.createTextNode(a.name));
        if (a.description) td0.title = a.description;
        const fm = [v => fmtNum(v), fmtNs, fmtNs, fmtBytes, fmtPct, fmtPct];
        cols.forEach((c, i) => {
            const v = c(a);
            el('td', { class: v !== null && v !== undefined && v === best[i] && wl.allocators.length > 1 ? 'best' : '' }, tr, fm[i](v));
        });
        el('td', { class: a.failed ? 'bad' : '' }, tr, String(a.failed || 0));
    }
    el('p', { class: 'desc' }, parent,
       'Bold green: the best in its column. (f) = filtered latency (per-operation minimum over the latency passes). ' +
       'footprint: peak bytes held from the OS/source; waste: internal (granted minus requested); frag: worst ' +
       '1 − largest free block / free bytes; failed: allocations that returned null.');
}

// ---- RSS over time (strata-mt --workload phase, from report --rss) ------------------------------
// The runs to draw: the phase lines with a frame series, each named by its malloc label; a label
// seen again (several rounds in one file) is named "label #2", "label #3", ...
function rssRuns(lines) {
    const seen = new Map();
    return (lines || []).filter(r => r && Array.isArray(r.rss_frames_kib)).map(r => {
        const base = String(r.malloc || '?'), n = (seen.get(base) || 0) + 1;
        seen.set(base, n);
        return Object.assign({}, r, { name: n > 1 ? `${base} #${n}` : base, base });
    });
}
const RSS_W = 1080, RSS_H = 380;
const mibOf = kib => (typeof kib === 'number' && isFinite(kib) ? kib / 1024 : null);
const fmtMiB = kib => (mibOf(kib) === null ? '–' : mibOf(kib).toFixed(1));

function plotRss(parent, runs) {
    const frames = maxOf(runs.map(r => r.rss_frames_kib.length), 1);
    let maxKib = 1;
    for (const r of runs) maxKib = maxOf([r.grown_rss_kib, r.shrunk_rss_kib].filter(v => mibOf(v) !== null),
                                         maxOf(r.rss_frames_kib.filter(v => mibOf(v) !== null), maxKib));
    const sizes = [...new Set(runs.map(r => r.phase_mib).filter(v => v))];
    const callers = runs.filter(r => r.end_frame === true).map(r => r.name);
    const caption = 'strata-mt --workload phase: one thread grows a live set of mixed blocks to ' +
        (sizes.length ? sizes.map(v => fmtNum(v)).join(' / ') + ' MiB' : '--phase-mib MiB') +
        ', frees a random 90 % of it, then idles frame after frame: a 20 ms sleep, 1,000 free + malloc ' +
        'pairs, then a read of its RSS (/proc/self/statm). x: "grown" is the RSS after the growth and ' +
        '"shrunk" (frame 0) after the free (the dashed step); then one point per frame. y: resident MiB. ' +
        'A line that falls over the frames is an allocator giving idle memory back to the OS; lower is ' +
        'better. ' + (callers.length
            ? `Where end_frame is true (${callers.join(', ')}; "end_frame" in the legend) the process had ` +
              'strata_malloc_end_frame (libstrata_malloc.so) and called it at the end of every frame with ' +
              'a 500 µs budget; the others had nothing to call. '
            : 'No run here called strata_malloc_end_frame (end_frame false: the allocator has none). ') +
        'Hover a point for its value.';
    // A row of its own, about as wide as the page: a wider viewBox than the other plots.
    const size = { w: RSS_W, h: RSS_H };
    const { svg } = figure(parent, 'RSS per frame: strata-mt phase', caption,
                           runs.map(r => [r.name + (r.end_frame === true ? ' (end_frame)' : ''), colour(r.name)]), size);
    // x: "grown" in a slot of its own left of frame 0, so its label and the dashed step stay
    // readable however many frames follow.
    const GROWN = -1, grownX = M.l + 24, x0 = M.l + 80, x1 = size.w - M.r - 8;
    const nt = niceTicks(0, frames, 6);
    const frameX = f => x0 + f / nt.hi * (x1 - x0);
    const whole = v => Math.abs(v - Math.round(v)) < 1e-9;
    const xs = {
        map: v => (v === GROWN ? grownX : frameX(v)),
        ticks: [{ v: GROWN, label: 'grown' }, { v: 0, label: 'shrunk' }]
            .concat(nt.ticks.filter(v => v > 0 && whole(v)).map(v => ({ v: Math.round(v), label: String(Math.round(v)) }))),
    };
    const ys = linScale(0, maxKib / 1024 * 1.05, size.h - M.b, M.t, v => String(+v.toPrecision(6)));
    axes(svg, xs, ys, 'frame (each: a 20 ms sleep, 1,000 free + malloc pairs)', 'RSS (MiB)', size);
    const yOf = kib => ys.map(kib / 1024);
    // A dot per frame reads as a dotted line once there are many: then only grown and shrunk are
    // dots, and the frames are invisible hover targets.
    const dots = frames <= 20;
    for (const run of runs) {
        const c = colour(run.name), g = sv('g', { class: 'series', 'data-name': run.name }, svg);
        const pts = [];
        if (mibOf(run.grown_rss_kib) !== null) pts.push([GROWN, run.grown_rss_kib, 'after the growth']);
        if (mibOf(run.shrunk_rss_kib) !== null) pts.push([0, run.shrunk_rss_kib, 'after freeing 90 % (frame 0)']);
        run.rss_frames_kib.forEach((kib, i) => { if (mibOf(kib) !== null) pts.push([i + 1, kib, `frame ${i + 1}`]); });
        const at = ([f, kib]) => `${xs.map(f).toFixed(1)},${yOf(kib).toFixed(1)}`;
        const step = pts.filter(([f]) => f <= 0), rest = pts.filter(([f]) => f >= 0);
        if (step.length === 2)
            sv('path', { d: `M${at(step[0])}L${at(step[1])}`, fill: 'none', stroke: c, 'stroke-width': 1.4,
                         'stroke-dasharray': '4 3', class: 'step' }, g);
        if (rest.length > 1)
            tip(sv('path', { d: rest.map((p, i) => `${i ? 'L' : 'M'}${at(p)}`).join(''), fill: 'none', stroke: c,
                             'stroke-width': 1.8, 'stroke-linejoin': 'round' }, g),
                `${run.name}: ${fmtMiB(run.shrunk_rss_kib)} MiB after the shrink, ` +
                `${fmtMiB(run.final_rss_kib)} MiB at the end`);
        for (const p of pts) {
            const shown = dots || p[0] <= 0;
            tip(sv('circle', { cx: xs.map(p[0]), cy: yOf(p[1]), r: shown ? 2.6 : 3, fill: c, 'fill-opacity': shown ? 1 : 0,
                               'data-frame': p[0], 'data-kib': p[1] }, g),
                `${run.name}: ${p[2]}: ${fmtMiB(p[1])} MiB`);
        }
    }
}

function rssTable(parent, runs) {
    const mimalloc = runs.find(r => r.base === 'mimalloc' && mibOf(r.final_rss_kib) > 0);
    const t = el('table', { class: 'summary rss' }, parent);
    const hr = el('tr', {}, el('thead', {}, t));
    const heads = ['malloc', 'grown (MiB)', 'shrunk (MiB)', 'final RSS (MiB)'];
    if (mimalloc) heads.push(`final vs ${mimalloc.name}`);
    heads.push('end_frame');
    for (const h of heads) el('th', {}, hr, h);
    const tb = el('tbody', {}, t);
    const finals = runs.map(r => mibOf(r.final_rss_kib)).filter(v => v !== null);
    const best = minOf(finals);
    for (const r of runs) {
        const tr = el('tr', {}, tb);
        const td0 = el('td', {}, tr);
        el('span', { class: 'swatch', style: `background:${colour(r.name)}` }, td0);
        td0.appendChild(document.createTextNode(r.name));
        el('td', {}, tr, fmtMiB(r.grown_rss_kib));
        el('td', {}, tr, fmtMiB(r.shrunk_rss_kib));
        el('td', { class: runs.length > 1 && mibOf(r.final_rss_kib) === best ? 'best' : '' }, tr, fmtMiB(r.final_rss_kib));
        if (mimalloc) {
            const v = mibOf(r.final_rss_kib);
            el('td', {}, tr, v === null ? '–' : (v / mibOf(mimalloc.final_rss_kib)).toFixed(2) + '×');
        }
        el('td', {}, tr, r.end_frame === true ? 'called' : 'absent');
    }
    el('p', { class: 'desc' }, parent,
       'grown: RSS after the growth; shrunk: after the free of 90 %; final: after the last frame' +
       (mimalloc ? `; final vs ${mimalloc.name}: the final RSS over ${mimalloc.name}'s (below 1 is less)` : '') +
       '. end_frame: whether strata_malloc_end_frame was found and called each frame. Bold green: the lowest final RSS.');
}

function render(data) {
    const root = document.getElementById('report');
    root.textContent = '';
    el('h1', {}, root, data.title || 'strata-lab report');
    const tm = data.timer;
    if (tm) el('p', { class: 'meta' }, root,
        `Timer: ${tm.counter}, ${(1 / tm.ns_per_tick).toFixed(2)} GHz, overhead ${fmtNs(tm.overhead_ns)} (subtracted), ` +
        `resolution ${fmtNs(tm.resolution_ns)}. Colours are fixed per allocator across all plots.`);
    const workloads = data.workloads || [];
    // A hand-written or cut-down document may leave a workload's allocators out: draw it empty.
    for (const w of workloads) if (!Array.isArray(w.allocators)) w.allocators = [];
    const bpd = data.histogram_bins_per_doubling || 8;
    // Assign colours in a stable order first, so an allocator has the same colour everywhere.
    for (const w of workloads) for (const a of w.allocators) colour(a.name);
    const toc = el('nav', { class: 'toc' }, root);
    workloads.forEach((w, i) => el('a', { href: `#wl-${i}` }, toc, w.name));
    if (data.bars && data.bars.length) el('a', { href: '#bars' }, toc, 'comparisons');
    if (data.layout) el('a', { href: '#layout' }, toc, 'AoS vs SoA');
    const rss = rssRuns(data.rss);
    if (rss.length) el('a', { href: '#rss' }, toc, 'RSS over time');
    workloads.forEach((w, i) => {
        const sec = el('section', { class: 'workload', id: `wl-${i}`, 'data-name': w.name }, root);
        el('h2', {}, sec, w.name);
        el('p', { class: 'desc' }, sec, `${w.description || ''} — ${fmtNum(w.memory_ops)} memory operations, peak ` +
           `${fmtBytes(w.peak_live_bytes)} live in ${fmtNum(w.peak_live_blocks)} blocks, ${w.threads || 1} thread(s).`);
        if (w.skipped && w.skipped.length) el('p', { class: 'skipped' }, sec, 'Skipped (cannot serve this workload): ' + w.skipped.join(', '));
        summaryTable(sec, w);
        const grid = el('div', { class: 'grid' }, sec);
        plotHistogram(grid, w, bpd);
        plotTail(grid, w);
        plotSeries(grid, w, 'footprint', `Footprint over time: ${w.name}`,
            'Bytes the allocator holds from its source (OS or upstream), sampled over the replay (x = memory ' +
            'operation number). The dashed line is what the workload actually has live; the gap between an ' +
            'allocator\'s line and the dashed line is its overhead (slack, headers, fragmentation, caching). ' +
            'Lower and closer to the dashed line is better.', true);
        plotSeries(grid, w, 'largest_free', `Largest free block over time: ${w.name}`,
            'The largest single block the allocator could hand out without asking its source for more, sampled ' +
            'over the replay. Read it with the footprint: a falling line while free bytes stay high means the ' +
            'free space is splintering (external fragmentation); a big request may then fail or grow the footprint.',
            false);
    });
    if (data.bars && data.bars.length) {
        const sec = el('section', { class: 'bars', id: 'bars' }, root);
        el('h2', {}, sec, 'Comparisons');
        const grid = el('div', { class: 'grid' }, sec);
        for (const b of data.bars) plotBars(grid, b);
    }
    if (data.layout) {
        const sec = el('section', { class: 'layout', id: 'layout' }, root);
        el('h2', {}, sec, 'Data layout: AoS vs SoA');
        plotLayout(el('div', { class: 'grid' }, sec), data.layout);
    }
    if (rss.length) {
        const sec = el('section', { class: 'rss', id: 'rss' }, root);
        el('h2', {}, sec, 'RSS over time (phase workload)');
        plotRss(el('div', { class: 'grid' }, sec), rss);
        rssTable(sec, rss);
    }
    document.body.setAttribute('data-rendered', String(document.querySelectorAll('figure.plot').length));
}

try {
    render(JSON.parse(document.getElementById('strata-data').textContent));
} catch (e) {
    const root = document.getElementById('report');
    el('p', { class: 'error' }, root, 'strata-lab report: cannot render: ' + e.message);
    throw e;
}
