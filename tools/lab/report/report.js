// strata-lab report: draws the race JSON embedded in #strata-data as uPlot charts and tables. uPlot
// (its IIFE build, the global `uPlot`) is inlined ahead of this module; without it the page shows the
// tables and a line saying the charts need uPlot. Hand-drawn SVG is kept for one map only: the AoS/SoA
// cache-line picture. See docs/lab-report.md for the schema and how to read each chart.
// The chart helpers (chart, axis, bytesAxis, nsAxis, ninesAxis, the tick functions, formatNs,
// formatBytes, colours, align, decimate, maxOf, minOf) are the live lab's tools/lab/web/plots.js,
// which embed_assets.cmake puts ahead of this file in the same module script.
// The SVG namespace, spelled so that the page contains no URL at all (the tests look for none).
const SVG = ['http:', '', 'www.w3.org', '2000', 'svg'].join('/');
const HAS_UPLOT = typeof uPlot === 'function';
// Every chart drawn, for the tests: { fig, u (the uPlot), kind, title }.
const charts = globalThis.strataCharts = [];

// Each allocator's colour, the same on every chart and table.
const colour = colours();
const pxRatio = () => globalThis.devicePixelRatio || 1;

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

function fmtPct(x) { return x === null || x === undefined ? '–' : (100 * x).toFixed(1) + ' %'; }
function fmtNum(x) {
    if (x === null || x === undefined || !isFinite(x)) return '–';
    if (Math.abs(x) >= 1e6) return +(x / 1e6).toPrecision(3) + 'M';
    if (Math.abs(x) >= 1e3) return +(x / 1e3).toPrecision(3) + 'k';
    return Number.isInteger(x) ? String(x) : x.toPrecision(3);
}
function fmtUnit(x, unit) {
    if (x === null || x === undefined) return '–';
    if (unit === 'ns') return formatNs(x);
    if (unit === 'bytes' || unit === 'B') return formatBytes(x);
    if (unit === '%') return +x.toPrecision(3) + ' %';
    return fmtNum(x) + (unit ? ' ' + unit : '');
}
const fmtShare = v => (v >= 0.01 ? (100 * v).toFixed(0) : String(+(100 * v).toPrecision(1))) + ' %';

const line = (name, extra = {}) => Object.assign({ label: name, stroke: colour(name), width: 1.7, spanGaps: true,
                                                   points: { show: false } }, extra);

// One chart: figure.plot with its title, the uPlot (and its legend), following the figure's width,
// and the caption.
function figure(parent, kind, title, caption, opts, data, height = 300) {
    const fig = el('figure', { class: 'plot', 'data-kind': kind }, parent);
    el('h3', {}, fig, title);
    const box = el('div', { class: 'chart' }, fig);
    el('figcaption', {}, fig, caption);
    const u = chart(uPlot, box, Object.assign({ cursor: { drag: { x: false, y: false } } }, opts), data,
                    { height, minWidth: 200, fallbackWidth: 560 });
    charts.push({ fig, u, kind, title });
    return u;
}

// A chart that has nothing to draw: its title and a note saying why, instead of empty axes.
function notMeasured(parent, title, note) {
    const fig = el('figure', { class: 'plot not-measured' }, parent);
    el('h3', {}, fig, title);
    el('p', { class: 'note' }, fig, note);
    return fig;
}
const NO_LATENCY = 'Not measured: this run timed no single calls (--latency-passes 0), so there is no latency ' +
    'distribution to draw. ns/op in the table is still measured.';

