import { byteMap, el, facts, numberInput, section } from '../draw.js';
import { bind, checked, unless, width } from './common.js';

// Bitmaps as rows of cells: bits = {fl_bitmap, sl_bitmaps}. With a search (drawn on the bitmaps it
// ran on, those before its allocation): the start class, the masked-off bits and the chosen class.
// With `was` (the bitmaps the search ran on): the bits that changed since are outlined.
function bitmaps(st, bits, { search, was, key, title }) {
    const box = el('div', { class: 'bits', 'data-k': key }, el('div', { class: 'title', text: title }));
    const chosen = search && search.chosen;
    const start = search && search.start;
    const row = (label, ...cells) => el('div', { class: 'row' }, el('span', { class: 'label', text: label }), el('span', { class: 'cells' }, ...cells));
    const flCells = [];
    for (let f = 0; f < st.levels; f++) {
        const on = Math.floor(bits.fl_bitmap / 2 ** f) % 2;
        let cls = 'bit' + (on ? ' on' : '');
        if (search && search.path === 'first-level' && f <= start.fl) cls += ' masked-out';
        if (chosen && chosen.fl === f) cls += ' chosen';
        if (was && Math.floor(was.fl_bitmap / 2 ** f) % 2 !== on) cls += ' changed';
        flCells.push(el('span', { class: cls, 'data-fl': f, 'data-on': on, title: `level ${f}` }, on ? '1' : '0'));
    }
    box.append(row('first level', ...flCells));
    for (let f = 0; f < st.levels; f++) {
        const cells = [];
        for (let s = 0; s < st.sl_count; s++) {
            const on = (bits.sl_bitmaps[f] >>> s) & 1;
            let cls = 'bit' + (on ? ' on' : '');
            if (start && f === start.fl && s < start.sl) cls += ' masked-out';
            if (start && f === start.fl && s === start.sl) cls += ' start';
            if (chosen && chosen.fl === f && chosen.sl === s) cls += ' chosen';
            if (was && ((was.sl_bitmaps[f] >>> s) & 1) !== on) cls += ' changed';
            cells.push(el('span', { class: cls, 'data-fl': f, 'data-sl': s, 'data-on': on, title: `class (${f}, ${s})` }, on ? '1' : '·'));
        }
        box.append(row(`second, level ${f}`, ...cells));
    }
    return box;
}

