import { actionable, el, facts, numberInput, section, svg } from '../draw.js';
import { bind, checked, unless, width } from './common.js';

// The buddy tree: one row per order, largest on top. A block is drawn on its order's row and its
// ancestors (split blocks) are outlined above it, so splits and merges read as a tree.
export async function mount(root, ctx) {
    const p = section(root, 'buddy', 'Buddy (power-of-two blocks)',
        'A request is rounded up to a power of two (64 B at least). Allocation splits a larger free block in halves ' +
        'down to that order; click a used block to free it: it merges with its buddy while the buddy is free, up the levels.');
    const size = numberInput(100, 1, 8192, 'bytes');
    // Where each freed block was (id -> offset, noted at the click): the free answer says how far the
    // block merged (merged_size), and the merged block starts at offset & ~(merged_size - 1).
    const freedAt = new Map();
    let mergedAt = null; // the offset of the block the last free merged into
    const { act, load, current } = bind(p, ctx, 'buddy', (st, answer, op, resized) => {
        facts(p.facts, [['live_allocations', 'live', st.live_allocations], ['granted', 'granted', st.granted],
            ['requested', 'requested', st.requested], ['largest_free_block', 'largest free', st.largest_free_block],
            ['check', 'check()', st.check ? 'ok' : 'FAILED']]);
        const W = width(p.view), rowH = 26, orders = st.orders;
        const s = svg('svg', { class: 'map', viewBox: `0 0 ${W} ${orders * rowH + 4}` });
        const x = (o) => (o / st.region) * W;
        const r = answer && answer.ok && answer.result;
        if (!resized) mergedAt = r && r.merged_size && freedAt.has(r.id) ? freedAt.get(r.id) & ~(r.merged_size - 1) : null;
        if (r && r.id !== undefined) freedAt.delete(r.id);
        const merged = r && r.merged_size;
        for (const b of st.blocks) {
            const row = orders - 1 - b.order;
            // Split ancestors: outlines on the rows above.
            for (let k = b.order + 1; k < orders; k++) {
                const size = st.min_block << k;
                const base = Math.floor(b.offset / size) * size;
                if (base === b.offset || b.offset % size === 0) {
                    s.append(svg('rect', { x: x(base), y: (orders - 1 - k) * rowH + 2, width: x(size) - 1, height: rowH - 4,
                        fill: 'none', stroke: '#bbb', 'stroke-dasharray': '2 2' }));
                }
            }
            const rect = svg('rect', {
                x: x(b.offset), y: row * rowH + 2, width: Math.max(1, x(b.size) - 1), height: rowH - 4,
                class: (b.used ? 'used clickable' : 'free') + (!b.used && b.offset === mergedAt && b.size === merged ? ' hit' : ''),
                'data-offset': b.offset, 'data-size': b.size, 'data-used': b.used, 'data-order': b.order,
            });
            const what = `${b.used ? 'used #' + b.id : 'free'} @${b.offset}, ${b.size} B (order ${b.order})`;
            rect.append(svg('title', {}, what));
            if (b.used && b.id) {
                actionable(rect, `${what}: free it`, () => act('free', () => {
                    const args = unless(p, () => !current().blocks.some((x) => x.used && x.id === b.id), { id: b.id }, `block #${b.id} is already free`);
                    if (args) freedAt.set(b.id, b.offset);
                    return args;
                }), `block-${b.id}`);
            }
            s.append(rect);
            const text = (b.used ? '#' + b.id + ' ' : '') + b.size;
            if (x(b.size) > 7 * text.length + 4) s.append(svg('text', { x: x(b.offset) + 3, y: row * rowH + 17 }, text));
        }
        p.view.replaceChildren(s, el('div', { class: 'legend' },
            el('span', { text: `rows: orders ${orders - 1} (${st.region} B) at the top down to 0 (${st.min_block} B); dashed: split parents` })));
    }, { reset: () => { freedAt.clear(); mergedAt = null; }, follow: true });
    p.controls.append(el('label', {}, 'size ', size),
        el('button', { 'data-action': 'alloc', on: { click: () => act('alloc', checked(p, size, 'size', (n) => ({ size: n }))) } }, 'Allocate'));
    await load();
}