// ---- latency histogram (log x, log y) ---------------------------------------------------------------
function plotHistogram(parent, wl, bpd) {
    const title = `Latency histogram: ${wl.name}`;
    const hist = a => (a.histogram_filtered && a.histogram_filtered.length ? a.histogram_filtered : a.histogram_raw);
    const allocs = wl.allocators.filter(a => (hist(a) || []).some(c => c > 0));
    if (!allocs.length) return notMeasured(parent, title, NO_LATENCY);
    const edge = i => 2 ** (i / bpd);
    let hiBin = 1, maxFrac = 0, minFrac = 1;
    const totals = allocs.map(a => hist(a).reduce((s, c) => s + c, 0) || 1);
    const fracs = allocs.map((a, k) => hist(a).map((c, i) => {
        if (c > 0) hiBin = Math.max(hiBin, i + 1);
        const f = c / totals[k];
        if (f > 0) { maxFrac = Math.max(maxFrac, f); minFrac = Math.min(minFrac, f); }
        return f;
    }));
    // y: 100 % (or the decade above the tallest bin) down to a power of 10 at least 2x below the
    // smallest non-zero share, so every non-empty bin stands visibly above the axis.
    let floorExp = Math.floor(Math.log10(minFrac));
    if (minFrac < 2 * 10 ** floorExp) floorExp -= 1;
    const floor = 10 ** floorExp;
    const top = 10 ** Math.ceil(Math.log10(Math.min(1, Math.max(maxFrac, floor * 10))) - 1e-9);
    const xHi = 10 ** Math.ceil(Math.log10(edge(hiBin)) - 1e-9);
    // x: the bins' left edges and the last bin's right edge; an empty bin sits on the axis (floor).
    const xs = Array.from({ length: hiBin + 1 }, (_, i) => edge(i));
    const ys = fracs.map(f => xs.map((_, i) => f[Math.min(i, hiBin - 1)] > 0 ? f[Math.min(i, hiBin - 1)] : floor));
    const steps = uPlot.paths.stepped({ align: 1 });
    figure(parent, 'histogram', title,
        'Share of operations (y, log scale) per latency bin (x, log scale; ' + bpd + ' bins per doubling), from the ' +
        'filtered pass (per-operation minimum over the latency passes; raw when there is one pass). Read it as: ' +
        'the tallest step is the typical cost; anything far to the right is the tail (page faults, refills, lock ' +
        'waits); the log y axis keeps a bin of a single operation visible. Latencies are net of the timer ' +
        'overhead, so the leftmost bin collects operations at or below the timer resolution. Hover for the bin ' +
        'and each allocator\'s share of it.', {
            scales: { x: { time: false, distr: 3, log: 10, range: () => [1, xHi] },
                      y: { distr: 3, log: 10, range: () => [floor, top] } },
            axes: [nsAxis('latency per operation (log)', 2),
                   axis('share of operations (log)', 3, (lo, hi, px) => decadeSplits(lo, hi, px, 22), fmtShare)],
            series: [{ label: 'bin', value: (u, v, s, i) => (i === null || i >= hiBin ? '–' : `${formatNs(edge(i))} – ${formatNs(edge(i + 1))}`) },
                ...allocs.map((a, k) => line(a.name, {
                    paths: steps, width: 1.4, fill: colour(a.name) + '1f', fillTo: () => floor,
                    value: (u, v, s, i) => (i === null || i >= hiBin ? '–' : fracs[k][i] > 0
                        ? `${(100 * fracs[k][i]).toPrecision(3)} % (${fmtNum(hist(a)[i])} of ${fmtNum(totals[k])})` : '0'),
                }))],
        }, [xs, ...ys]);
}

// ---- tail CDF on a "nines" axis -------------------------------------------------------------------
function plotTail(parent, wl) {
    const title = `Tail latency: ${wl.name}`;
    const tail = a => (a.tail_filtered && a.tail_filtered.length ? a.tail_filtered : a.tail_raw);
    const allocs = wl.allocators.filter(a => (tail(a) || []).length);
    if (!allocs.length) {
        const timed = wl.allocators.some(a => [a.histogram_filtered, a.histogram_raw].some(h => (h || []).some(c => c > 0)));
        return notMeasured(parent, title, timed ? 'Too few timed operations to draw a tail.' : NO_LATENCY);
    }
    let maxN = 1, lo = Infinity, hi = 1;
    for (const a of allocs) for (const [p, ns] of tail(a)) {
        maxN = Math.max(maxN, Math.min(nines(p), 7));
        if (ns > 0) { lo = Math.min(lo, ns); hi = Math.max(hi, ns); }
    }
    maxN = Math.ceil(maxN);
    const yLo = 10 ** Math.floor(Math.log10(isFinite(lo) ? lo : 1)), yHi = Math.max(yLo * 10, 10 ** Math.ceil(Math.log10(hi) - 1e-9));
    const data = align(allocs.map(a => {
        const pts = tail(a).filter(([p]) => nines(p) <= maxN + 1e-9);
        return [pts.map(([p]) => nines(p)), pts.map(([, ns]) => (ns > 0 ? ns : null))];
    }));
    figure(parent, 'tail', title,
        'Latency (y, log) reached by a given fraction of operations (x, "nines" axis: p90, p99, p99.9, … are ' +
        'equally spaced, so the rare tail gets as much room as the median). Filtered pass. Read it as: a line ' +
        'lower is faster at that percentile; a line that rises steeply on the right has a long tail (one op in ' +
        '10^k pays that much). Hover for the exact values.', {
            scales: { x: { time: false, range: () => [0, maxN] }, y: { distr: 3, log: 10, range: () => [yLo, yHi] } },
            axes: [ninesAxis('percentile (nines axis)', 2), nsAxis('latency (log)', 3)],
            series: [{ label: 'percentile', value: (u, v) => (v === null ? '–' : 'p' + +(100 * (1 - 10 ** -v)).toPrecision(6)) },
                ...allocs.map(a => line(a.name, { width: 1.8, points: { show: true, size: 5 }, value: (u, v) => formatNs(v) }))],
        }, data);
}