export async function mount(root, ctx) {
    const p = section(root, 'tlsf', 'TLSF (two-level segregated fit)',
        'Pick a size: it is rounded up to a payload of 32k + 16 bytes (the block grid) and mapped to a class (level = power of two, 32 slices each). ' +
        'The search masks that level\'s second-level bitmap from the start class (outlined); if nothing is ' +
        'left it scans the first-level bitmap above. The chosen list is blue. Click a used block to free it: it merges with free neighbours.');
    const size = numberInput(100, 1, 65536, 'bytes');
    let lastSearch = null;
    let searchOp = null; // 'alloc' or 'probe': the operation that ran lastSearch
    let searchId = null; // the block an allocating search handed out
    const { act, load, current } = bind(p, ctx, 'tlsf', (st, answer, op) => {
        if (answer && answer.result && answer.result.search) {
            lastSearch = answer.result.search;
            searchOp = op;
            searchId = answer.ok && op === 'alloc' ? answer.result.id : null;
        }
        facts(p.facts, [['in_use', 'in use', st.in_use], ['live_allocations', 'live', st.live_allocations],
            ['largest_free_block', 'largest free', st.largest_free_block], ['fl_bitmap', 'fl bitmap', '0b' + st.fl_bitmap.toString(2)],
            ['check', 'check()', st.check ? 'ok' : 'FAILED']]);
        const search = lastSearch;
        const chosen = search && search.chosen;
        // Outlined: the block the allocation got, or, for a probe, the free blocks of the chosen list.
        const hitList = chosen && searchOp === 'probe' && st.lists.find((l) => l.fl === chosen.fl && l.sl === chosen.sl);
        const map = byteMap(st.capacity, st.blocks, {
            width: width(p.view),
            cls: (b) => (b.used ? 'used' : 'free') + ((hitList && !b.used && hitList.blocks.includes(b.offset)) ||
                (b.used && searchId !== null && b.id === searchId) ? ' hit' : ''),
            label: (b) => (b.used ? '#' + b.id : `${b.size}`),
            onClick: (b) => b.id && act('free', () => unless(p, () => !current().blocks.some((x) => x.used && x.id === b.id),
                { id: b.id }, `block #${b.id} is already free`)),
        });
        const lists = el('table', { class: 'small', 'data-k': 'lists' },
            el('tr', {}, el('th', { text: 'class (fl, sl)' }), el('th', { text: 'sizes from' }), el('th', { text: 'free blocks (offset)' })));
        for (const l of st.lists) {
            const isChosen = chosen && l.fl === chosen.fl && l.sl === chosen.sl;
            lists.append(el('tr', { 'data-fl': l.fl, 'data-sl': l.sl, style: isChosen ? 'background:#dbe8ff' : '' },
                el('td', { text: `(${l.fl}, ${l.sl})` }), el('td', { text: String(l.floor) }), el('td', { text: l.blocks.join(', ') })));
        }
        const explain = search ? el('div', { class: 'msg', 'data-k': 'search' },
            `${search.size} B → need ${search.need} B; search starts at class (${search.start.fl}, ${search.start.sl}); ` +
            (search.path === 'second-level' ? `second-level scan hit (${chosen.fl}, ${chosen.sl})`
                : search.path === 'first-level' ? `second level empty above the start: first-level scan picked level ${chosen.fl}, then its lowest class (${chosen.fl}, ${chosen.sl})`
                    : 'both scans empty: no list guarantees a fit') +
            (search.taken ? `; the block came from class (${search.taken.fl}, ${search.taken.sl})` : '')) : null;
        // The search on the bitmaps it ran on (before its allocation), then the heap's bitmaps now.
        // One picture when they are the same bits (a probe, or nothing changed since the search).
        const pictures = [];
        const sameBits = search && search.sl_bitmaps && search.fl_bitmap === st.fl_bitmap &&
            search.sl_bitmaps.every((m, f) => m === st.sl_bitmaps[f]);
        if (sameBits) {
            pictures.push(bitmaps(st, st, { search, key: 'search-bitmaps bitmaps',
                title: `the search for ${search.size} B, on the bitmaps now` + (searchOp === 'probe' ? ' (only shown: nothing allocated)' : '') }));
        } else {
            if (search && search.sl_bitmaps) {
                pictures.push(bitmaps(st, search, { search, key: 'search-bitmaps',
                    title: `the search for ${search.size} B, on the bitmaps as they were when it ran (before the allocation)` }));
            }
            pictures.push(bitmaps(st, st, { was: search && search.sl_bitmaps ? search : null, key: 'bitmaps',
                title: search && search.sl_bitmaps ? (searchOp === 'alloc' ? 'after it: the bitmaps now (changed bits outlined)'
                    : 'the bitmaps now (bits changed since the search are outlined)') : 'the bitmaps now' }));
        }
        p.view.replaceChildren(explain || '', ...pictures, map, el('div', { class: 'scroll' }, lists));
    }, { reset: () => { lastSearch = null; searchId = null; }, follow: true }); // a new session's heap: the last search was on the old one
    p.controls.append(el('label', {}, 'size ', size),
        el('button', { 'data-action': 'alloc', on: { click: () => act('alloc', checked(p, size, 'size', (n) => ({ size: n }))) } }, 'Allocate'),
        el('button', { 'data-action': 'probe', on: { click: () => act('probe', checked(p, size, 'size', (n) => ({ size: n }))) } }, 'Show the search only'));
    await load();
}
