import { el, facts, section, select } from '../draw.js';
import { bind } from './common.js';
import { PALETTE, axis, chart, decadeSplits, formatNs, maxOf, minOf, nines, ninesAxis, ninesLabel, noPlots, nsAxis } from '../plots.js';

const FLOOR = 0.5; // an empty histogram bin, drawn at the bottom of the log count axis (a 1-call bin stands above it)
const FPS = [['60 fps (16.7 ms)', 1000 / 60], ['30 fps (33.3 ms)', 1000 / 30], ['120 fps (8.3 ms)', 1000 / 120]];
const PER_FRAME = [100, 1000, 10000];
const COLOR = { malloc: PALETTE[0], mimalloc: PALETTE[1], jemalloc: PALETTE[2], tcmalloc: PALETTE[3], 'engine heap': PALETTE[4], tlsf: PALETTE[6], arena: PALETTE[5] };

export async function mount(root, ctx) {
    const p = section(root, 'latency', 'Latency tail: malloc, its peers and strata',
        'The same allocations (16 B–1 KiB, 256 live at a time, then freed untimed) timed one call at a time with the ' +
        'CPU\'s cycle counter in glibc malloc, the peers this build has (mimalloc, jemalloc, tcmalloc), strata\'s engine ' +
        'heap, TLSF and the arena. Top: how many calls took how long (log bins, log counts: a single slow call shows). ' +
        'Bottom: the latency at each percentile, the tail spread out (p90, p99, p99.9 evenly spaced), against a frame ' +
        'budget: the time one allocation may take if a frame makes that many.');
    let plots = []; // the uPlots drawn last: destroyed before the next ones (they hold listeners)
    let last = null; // the state drawn last: a budget change redraws it without a request
    const fps = select(FPS.map(([t]) => t), FPS[0][0], 'frame time');
    const perFrame = select(PER_FRAME, 1000, 'allocations per frame');
    const budgetNs = () => (FPS.find(([t]) => t === fps.value)[1] * 1e6) / Number(perFrame.value);

    const render = (st) => {
        for (const u of plots) u.destroy();
        plots = [];
        last = st;
        if (!st.runs) {
            p.facts.replaceChildren();
            p.view.replaceChildren(el('div', { class: 'noplots', text: 'Not run yet.' }));
            return;
        }
        const budget = budgetNs();
        const by = Object.fromEntries(st.runs.map((r) => [r.name, r]));
        const f = [['samples', 'samples', st.samples]];
        for (const [name, key] of [['malloc', 'malloc'], ['arena', 'arena']]) {
            if (by[name]) f.push([`${key}_p50`, `${name} p50`, formatNs(by[name].p50)], [`${key}_p999`, `${name} p99.9`, formatNs(by[name].p999)]);
        }
        f.push(['budget_ns', 'budget per allocation', formatNs(budget)]);
        facts(p.facts, f);

        const head = ['', 'p50', 'p99', 'p99.9', 'p99.99', 'max', 'mean', 'over budget after'];
        const table = el('table', { class: 'small', 'data-k': 'percentiles' }, el('tr', {}, ...head.map((t) => el('th', { text: t }))));
        for (const r of st.runs) {
            const c = crossing(r.cdf, budget);
            table.append(el('tr', { 'data-name': r.name },
                el('td', { style: 'text-align:left;white-space:nowrap' }, swatch(color(r.name)), r.name),
                ...['p50', 'p99', 'p999', 'p9999', 'max', 'mean'].map((k) => el('td', { style: 'white-space:nowrap', text: formatNs(r[k]) })),
                el('td', { 'data-k': 'crossing', style: 'white-space:nowrap', text: c })));
        }
        const notes = (st.skipped || []).map((s) => el('div', { class: 'legend', 'data-k': 'skipped', 'data-name': s.name, text: `${s.name}: not measured (${s.reason})` }));
        const histBox = el('div', { class: 'plot', 'data-k': 'histogram' });
        const cdfBox = el('div', { class: 'plot', 'data-k': 'cdf' });
        p.view.replaceChildren(histBox, cdfBox, el('div', { style: 'overflow-x:auto' }, table), ...notes);
        if (!ctx.uPlot) { histBox.append(noPlots()); return; }
        plots = [histogram(ctx.uPlot, histBox, st), percentiles(ctx.uPlot, cdfBox, st, budget)];
    };
    const { act, load } = bind(p, ctx, 'latency', render);
    const rebudget = () => { if (last) render(last); };
    fps.addEventListener('change', rebudget);
    perFrame.addEventListener('change', rebudget);
    p.controls.append(el('button', { 'data-action': 'run', on: { click: () => act('run', { samples: 20000 }) } }, 'Measure 20,000 allocations each'),
        el('label', {}, 'budget: ', fps), el('label', {}, ' / ', perFrame, ' allocations per frame'));
    await load();
}