// ---- a series over the replay (footprint, largest free block) -------------------------------------
function plotSeries(parent, wl, key, title, caption, withLive) {
    const allocs = wl.allocators.filter(a => a.series && Array.isArray(a.series.op) && Array.isArray(a.series[key]) && a.series[key].length);
    if (!allocs.length) return false;
    const live = withLive && Array.isArray(allocs[0].series.live_bytes) ? allocs[0].series.live_bytes : null;
    let maxOp = 1, maxY = 1, minY = Infinity;
    for (const a of allocs) {
        maxOp = maxOf(a.series.op, maxOp);
        maxY = maxOf(a.series[key], maxY);
        minY = minOf(a.series[key].filter(v => v !== null && v > 0), minY);
    }
    // Allocators that differ by more than 16x share the chart on a log2 axis (0 has no place on it),
    // reaching down to the live bytes' smallest non-zero value too.
    const logY = isFinite(minY) && maxY / minY > 16;
    if (live) maxY = maxOf(live, maxY);
    if (live && logY) minY = minOf(live.filter(v => v !== null && v > 0), minY);
    const yLo = logY ? 2 ** Math.floor(Math.log2(minY / 2)) : 0, yHi = logY ? 2 ** Math.ceil(Math.log2(maxY)) : maxY * 1.05;
    const pos = ys => (logY ? ys.map(v => (v !== null && v > 0 ? v : null)) : ys);
    const tables = allocs.map(a => decimate(a.series.op, pos(a.series[key])));
    if (live) tables.push(decimate(allocs[0].series.op, pos(live)));
    const value = (u, v) => formatBytes(v);
    figure(parent, key, title,
        caption + (logY ? ' The y axis is logarithmic here: the allocators differ by more than 16×.' : ''), {
            scales: { x: { time: false, range: () => [0, maxOp] },
                      y: logY ? { distr: 3, log: 2, range: () => [yLo, yHi] } : { range: () => [0, yHi] } },
            axes: [axis('memory operation #', 2, (lo, hi, px) => linTicks(0, maxOp, px, 64), fmtNum),
                   bytesAxis(logY ? 'bytes (log)' : 'bytes', 3, logY)],
            series: [{ label: 'op', value: (u, v) => fmtNum(v) }, ...allocs.map(a => line(a.name, { value })),
                     ...(live ? [{ label: 'live bytes (requested)', stroke: '#222', width: 1.2, dash: [4, 3], spanGaps: true, value }] : [])],
        }, align(tables));
    return true;
}

