import { actionable, bytes, el, facts, message, numberInput, section, select, svg } from '../draw.js';
import { bind, checked, unless, width } from './common.js';

// The device pool: one bar per block of device memory (its offset_heap's blocks, x by offset),
// buffers and images coloured apart, the granularity pages as ticks under each bar, dedicated
// allocations on their own row. A planned defragmentation pass draws each move as an arrow from the
// allocation (outlined) to its reserved destination (dashed); after the commit the moved
// allocations are outlined at their new place.
const BAR = 30; // bar height
const ROW = 62; // bar + ticks + room for the arrows between bars
const TOP = 16; // the row's label above the bar

export async function mount(root, ctx) {
    const p = section(root, 'device', 'Device memory pool (offset heaps, defragmentation)',
        'A device_pool over at most four 1 MiB blocks of (pretend) device memory: the allocator keeps all its metadata ' +
        'outside them and never touches a byte. Buffers (linear) and images (optimal) never share a 4 KiB granularity page ' +
        '(the ticks). "Fragment" fills the pool and frees half at random; "Defragment: next pass" plans one pass (arrows: ' +
        'allocation → reserved destination), the next click commits it. Click a used block to free it.');
    const size = numberInput(65536, 1, 1 << 20, 'bytes');
    const align = select([256, 1024, 4096, 16384, 65536], 4096, 'alignment');
    const kind = select(['linear', 'optimal'], 'linear', 'resource kind');
    kind.options[0].textContent = 'buffer (linear)';
    kind.options[1].textContent = 'image (optimal)';
    let defragButton = null;
    const { act, load, current } = bind(p, ctx, 'device', (st, answer, op, resized) => {
        const r = answer && answer.ok && answer.result;
        if (r && !r.reason && op !== 'state' && !resized) message(p.msg, says(op, r, st));
        facts(p.facts, [['used_bytes', 'used', st.used_bytes], ['free_bytes', 'free', st.free_bytes],
            ['largest_free_block', 'largest free', st.largest_free_block],
            ['fragmentation', 'fragmentation', (st.fragmentation * 100).toFixed(1) + '%'],
            ['blocks_held', 'blocks', `${st.blocks_held} / ${st.max_blocks}`], ['bytes_moved', 'bytes moved', st.bytes_moved],
            ['passes', 'passes', st.passes], ['check', 'check()', st.check ? 'ok' : 'FAILED']]);
        defragButton.textContent = st.pass_in_flight ? 'Defragment: commit the moves' : 'Defragment: next pass';
        p.view.replaceChildren(...draw(st, width(p.view), (id) => act('free', () => unless(p,
            () => !current().allocations.some((a) => a.id === id), { id }, `#${id} is already free`))));
    }, { follow: true });
    defragButton = el('button', { 'data-action': 'defrag', on: { click: () => act('defrag') } }, 'Defragment: next pass');
    // The button's label changes with the phase: it keeps the width of the longer one, so the
    // controls after it do not move.
    defragButton.style.visibility = 'hidden';
    p.controls.append(defragButton);
    defragButton.textContent = 'Defragment: commit the moves';
    const wide = defragButton.getBoundingClientRect().width;
    defragButton.textContent = 'Defragment: next pass';
    if (wide > 0) defragButton.style.minWidth = `${Math.ceil(wide)}px`;
    defragButton.style.visibility = '';
    p.controls.append(el('label', {}, 'size ', size), el('label', {}, ' align ', align), el('label', {}, ' ', kind),
        el('button', { 'data-action': 'alloc', on: { click: () => act('alloc', checked(p, size, 'size', (n) => ({ size: n, align: Number(align.value), kind: kind.value }))) } }, 'Allocate'),
        el('button', { 'data-action': 'alloc-random', on: { click: () => act('alloc', { kind: kind.value }) } }, 'Allocate a random one'),
        el('button', { 'data-action': 'free', on: { click: () => act('free') } }, 'Free a random one'),
        el('button', { 'data-action': 'fragment', on: { click: () => act('fragment') } }, 'Fragment'),
        defragButton);
    await load();
}

// What an operation did, in words (the generic message lists ids and offsets only).
function says(op, r, st) {
    const where = (a) => a.dedicated ? 'memory of its own (dedicated)' : `block ${a.block} @${a.offset}`;
    const what = (a) => `#${a.id}, ${a.kind === 'optimal' ? 'an image' : 'a buffer'} of ${bytes(a.size)}`;
    if (op === 'alloc') return `alloc: ${what(r)} (asked ${r.requested} B, align ${r.align}) in ${where(r)}`;
    if (op === 'free') return `free: ${what(r)} from ${where(r)}`;
    if (op === 'fragment') return `fragment: ${r.allocated} allocated until the pool refused, then ${r.freed} freed at random`;
    if (r.phase === 'planned') return `pass ${st.passes} planned: ${r.moves} move(s), ${bytes(r.bytes)} to copy; the next click commits them`;
    if (r.phase === 'committed') return `pass committed: ${r.moved} allocation(s), ${bytes(r.bytes)} moved; their sources are free`;
    return `defragmentation done: nothing left to move` + (r.blocks_freed ? ` (${r.blocks_freed} block(s) given back)` : '');
}