function color(name) { return COLOR[name] || PALETTE[7]; }
function swatch(c) { return el('i', { style: `display:inline-block;width:10px;height:10px;margin-right:4px;background:${c}` }); }

/// crossing(cdf, budget): the percentile after which calls take longer than `budget` ns.
function crossing(cdf, budget) {
    const i = cdf.findIndex(([, ns]) => ns > budget);
    if (i < 0) return 'never';
    if (i === 0) return 'every call';
    return ninesLabel(nines(cdf[i - 1][0]));
}

/// The histogram: one outline per allocator over the bins that hold any call, on log counts.
function histogram(uPlot, box, st) {
    const nb = st.runs[0].counts.length;
    let lo = nb, hi = -1;
    for (const r of st.runs) r.counts.forEach((c, i) => { if (c) { lo = Math.min(lo, i); hi = Math.max(hi, i); } });
    lo = Math.max(0, lo - 1);
    hi = Math.min(nb - 1, hi + 1);
    const xs = st.edges_ns.slice(lo, hi + 2); // each bin's lower edge, then the last bin's upper edge
    const ys = st.runs.map((r) => [...r.counts.slice(lo, hi + 1).map((c) => c || FLOOR), FLOOR]);
    const top = maxOf(st.runs.map((r) => maxOf(r.counts)));
    const steps = uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
    return chart(uPlot, box, {
        padding: [8, 28, 0, 0], // room for the last x label
        scales: { x: { time: false, distr: 3, range: [xs[0], xs[xs.length - 1]] }, y: { distr: 3, range: [FLOOR, 10 ** Math.ceil(Math.log10(top * 1.5))] } },
        axes: [nsAxis('time per allocation (log bins)'),
            axis('calls (log)', 3, (lo, hi, px) => decadeSplits(Math.max(1, lo), hi, px, 22).filter((v) => Number.isInteger(Math.log10(v))), (v) => v.toLocaleString('en-US'))],
        series: [{ label: 'bin from', value: (u, v) => (v == null ? '–' : formatNs(v)) },
            ...st.runs.map((r) => ({ label: r.name, stroke: color(r.name), fill: color(r.name) + '1f', width: 1.5, paths: steps, points: { show: false },
                value: (u, v) => (v == null ? '–' : String(v <= FLOOR ? 0 : v)) }))],
    }, [xs, ...ys], { height: 240 });
}

/// The percentile curve: x the percentile on a nines scale, y the latency (log), and the budget.
function percentiles(uPlot, box, st, budget) {
    const pts = st.runs[0].cdf.slice(0, -1); // the last point (p100) is the maximum, already the point before
    const xs = pts.map(([pc]) => nines(pc));
    const ys = st.runs.map((r) => r.cdf.slice(0, -1).map(([, ns]) => Math.max(1, ns)));
    const all = ys.flat();
    const lo = 10 ** Math.floor(Math.log10(minOf(all)));
    const hi = 10 ** Math.ceil(Math.log10(maxOf(all, budget) * 1.2));
    return chart(uPlot, box, {
        padding: [8, 28, 0, 0],
        scales: { x: { time: false, range: [0, xs[xs.length - 1]] }, y: { distr: 3, range: [lo, hi] } },
        axes: [ninesAxis('percentile (the tail spread out)'), nsAxis('latency', 3)],
        series: [{ label: 'percentile', value: (u, v) => (v == null ? '–' : ninesLabel(v)) },
            ...st.runs.map((r) => ({ label: r.name, stroke: color(r.name), width: 2, value: (u, v) => (v == null ? '–' : formatNs(v)) })),
            { label: `budget ${formatNs(budget)}`, stroke: '#111', width: 1.5, dash: [6, 4], points: { show: false }, value: () => formatNs(budget) }],
    }, [xs, ...ys, xs.map(() => budget)], { height: 280 });
}