// ---- bars (showdown, versus malloc): horizontal grouped bars ---------------------------------------
function plotBars(parent, b) {
    const groups = b.groups || [];
    const names = [];
    for (const g of groups) for (const k of Object.keys(g.values || {})) if (!names.includes(k)) names.push(k);
    // "log_scale": values spanning decades on a log axis; a value <= 0 has no place on it and is left out.
    const logX = b.log_scale === true, unit = b.unit || '';
    const drawable = v => typeof v === 'number' && isFinite(v) && (!logX || v > 0);
    let maxV = 0, minV = Infinity;
    for (const g of groups) for (const v of Object.values(g.values || {})) if (drawable(v)) {
        maxV = Math.max(maxV, v);
        if (v > 0) minV = Math.min(minV, v);
    }
    const log = logX && isFinite(minV);
    // Log: from the decade of half the smallest value (the shortest bar is at least 0.3 decade long)
    // to one that leaves room for the largest bar's label.
    const lo = log ? 10 ** Math.floor(Math.log10(minV / 2)) : 0;
    const hi = log ? 10 ** Math.ceil(Math.log10(maxV * 3)) : maxV * 1.12 || 1;
    // One slot per bar, a blank slot between groups; the category axis labels each group's middle.
    const S = Math.max(1, names.length), n = Math.max(1, groups.length * (S + 1) - 1);
    const slots = Array.from({ length: n }, (_, i) => i);
    const cols = names.map((s, si) => slots.map(i => {
        const v = i % (S + 1) === si && groups[Math.floor(i / (S + 1))] ? (groups[Math.floor(i / (S + 1))].values || {})[s] : null;
        return drawable(v) ? v : null;
    }));
    const rowH = Math.max(8, Math.min(18, 200 / S));
    const how = b.lower_is_better === false ? 'Longer bars are better.' : 'Shorter bars are better.';
    const caption = b.caption ? b.caption + (/[.!?]$/.test(b.caption) ? ' ' : '. ') : '';
    const logNote = log ? ' The value axis is logarithmic (1, 2, 5 × 10^k) and every bar starts at its left end, so ' +
        'read the values, not the lengths: a bar twice as long is not twice the value. Values of 0 or less ' +
        'cannot be drawn on it and are left out.' : '';
    const tickFmt = v => (unit === 'ns' || unit === 'bytes' || unit === 'B' ? fmtUnit(v, unit) : String(+v.toPrecision(3)) + (unit ? ' ' + unit : ''));
    const cut = s => (s.length > 24 ? s.slice(0, 23) + '…' : s);
    figure(parent, 'bars', b.title || 'bars', caption + how + ' Values are labelled at the bar end' +
        (unit ? ` (${unit})` : '') + '; hover a bar for the exact value.' + logNote, {
        scales: { x: { time: false, ori: 1, dir: -1, range: () => [-0.6, n - 0.4] },
                  y: Object.assign({ ori: 0, dir: 1, range: () => [lo, hi] }, log ? { distr: 3, log: 10 } : {}) },
        axes: [axis('', 3, () => groups.map((g, gi) => gi * (S + 1) + (S - 1) / 2), v => cut(String((groups[Math.round((v - (S - 1) / 2) / (S + 1))] || {}).label || '')),
                    { grid: { show: false }, ticks: { show: false }, labelSize: 0, label: null }),
               axis(unit ? `value (${unit}${log ? ', log' : ''})` : log ? 'value (log)' : 'value', 2,
                    (a, c, px) => (log ? decadeSplits(lo, hi, px, 64) : linTicks(0, hi, px, 72)), tickFmt)],
        series: [{ label: 'bar', value: (u, v, s, i) => (i === null ? '–' : cut(String((groups[Math.floor(i / (S + 1))] || {}).label || ''))) },
                 ...names.map(s => ({ label: s, stroke: colour(s), fill: colour(s), width: 0, points: { show: false },
                                      paths: uPlot.paths.bars({ size: [0.86, 40] }), fillTo: () => lo,
                                      value: (u, v) => fmtUnit(v, unit) }))],
        hooks: { draw: [u => {
            const px = u.bbox.height / pxRatio() / (n + 0.2);
            if (px < 10) return;
            const ctx = u.ctx;
            ctx.save();
            ctx.font = `${Math.round(10 * pxRatio())}px system-ui, "DejaVu Sans", sans-serif`;
            ctx.fillStyle = '#1d232b';
            ctx.textAlign = 'left';
            ctx.textBaseline = 'middle';
            u.series.forEach((s, si) => {
                if (si === 0 || !s.show) return;
                u.data[si].forEach((v, i) => {
                    if (v !== null) ctx.fillText(fmtUnit(v, unit), u.valToPos(v, 'y', true) + 4 * pxRatio(), u.valToPos(i, 'x', true));
                });
            });
            ctx.restore();
        }] },
    }, [slots, ...cols], Math.max(160, n * rowH + 50));
}

