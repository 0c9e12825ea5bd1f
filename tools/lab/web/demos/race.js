import { bytes, el, facts, section } from '../draw.js';
import { bind } from './common.js';

const COLORS = ['#d9822b', '#1f6feb', '#2e7d32', '#c62828'];

export async function mount(root, ctx) {
    const p = section(root, 'race', 'Fragmentation race',
        'Pool, buddy, TLSF and first-fit replay the same bimodal workload (90% of blocks die young, 10% live long; ' +
        '16 B–1 KiB) in 256 KiB each. The plot is each allocator\'s largest free block over time: where it falls, ' +
        'free memory is shattered. Press Run, then watch it replay.');
    let timer = null;
    let plot = null; // the uPlot drawn last: destroyed before the next one (it holds listeners)
    const { act, load } = bind(p, ctx, 'race', (st) => {
        if (timer) { clearInterval(timer); timer = null; }
        if (plot) { plot.destroy(); plot = null; }
        if (!st.runs) {
            p.facts.replaceChildren();
            p.view.replaceChildren(el('div', { class: 'noplots', text: 'Not run yet.' }));
            return;
        }
        facts(p.facts, [['operations', 'operations', st.operations], ['peak_live_bytes', 'peak live', bytes(st.peak_live_bytes)],
            ['heap_bytes', 'heap each', bytes(st.heap_bytes)],
            ...st.runs.map((r, i) => [`failures_${i}`, `${r.name} failures`, r.failures])]);
        const n = st.runs[0].largest_free.length;
        const xs = Array.from({ length: n }, (_, i) => (i + 1) * st.every);
        const table = el('table', { class: 'small', 'data-k': 'final' }, el('tr', {}, el('th', { text: 'allocator' }),
            el('th', { text: 'final largest free' }), el('th', { text: 'lowest' }), el('th', { text: 'failed allocations' })));
        for (const r of st.runs) {
            table.append(el('tr', { 'data-name': r.name }, el('td', { text: r.name, style: 'text-align:left' }),
                el('td', { text: bytes(r.largest_free[n - 1] ?? 0) }), el('td', { text: bytes(Math.min(...r.largest_free)) }),
                el('td', { text: String(r.failures) })));
        }
        const plotBox = el('div', { class: 'plot' });
        p.view.replaceChildren(plotBox, table);
        if (!ctx.uPlot) { plotBox.append(el('div', { class: 'noplots', text: 'plots unavailable (built without uPlot)' })); return; }
        const data = [xs, ...st.runs.map((r) => r.largest_free)];
        const opts = {
            width: Math.min(1000, p.view.clientWidth || 900), height: 280,
            scales: { x: { time: false } },
            axes: [{ label: 'operation' }, { label: 'largest free block (bytes)', size: 70, values: (u, vs) => vs.map((v) => bytes(v)) }],
            series: [{ label: 'op' }, ...st.runs.map((r, i) => ({ label: r.name, stroke: COLORS[i], width: 2 }))],
        };
        // Animated replay: reveal the real series step by step (the data is all from the run).
        const partial = (k) => data.map((s) => s.slice(0, k));
        const u = plot = new ctx.uPlot(opts, partial(2), plotBox);
        plotBox.dataset.points = String(n);
        let k = 2;
        timer = setInterval(() => {
            k = Math.min(n, k + Math.max(1, Math.round(n / 60)));
            u.setData(partial(k));
            if (k >= n) { clearInterval(timer); timer = null; plotBox.dataset.done = '1'; }
        }, 40);
    });
    p.controls.append(el('button', { 'data-action': 'run', on: { click: () => act('run', { seed: Math.floor(Math.random() * 1000) }) } }, 'Run the race'));
    await load();
}
