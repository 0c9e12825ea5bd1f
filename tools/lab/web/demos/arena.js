import { bytes, byteMap, el, facts, numberInput, section, select, svg } from '../draw.js';
import { bind, checked, width } from './common.js';

export async function mount(root, ctx) {
    const p = section(root, 'arena', 'Arena (bump allocator)',
        'Allocate moves the head right; alignment leaves padding (light) before a block. Nothing is freed ' +
        'one by one: reset drops everything at once. A request past the end is refused.');
    const size = numberInput(120, 1, 4096, 'bytes');
    const align = select([1, 8, 16, 64, 256], 16, 'alignment');
    const { act, load } = bind(p, ctx, 'arena', (st) => {
        facts(p.facts, [['head', 'head', st.head], ['in_use', 'in use', st.in_use], ['remaining', 'remaining', st.remaining],
            ['capacity', 'capacity', st.capacity], ['live_allocations', 'allocations', st.allocations.length]]);
        // The arena's own extents (used / free), then each allocation and its padding on top.
        const pieces = [];
        for (const a of st.allocations) {
            if (a.padding) pieces.push({ offset: a.offset - a.padding, size: a.padding, used: false, pad: true });
            pieces.push({ offset: a.offset, size: a.size, used: true, id: a.id });
        }
        const W = width(p.view);
        const map = byteMap(st.capacity, [...st.blocks.filter((b) => !b.used), ...pieces], {
            width: W,
            cls: (b) => (b.pad ? 'pad' : b.used ? 'used' : 'free'),
            label: (b) => (b.pad ? '' : b.used ? '#' + b.id : 'free'),
        });
        const x = (st.head / st.capacity) * W;
        map.append(svg('line', { class: 'head', x1: x, x2: x, y1: 0, y2: 46 }));
        p.view.replaceChildren(map, el('div', { class: 'legend' },
            el('span', {}, el('i', { style: 'background:var(--used)' }), 'allocation'),
            el('span', {}, el('i', { style: 'background:var(--pad)' }), 'alignment padding'),
            el('span', {}, el('i', { style: 'background:var(--free)' }), 'free'),
            el('span', {}, el('i', { style: 'background:var(--accent)' }), `head (${bytes(st.head)})`)));
    }, { follow: true });
    p.controls.append(el('label', {}, 'size ', size), el('label', {}, 'align ', align),
        el('button', { 'data-action': 'alloc', on: { click: () => act('alloc', checked(p, size, 'size', (n) => ({ size: n, align: Number(align.value) }))) } }, 'Allocate'),
        el('button', { 'data-action': 'reset', on: { click: () => act('reset') } }, 'Reset'));
    await load();
}