// ---- AoS vs SoA layout picture (a cache-line map: hand-drawn SVG) ---------------------------------
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
    const n = L.entities || 16, m = layoutLines(L), W = 560, left = 150, right = 124, rowH = 40;
    const fig = el('figure', { class: 'plot map', 'data-kind': 'layout' }, parent);
    el('h3', {}, fig, L.title || 'AoS vs SoA: which cache lines a loop loads');
    const lg = el('div', { class: 'legend' }, fig);
    for (const [name, c] of [['cache line loaded', '#9ecae1'], ['bytes used', '#08519c'], ['not loaded', '#f0f0f0']]) {
        const s = el('span', {}, lg);
        el('span', { class: 'swatch', style: `background:${c}` }, s);
        s.appendChild(document.createTextNode(name));
    }
    const bw = Math.min(28, (W - left - right) / m.total), height = 12 + m.rows.length * rowH + 10;
    const svg = sv('svg', { viewBox: `0 0 ${W} ${height}`, role: 'img', 'aria-label': 'AoS vs SoA cache lines' }, fig);
    el('figcaption', {}, fig, (L.caption ? L.caption + ' ' : '') + `Each box is one ${m.line}-byte cache line of the ${n} entities' ` +
        `data (${L.entity_bytes} B per entity, the touched field is ${L.field_bytes} B at offset ${L.field_offset || 0}). ` +
        'Shaded boxes are the lines the loop loads; the dark part is the bytes it actually uses. Read it as: the ' +
        'same work, fewer shaded boxes = less memory traffic. "loaded / used" on the right is the bytes moved ' +
        'from memory per byte the loop needs (1.0 is perfect).');
    m.rows.forEach((r, ri) => {
        const y = 12 + ri * rowH, g = sv('g', { class: 'series', 'data-name': r.label }, svg);
        sv('text', { x: left - 8, y: y + 17, 'text-anchor': 'end' }, g, r.label);
        for (let l = 0; l < m.total; ++l) {
            const loaded = r.lines.has(l);
            sv('title', {}, sv('rect', { x: left + l * bw, y: y + 4, width: bw - 2, height: 22, rx: 2, fill: loaded ? '#9ecae1' : '#f0f0f0',
                                         stroke: '#c6cdd4', 'stroke-width': 0.6 }, g),
               `${r.label}: line ${l} (bytes ${l * m.line}-${(l + 1) * m.line - 1}) ${loaded ? 'loaded' : 'not loaded'}`);
            if (loaded) for (const [a, b] of r.used) {
                const s = Math.max(a, l * m.line), e = Math.min(b, (l + 1) * m.line);
                if (e > s) sv('rect', { x: left + l * bw + (s - l * m.line) / m.line * (bw - 2), y: y + 4,
                                        width: Math.max(0.8, (e - s) / m.line * (bw - 2)), height: 22, fill: '#08519c' }, g);
            }
        }
        const loadedB = r.lines.size * m.line;
        sv('text', { x: W - right + 6, y: y + 12 }, g, `${formatBytes(loadedB)} / ${formatBytes(r.usedBytes)}`);
        sv('text', { x: W - right + 6, y: y + 25 }, g, `${(loadedB / r.usedBytes).toFixed(1)}× loaded/used`);
    });
}

