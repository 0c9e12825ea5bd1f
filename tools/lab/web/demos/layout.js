import { bytes, el, facts, section, svg } from '../draw.js';
import { bind } from './common.js';

export async function mount(root, ctx) {
    const p = section(root, 'layout', 'AoS vs SoA',
        'One pass updates a single 4-byte field (health) of every entity. Stored as structs (AoS), each 64-byte cache ' +
        'line brings in 2 entities and the pass uses 8 of its bytes; stored as columns (SoA), every byte loaded is used. ' +
        'Both stores are mapped from the OS for the run and given back after it.');
    const { act, load } = bind(p, ctx, 'layout', (st) => {
        if (!st.aos) {
            p.facts.replaceChildren();
            p.view.replaceChildren(el('div', { class: 'noplots', text: 'Not run yet.' }));
            return;
        }
        facts(p.facts, [['entities', 'entities', st.entities], ['aos_lines', 'AoS lines', st.aos.lines], ['soa_lines', 'SoA lines', st.soa.lines],
            ['aos_ms', 'AoS pass', st.aos.ms.toFixed(2) + ' ms'], ['soa_ms', 'SoA pass', st.soa.ms.toFixed(2) + ' ms']]);
        // Bars: bytes loaded (light) and bytes used (dark) per layout, on one scale, as wide as the view.
        const max = st.aos.bytes_loaded;
        const bar = (k, label, side) => el('div', { 'data-k': k, style: 'margin:4px 0' },
            el('div', { style: 'font-size:13px', text: `${label}: ${bytes(side.bytes_loaded)} loaded, ${bytes(st.bytes_used)} used, ${side.ms.toFixed(2)} ms` }),
            el('div', { style: 'position:relative;height:16px;background:#fafafa;border:1px solid #e4e4e4' },
                el('div', { style: `position:absolute;left:0;top:0;bottom:0;width:${(100 * side.bytes_loaded) / max}%;background:var(--free)`, 'data-bytes': side.bytes_loaded }),
                el('div', { style: `position:absolute;left:0;top:0;bottom:0;width:${(100 * st.bytes_used) / max}%;background:var(--used)` })));
        // The first entities' bytes, one cell per 4 bytes: the health field lit.
        const W = 1000;
        const strip = svg('svg', { class: 'map', viewBox: `0 0 ${W} 60` });
        const per = st.entity_bytes / 4, cells = 64, cw = W / cells;
        for (let i = 0; i < cells; i++) {
            const isHealth = i % per === 6;
            strip.append(svg('rect', { x: i * cw, y: 6, width: cw - 1, height: 18, class: isHealth ? 'used' : 'free' }));
            strip.append(svg('rect', { x: i * cw, y: 34, width: cw - 1, height: 18, class: 'used' }));
            if (i % 16 === 0) strip.append(svg('line', { class: 'head', x1: i * cw, x2: i * cw, y1: 0, y2: 60 }));
        }
        p.view.replaceChildren(bar('aos', `AoS (${st.entity_bytes} B each)`, st.aos), bar('soa', 'SoA (health column)', st.soa),
            el('div', { class: 'legend', text: 'light: bytes loaded (whole cache lines), dark: bytes the pass uses' }), strip,
            el('div', { class: 'legend', text: 'top: AoS memory, 4-byte cells, health lit; bottom: the SoA health column; blue lines: 64-byte cache lines' }));
    });
    p.controls.append(el('button', { 'data-action': 'run', on: { click: () => act('run', { entities: 1000000 }) } }, 'Measure 1,000,000 entities'));
    await load();
}
