import { bytes, el, facts, section } from '../draw.js';
import { bind } from './common.js';
import { PALETTE, axis, bytesAxis, chart, linTicks, noPlots } from '../plots.js';

const COLORS = [PALETTE[4], PALETTE[5], PALETTE[6], PALETTE[0]];
const pct = (f) => (100 * f).toFixed(1) + '%';

export async function mount(root, ctx) {
    const p = section(root, 'race', 'Fragmentation race',
        'Pool, buddy, TLSF and first-fit replay the same bimodal workload (90% of blocks die young, 10% live long; ' +
        '16 B–1 KiB) in 256 KiB each. Top: the bytes each holds for its live blocks (padding and rounding included). ' +
        'Bottom: its fragmentation (frag.), 1 − largest free block / free bytes: 0 when the free memory is one piece, near 1 ' +
        'when it is shattered. (A pool\'s free memory is all 1 KiB slots, so it reads near 1, yet every request fits a slot: ' +
        'its cost is the bytes in use and the refusals.) The workload ends by freeing what is left (the drain): ' +
        'the table\'s last values are taken just before it. Press Run, then watch it replay.');
    let timer = null;
    let plots = []; // the uPlots drawn last: destroyed before the next ones (they hold listeners)
    const { act, load } = bind(p, ctx, 'race', (st) => {
        if (timer) { clearInterval(timer); timer = null; }
        for (const u of plots) u.destroy();
        plots = [];
        if (!st.runs) {
            p.facts.replaceChildren();
            p.view.replaceChildren(el('div', { class: 'noplots', text: 'Not run yet.' }));
            return;
        }
        facts(p.facts, [['operations', 'operations', st.operations], ['peak_live_bytes', 'peak live', bytes(st.peak_live_bytes)],
            ['heap_bytes', 'heap each', bytes(st.heap_bytes)],
            ...st.runs.map((r, i) => [`failures_${i}`, `${r.name} refusals`, r.failures])]);
        const n = st.ops.length;
        // The last column is the refusals (tests read it back).
        const head = ['allocator', 'peak in use', 'mean frag.', 'frag. before the drain', 'largest free before the drain', 'refusals'];
        const table = el('table', { class: 'small', 'data-k': 'final' }, el('tr', {}, ...head.map((t) => el('th', { text: t }))));
        st.runs.forEach((r, i) => {
            table.append(el('tr', { 'data-name': r.name },
                el('td', { style: 'text-align:left' }, el('i', { style: `display:inline-block;width:10px;height:10px;margin-right:4px;background:${COLORS[i]}` }), r.name),
                el('td', { text: bytes(r.peak_in_use) }), el('td', { text: pct(r.mean_fragmentation) }),
                el('td', { text: pct(r.final_fragmentation) }), el('td', { text: bytes(r.final_largest_free) }),
                el('td', { text: String(r.failures) })));
        });
        const usedBox = el('div', { class: 'plot', 'data-k': 'in_use' });
        const fragBox = el('div', { class: 'plot', 'data-k': 'fragmentation' });
        p.view.replaceChildren(usedBox, fragBox, el('div', { style: 'overflow-x:auto' }, table));
        if (!ctx.uPlot) { usedBox.append(noPlots()); return; }
        const x = axis('operations replayed', 2, (lo, hi, px) => linTicks(lo, hi, px, 64), (v) => v.toLocaleString('en-US'));
        const padding = [8, 28, 0, 0]; // room for the last x label
        const xr = [st.ops[0], st.ops[n - 1]]; // fixed: the replay grows from left to right
        const sync = { key: 'race-' + Math.random().toString(36).slice(2) }; // hover one, see both
        const series = (fmt) => [{ label: 'ops' }, ...st.runs.map((r, i) => ({ label: r.name, stroke: COLORS[i], width: 2, value: (u, v) => (v == null ? '–' : fmt(v)) }))];
        const used = [st.ops, ...st.runs.map((r) => r.in_use)];
        const frag = [st.ops, ...st.runs.map((r) => r.fragmentation)];
        const uUsed = chart(ctx.uPlot, usedBox, {
            padding,
            scales: { x: { time: false, range: xr }, y: { range: [0, st.heap_bytes] } },
            axes: [x, bytesAxis('bytes in use', 3)],
            series: series(bytes),
            cursor: { sync },
        }, partial(used, 2), { height: 240 });
        const uFrag = chart(ctx.uPlot, fragBox, {
            padding,
            scales: { x: { time: false, range: xr }, y: { range: [0, 1] } },
            axes: [x, axis('fragmentation', 3, () => [0, 0.25, 0.5, 0.75, 1], (v) => Math.round(v * 100) + '%')],
            series: series(pct),
            legend: { show: false }, // the same allocators and colours as above
            cursor: { sync },
        }, partial(frag, 2), { height: 180 });
        plots = [uUsed, uFrag];
        usedBox.dataset.points = String(n);
        // Animated replay: reveal the real series step by step (the data is all from the run).
        let k = 2;
        timer = setInterval(() => {
            k = Math.min(n, k + Math.max(1, Math.round(n / 60)));
            uUsed.setData(partial(used, k));
            uFrag.setData(partial(frag, k));
            if (k >= n) { clearInterval(timer); timer = null; usedBox.dataset.done = '1'; fragBox.dataset.done = '1'; }
        }, 40);
    });
    p.controls.append(el('button', { 'data-action': 'run', on: { click: () => act('run', { seed: Math.floor(Math.random() * 1000) }) } }, 'Run the race'));
    await load();
}

function partial(data, k) { return data.map((s) => s.slice(0, k)); }