// ---- tables ------------------------------------------------------------------------------------------
function table(parent, cls, heads) {
    const t = el('table', { class: cls }, el('div', { class: 'table-wrap' }, parent));
    const hr = el('tr', {}, el('thead', {}, t));
    for (const h of heads) el('th', {}, hr, h);
    return el('tbody', {}, t);
}
function nameCell(tr, name, title) {
    const td = el('td', {}, tr);
    el('span', { class: 'swatch', style: `background:${colour(name)}` }, td);
    td.appendChild(document.createTextNode(name));
    if (title) td.title = title;
}
function summaryTable(parent, wl) {
    const tb = table(parent, 'summary', ['allocator', 'ns/op', 'p99 (f)', 'p99.99 (f)', 'peak footprint', 'internal waste', 'worst frag', 'failed']);
    const lat = a => a.latency_filtered || a.latency_raw || {};
    const cols = [a => a.ns_per_op, a => lat(a).p99, a => lat(a)['p99.99'], a => a.peak_footprint, a => a.internal_waste,
                  a => a.worst_fragmentation];
    const fm = [fmtNum, formatNs, formatNs, formatBytes, fmtPct, fmtPct];
    const best = cols.map(c => minOf(wl.allocators.map(c).filter(v => v !== null && v !== undefined && isFinite(v))));
    for (const a of wl.allocators) {
        const tr = el('tr', {}, tb);
        nameCell(tr, a.name, a.description);
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

// ---- RSS over time (strata-mt --workload phase, from report --rss) ----------------------------------
// The runs: the phase lines with a frame series, each named by its malloc label; a label seen again
// (several rounds in one file) is named "label #2", "label #3", ...
function rssRuns(lines) {
    const seen = new Map();
    return (lines || []).filter(r => r && Array.isArray(r.rss_frames_kib)).map(r => {
        const base = String(r.malloc || '?'), n = (seen.get(base) || 0) + 1;
        seen.set(base, n);
        return Object.assign({}, r, { name: n > 1 ? `${base} #${n}` : base, base });
    });
}
const mibOf = kib => (typeof kib === 'number' && isFinite(kib) ? kib / 1024 : null);
const fmtMiB = kib => (mibOf(kib) === null ? '–' : mibOf(kib).toFixed(1));

function plotRss(parent, runs) {
    const frames = maxOf(runs.map(r => r.rss_frames_kib.length), 1);
    let maxKib = 1;
    for (const r of runs) maxKib = maxOf([r.grown_rss_kib, r.shrunk_rss_kib, ...r.rss_frames_kib].filter(v => mibOf(v) !== null), maxKib);
    const sizes = [...new Set(runs.map(r => r.phase_mib).filter(v => v))];
    const callers = runs.filter(r => r.end_frame === true).map(r => r.name);
    // x: "grown" at -G, in a slot of its own left of "shrunk" (frame 0), then frames 1..N.
    const G = Math.max(1, Math.round(frames / 6)), yHi = maxKib / 1024 * 1.05;
    const xs = [-G, ...Array.from({ length: frames + 1 }, (_, i) => i)];
    const cols = runs.map(r => [mibOf(r.grown_rss_kib), mibOf(r.shrunk_rss_kib),
                                ...Array.from({ length: frames }, (_, i) => mibOf(r.rss_frames_kib[i]))]);
    // The solid line starts at "shrunk"; grown -> shrunk is a dashed step (drawn in the draw hook).
    const lin = uPlot.paths.linear();
    const dots = frames <= 20;
    figure(parent, 'rss', 'RSS per frame: strata-mt phase',
        'strata-mt --workload phase: one thread grows a live set of mixed blocks to ' +
        (sizes.length ? sizes.map(v => fmtNum(v)).join(' / ') + ' MiB' : '--phase-mib MiB') +
        ', frees a random 90 % of it, then idles frame after frame: a 20 ms sleep, 1,000 free + malloc pairs, then ' +
        'a read of its RSS (/proc/self/statm). x: "grown" is the RSS after the growth and "shrunk" (frame 0) after ' +
        'the free (the dashed step); then one point per frame. y: resident MiB. A line that falls over the frames ' +
        'is an allocator giving idle memory back to the OS; lower is better. ' + (callers.length
            ? `Where end_frame is true (${callers.join(', ')}; "end_frame" in the legend) the process had ` +
              'strata_malloc_end_frame (libstrata_malloc.so) and called it at the end of every frame with a 500 µs ' +
              'budget; the others had nothing to call. '
            : 'No run here called strata_malloc_end_frame (end_frame false: the allocator has none). ') +
        'Hover for the values.', {
            scales: { x: { time: false, range: () => [-1.6 * G, frames] }, y: { range: () => [0, yHi] } },
            axes: [axis('frame (each: a 20 ms sleep, 1,000 free + malloc pairs)', 2, (lo, hi, px) => {
                const perFrame = px / (frames + 1.6 * G);
                return [-G, 0, ...linTicks(0, frames, px - 1.6 * G * perFrame, 56).filter(v => v * perFrame >= 48 && Number.isInteger(v))];
            }, v => (v < 0 ? 'grown' : v === 0 ? 'shrunk' : String(v))),
                   axis('RSS (MiB)', 3, (lo, hi, px) => linTicks(0, yHi, px, 30), v => String(+v.toPrecision(6)))],
            series: [{ label: 'frame', value: (u, v) => (v === null ? '–' : v < 0 ? 'grown' : v === 0 ? 'shrunk (frame 0)' : `frame ${v}`) },
                ...runs.map(r => line(r.name, {
                    label: r.name + (r.end_frame === true ? ' (end_frame)' : ''), width: 1.8, spanGaps: false,
                    paths: (u, si, i0, i1) => lin(u, si, Math.max(i0, 1), i1),
                    points: { show: dots, size: 5, filter: dots ? null : () => [0, 1] },
                    value: (u, v) => (v === null ? '–' : v.toFixed(1) + ' MiB'),
                }))],
            hooks: { draw: [u => {
                const ctx = u.ctx;
                ctx.save();
                ctx.setLineDash([4 * pxRatio(), 3 * pxRatio()]);
                ctx.lineWidth = 1.4 * pxRatio();
                u.series.forEach((s, si) => {
                    const d = u.data[si];
                    if (si === 0 || !s.show || d[0] === null || d[1] === null) return;
                    ctx.strokeStyle = s._stroke || colour(runs[si - 1].name);
                    ctx.beginPath();
                    ctx.moveTo(u.valToPos(xs[0], 'x', true), u.valToPos(d[0], 'y', true));
                    ctx.lineTo(u.valToPos(0, 'x', true), u.valToPos(d[1], 'y', true));
                    ctx.stroke();
                });
                ctx.restore();
            }] },
        }, [xs, ...cols], 380);
}

function rssTable(parent, runs) {
    const mimalloc = runs.find(r => r.base === 'mimalloc' && mibOf(r.final_rss_kib) > 0);
    const tb = table(parent, 'summary rss', ['malloc', 'grown (MiB)', 'shrunk (MiB)', 'final RSS (MiB)',
                                             ...(mimalloc ? [`final vs ${mimalloc.name}`] : []), 'end_frame']);
    const best = minOf(runs.map(r => mibOf(r.final_rss_kib)).filter(v => v !== null));
    for (const r of runs) {
        const tr = el('tr', {}, tb);
        nameCell(tr, r.name);
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
        `Timer: ${tm.counter}, ${(1 / tm.ns_per_tick).toFixed(2)} GHz, overhead ${formatNs(tm.overhead_ns)} (subtracted), ` +
        `resolution ${formatNs(tm.resolution_ns)}. Colours are fixed per allocator across all charts.`);
    if (!HAS_UPLOT) el('p', { class: 'nouplot' }, root, 'The charts need uPlot, which this strata-lab was built ' +
        'without (npm ci in tools/lab/web at configure time provides it); the tables below are complete.');
    const workloads = data.workloads || [];
    // A hand-written or cut-down document may leave a workload's allocators out: draw it empty.
    for (const w of workloads) if (!Array.isArray(w.allocators)) w.allocators = [];
    const bpd = data.histogram_bins_per_doubling || 8;
    // Assign colours in a stable order first, so an allocator has the same colour everywhere.
    for (const w of workloads) for (const a of w.allocators) colour(a.name);
    const toc = el('nav', { class: 'toc' }, root);
    workloads.forEach((w, i) => el('a', { href: `#wl-${i}` }, toc, w.name));
    const bars = HAS_UPLOT ? data.bars || [] : [];
    if (bars.length) el('a', { href: '#bars' }, toc, 'comparisons');
    if (data.layout) el('a', { href: '#layout' }, toc, 'AoS vs SoA');
    const rss = rssRuns(data.rss);
    if (rss.length) el('a', { href: '#rss' }, toc, 'RSS over time');
    workloads.forEach((w, i) => {
        const sec = el('section', { class: 'workload', id: `wl-${i}`, 'data-name': w.name }, root);
        el('h2', {}, sec, w.name);
        el('p', { class: 'desc' }, sec, `${w.description || ''} — ${fmtNum(w.memory_ops)} memory operations, peak ` +
           `${formatBytes(w.peak_live_bytes)} live in ${fmtNum(w.peak_live_blocks)} blocks, ${w.threads || 1} thread(s).`);
        if (w.skipped && w.skipped.length) el('p', { class: 'skipped' }, sec, 'Skipped (cannot serve this workload): ' + w.skipped.join(', '));
        summaryTable(sec, w);
        if (!HAS_UPLOT) return;
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
    if (bars.length) {
        const sec = el('section', { class: 'bars', id: 'bars' }, root);
        el('h2', {}, sec, 'Comparisons');
        const grid = el('div', { class: 'grid' }, sec);
        for (const b of bars) plotBars(grid, b);
    }
    if (data.layout) {
        const sec = el('section', { class: 'layout', id: 'layout' }, root);
        el('h2', {}, sec, 'Data layout: AoS vs SoA');
        plotLayout(el('div', { class: 'grid' }, sec), data.layout);
    }
    if (rss.length) {
        const sec = el('section', { class: 'rss', id: 'rss' }, root);
        el('h2', {}, sec, 'RSS over time (phase workload)');
        if (HAS_UPLOT) plotRss(el('div', { class: 'grid wide' }, sec), rss);
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
