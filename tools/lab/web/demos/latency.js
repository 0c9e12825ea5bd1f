import { el, facts, section } from '../draw.js';
import { bind } from './common.js';

export async function mount(root, ctx) {
    const p = section(root, 'latency', 'Latency tail: malloc vs arena',
        'Each allocation (16 B–1 KiB) is timed on its own with the CPU\'s cycle counter. The histogram\'s time axis is ' +
        'logarithmic: the arena\'s bump is a narrow spike; malloc spreads right, and its rare slow calls (the tail) ' +
        'are what a frame budget feels.');
    const fmt = (ns) => (ns >= 1000 ? (ns / 1000).toFixed(1) + ' µs' : ns.toFixed(1) + ' ns');
    let plot = null; // the uPlot drawn last: destroyed before the next one (it holds listeners)
    const { act, load } = bind(p, ctx, 'latency', (st) => {
        if (plot) { plot.destroy(); plot = null; }
        if (!st.runs) {
            p.facts.replaceChildren();
            p.view.replaceChildren(el('div', { class: 'noplots', text: 'Not run yet.' }));
            return;
        }
        const [m, a] = st.runs;
        facts(p.facts, [['samples', 'samples', st.samples], ['malloc_p50', 'malloc p50', fmt(m.p50)], ['malloc_p999', 'malloc p99.9', fmt(m.p999)],
            ['arena_p50', 'arena p50', fmt(a.p50)], ['arena_p999', 'arena p99.9', fmt(a.p999)]]);
        const table = el('table', { class: 'small', 'data-k': 'percentiles' }, el('tr', {}, ...['', 'p50', 'p99', 'p99.9', 'max', 'mean'].map((t) => el('th', { text: t }))));
        for (const r of st.runs)
            table.append(el('tr', { 'data-name': r.name }, el('td', { text: r.name }), ...['p50', 'p99', 'p999', 'max', 'mean'].map((k) => el('td', { text: fmt(r[k]) }))));
        const plotBox = el('div', { class: 'plot' });
        p.view.replaceChildren(plotBox, table);
        if (!ctx.uPlot) { plotBox.append(el('div', { class: 'noplots', text: 'plots unavailable (built without uPlot)' })); return; }
        // x: each bin's lower edge in ns (log axis); y: calls in that bin.
        const xs = st.edges_ns.slice(0, m.counts.length);
        const bars = ctx.uPlot.paths.bars ? ctx.uPlot.paths.bars({ size: [0.9, 40], align: 1 }) : undefined;
        plot = new ctx.uPlot({
            width: Math.min(1000, p.view.clientWidth || 900), height: 260,
            scales: { x: { time: false, distr: 3 }, y: { distr: 3 } },
            axes: [{ label: 'time per allocation (ns, log)' }, { label: 'calls (log)', size: 60 }],
            series: [{ label: 'ns ≥' }, { label: 'malloc', stroke: '#c62828', fill: 'rgba(198,40,40,.25)', paths: bars },
                { label: 'arena', stroke: '#1f6feb', fill: 'rgba(31,111,235,.25)', paths: bars }],
        }, [xs, m.counts.map((c) => c || null), a.counts.map((c) => c || null)], plotBox);
    });
    p.controls.append(el('button', { 'data-action': 'run', on: { click: () => act('run', { samples: 20000 }) } }, 'Measure 20,000 allocations each'));
    await load();
}