// Returns the section's picture: the block bars with the moves, the dedicated row, a legend.
function draw(st, W, free) {
    const rows = st.blocks.length;
    const rowOf = new Map(st.blocks.map((b, i) => [b.index, i]));
    const s = svg('svg', { class: 'map device', viewBox: `0 0 ${W} ${Math.max(1, rows) * ROW + 4}`, role: 'img' });
    s.append(svg('defs', {}, svg('marker', { id: 'device-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
        svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }))));
    const x = (o) => (o / st.block_size) * W;
    const y = (block) => rowOf.get(block) * ROW + TOP;
    const moving = new Set(st.moves.filter((m) => m.op === 'copy').map((m) => `${m.src_block}:${m.src_offset}`));
    const landed = new Set(st.committed.map((m) => `${m.dst_block}:${m.dst_offset}`));
    for (const b of st.blocks) {
        const top = y(b.index);
        s.append(svg('text', { x: 2, y: top - 4 }, `block ${b.index}: ${bytes(b.used_bytes)} used, largest free ${bytes(b.largest_free_block)}`));
        for (const a of b.blocks) {
            const w = Math.max(1, x(a.offset + a.size) - x(a.offset));
            const key = `${b.index}:${a.offset}`;
            let cls = a.used ? (a.reserved ? 'reserved' : `used ${a.kind}`) : 'free';
            if (moving.has(key)) cls += ' moving';
            if (landed.has(key)) cls += ' hit';
            if (a.used && a.id) cls += ' clickable';
            const r = svg('rect', { x: x(a.offset), y: top, width: w, height: BAR, class: cls,
                'data-block': b.index, 'data-offset': a.offset, 'data-size': a.size, 'data-used': a.used,
                'data-kind': a.used ? a.kind : 'free' });
            const what = a.used ? (a.reserved ? 'reserved: a move\'s destination' : `#${a.id} ${a.kind === 'optimal' ? 'image' : 'buffer'}`) : 'free';
            const title = `${what} @${a.offset}, ${bytes(a.size)} (block ${b.index})`;
            r.append(svg('title', {}, title));
            if (a.used && a.id) actionable(r, `${title}: free it`, () => free(a.id), `device-${a.id}`);
            s.append(r);
            if (a.used && !a.reserved && w > 34) s.append(svg('text', { x: x(a.offset) + 3, y: top + BAR / 2 + 4 }, '#' + a.id));
        }
        // Granularity pages: a short tick at every page boundary, a longer one every 16 pages.
        let d = '';
        const pages = b.size / st.granularity;
        for (let k = 0; k <= pages; k++) {
            const tx = x(k * st.granularity).toFixed(1);
            d += `M${tx},${top + BAR} v${k % 16 === 0 ? 7 : 3}`;
        }
        s.append(svg('path', { d, class: 'ticks', 'data-pages': pages }));
    }
    // The planned moves: from the middle of the allocation to the middle of its destination.
    for (const m of st.moves) {
        if (!rowOf.has(m.src_block) || !rowOf.has(m.dst_block)) continue;
        const x1 = x(m.src_offset + m.size / 2), y1 = y(m.src_block) + (m.src_block === m.dst_block ? 0 : BAR / 2);
        const x2 = x(m.dst_offset + m.size / 2), y2 = y(m.dst_block) + (m.src_block === m.dst_block ? 0 : BAR / 2);
        // Inside a block the arrow arcs above the bar; between blocks it bends sideways.
        const mx = (x1 + x2) / 2, my = m.src_block === m.dst_block ? y1 - 14 : (y1 + y2) / 2;
        const cx = m.src_block === m.dst_block ? mx : mx + 60;
        const path = svg('path', { d: `M${x1},${y1} Q${cx},${my} ${x2},${y2}`, class: 'move' + (m.op === 'copy' ? '' : ' ignored'),
            'marker-end': 'url(#device-arrow)', 'data-src-block': m.src_block, 'data-src-offset': m.src_offset,
            'data-dst-block': m.dst_block, 'data-dst-offset': m.dst_offset, 'data-size': m.size });
        path.append(svg('title', {}, `#${m.id}: block ${m.src_block} @${m.src_offset} → block ${m.dst_block} @${m.dst_offset}, ${bytes(m.size)}` +
            (m.op === 'copy' ? '' : ' (dropped: freed during the pass)')));
        s.append(path);
    }
    const parts = [rows ? s : el('div', { class: 'msg', text: 'No block yet: the pool asks the device for one at the first allocation.' })];
    if (st.dedicated.length) {
        parts.push(el('div', { class: 'legend', 'data-k': 'dedicated' },
            el('span', { text: `dedicated (memory of their own, ≥ ${bytes(st.dedicated_threshold)}):` }),
            ...st.dedicated.map((a) => el('span', { text: `#${a.id} ${a.kind} ${bytes(a.size)}` }))));
    }
    parts.push(el('div', { class: 'legend' },
        el('span', {}, el('i', { class: 'sw linear' }), 'buffer (linear)'), el('span', {}, el('i', { class: 'sw optimal' }), 'image (optimal)'),
        el('span', {}, el('i', { class: 'sw free' }), 'free'), el('span', {}, el('i', { class: 'sw reserved' }), 'reserved destination'),
        el('span', { text: `ticks: ${bytes(st.granularity)} granularity pages; each bar is ${bytes(st.block_size)}` }),
        st.pass_in_flight ? el('span', { 'data-k': 'pass', text: `pass in flight: ${st.moves.length} move(s); the next click commits them` }) : null));
    return parts;
}
