import { byteMap, el, facts, numberInput, section, select, svg } from '../draw.js';
import { bind, checked, unless, width } from './common.js';

export async function mount(root, ctx) {
    const p = section(root, 'stack', 'Stack (LIFO with markers)',
        'Every allocation carries a 16-byte header (dark) holding the previous top. Pop frees the newest; clicking a block ' +
        'asks to free that one, and the stack refuses any but the newest. A marker (dashed) saves the top, and rewinding to it ' +
        'frees everything above at once. A marker the top has fallen below is gone.');
    const size = numberInput(64, 1, 2048, 'bytes');
    const align = select([8, 16, 64], 16, 'alignment');
    // The rewind buttons have a row of their own, so the control bar above never moves as markers
    // come and go.
    const markers = el('div', { class: 'controls markers', 'data-k': 'rewind' });
    const { act, load, current } = bind(p, ctx, 'stack', (st) => {
        facts(p.facts, [['top', 'top', st.top], ['capacity', 'capacity', st.capacity],
            ['live_allocations', 'live', st.live_allocations], ['markers', 'markers', st.markers.length]]);
        const pieces = [];
        for (const b of st.blocks) {
            if (!b.used) { pieces.push(b); continue; }
            const a = st.allocations.find((x) => x.offset > b.offset && x.offset <= b.offset + b.size);
            const hdr = a ? a.offset - st.header_size : b.offset;
            if (hdr > b.offset) pieces.push({ offset: b.offset, size: hdr - b.offset, used: true, pad: true });
            pieces.push({ offset: hdr, size: st.header_size, used: true, header: true });
            pieces.push({ offset: hdr + st.header_size, size: b.offset + b.size - hdr - st.header_size, used: true, id: a && a.id, block: true });
        }
        const W = width(p.view);
        const map = byteMap(st.capacity, pieces, {
            width: W,
            cls: (b) => (b.header ? 'header' : b.pad ? 'pad' : b.used ? 'used' : 'free'),
            label: (b) => (b.id ? '#' + b.id : ''),
            clickable: (b) => b.block && !!b.id,
            // Any block can be clicked: the stack frees the newest and refuses the others.
            onClick: (b) => act('pop', () => unless(p, () => !current().allocations.some((x) => x.id === b.id),
                { id: b.id }, `block #${b.id} is already free`)),
        });
        for (const m of st.markers) {
            const x = (m.position / st.capacity) * W;
            map.append(svg('line', { class: 'marker', x1: x, x2: x, y1: 0, y2: 46, 'data-marker': m.id }));
        }
        markers.replaceChildren(el('span', { class: 'label', text: st.markers.length ? 'rewind to' : 'rewind: no marker saved' }),
            ...st.markers.map((m) => el('button', { 'data-action': 'rewind', 'data-marker': m.id, on: { click: () => act('rewind', { marker: m.id }) } },
                `marker ${m.id} (@${m.position})`)));
        p.view.replaceChildren(map, el('div', { class: 'legend' },
            el('span', {}, el('i', { style: 'background:#8a5a2b' }), 'header'),
            el('span', {}, el('i', { style: 'background:var(--used)' }), 'allocation (click: free it)'),
            el('span', {}, el('i', { style: 'background:var(--pad)' }), 'padding'),
            el('span', {}, el('i', { style: 'background:var(--free)' }), 'free')));
    }, { follow: true });
    p.controls.append(el('label', {}, 'size ', size), el('label', {}, 'align ', align),
        el('button', { 'data-action': 'alloc', on: { click: () => act('alloc', checked(p, size, 'size', (n) => ({ size: n, align: Number(align.value) }))) } }, 'Allocate'),
        el('button', { 'data-action': 'pop', on: { click: () => act('pop') } }, 'Pop newest'),
        el('button', { 'data-action': 'mark', on: { click: () => act('mark') } }, 'Save marker'),
        el('button', { 'data-action': 'reset', on: { click: () => act('reset') } }, 'Reset'));
    p.controls.after(markers);
    await load();
}
