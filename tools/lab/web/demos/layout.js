import { bytes, el, facts, section, svg } from '../draw.js';
import { bind } from './common.js';

export async function mount(root, ctx) {
    const p = section(root, 'layout', 'AoS vs SoA',
        'One pass updates a single 4-byte field (health) of every entity. Stored as structs (AoS), each 64-byte cache ' +
        'line brings in 2 entities and the pass uses 8 of its bytes; stored as columns (SoA), every byte loaded is used.');
    const { act, load } = bind(p, ctx, 'layout', (st) => {
        if (!st.aos) {
            p.facts.replaceChildren();
            p.view.replaceChildren(el('div', { class: 'noplots', text: 'Not run yet.' }));
            return;
        }
        facts(p.facts, [['entities', 'entities', st.entities], ['aos_lines', 'AoS lines', st.aos.lines], ['soa_lines', 'SoA lines', st.soa.lines],
            ['aos_ms', 'AoS pass', st.aos.ms.toFixed(2) + ' ms'], ['soa_ms', 'SoA pass', st.soa.ms.toFixed(2) + ' ms']]);
        // Bars: bytes loaded vs bytes used, per layout, on one scale.
        const W = 1000, H = 90, max = st.aos.bytes_loaded;
        const s = svg('svg', { class: 'map', viewBox: `0 0 ${W} ${H}` });
        const row = (y, label, loaded) => {
            s.append(svg('rect', { x: 120, y, width: ((W - 130) * loaded) / max, height: 16, class: 'free', 'data-bytes': loaded }));
            s.append(svg('rect', { x: 120, y, width: ((W - 130) * st.bytes_used) / max, height: 16, class: 'used' }));
            s.append(svg('text', { x: 4, y: y + 12 }, label));
            s.append(svg('text', { x: 126, y: y + 12 }, `${bytes(loaded)} loaded, ${bytes(st.bytes_used)} used`));
        };
        row(12, `AoS (${st.entity_bytes} B each)`, st.aos.bytes_loaded);
        row(52, `SoA (column)`, st.soa.bytes_loaded);
        // The first entities' bytes, one cell per 4 bytes: the health field lit.
        const strip = svg('svg', { class: 'map', viewBox: `0 0 ${W} 60` });
        const per = st.entity_bytes / 4, cells = 64, cw = W / cells;
        for (let i = 0; i < cells; i++) {
            const isHealth = i % per === 6;
            strip.append(svg('rect', { x: i * cw, y: 6, width: cw - 1, height: 18, class: isHealth ? 'used' : 'free' }));
            strip.append(svg('rect', { x: i * cw, y: 34, width: cw - 1, height: 18, class: 'used' }));
            if (i % 16 === 0) strip.append(svg('line', { class: 'head', x1: i * cw, x2: i * cw, y1: 0, y2: 60 }));
        }
        p.view.replaceChildren(s, el('div', { class: 'legend', text: 'top: AoS memory, 4-byte cells, health lit; bottom: the SoA health column; blue lines: 64-byte cache lines' }), strip);
    });
    p.controls.append(el('button', { 'data-action': 'run', on: { click: () => act('run', { entities: 1000000 }) } }, 'Measure 1,000,000 entities'));
    await load();
}
