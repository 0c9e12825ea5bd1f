import { el, facts, numberInput, section } from '../draw.js';
import { bind, checked } from './common.js';

const HOLDER = { yours: 'live', magazine: 'mag', depot: 'depot' };

export async function mount(root, ctx) {
    const p = section(root, 'slab', 'Slab cache + magazines',
        'Rows are slabs (partial or full; empty ones are only counted). Allocate takes objects from this thread\'s ' +
        'loaded magazine first (its two magazines are drawn beside the rows, below them when narrow); freeing puts them back there, not in the slab. ' +
        'When both magazines are full, a full one is parked in the depot. Flush sends everything back to the slabs.');
    const count = numberInput(4, 1, 64, 'objects');
    const { act, load } = bind(p, ctx, 'slab', (st) => {
        const mag = st.magazine || {};
        facts(p.facts, [['yours', 'yours', st.yours], ['slab_live', 'out of the slabs', st.slab_live],
            ['slabs', 'slabs in use', st.slabs.length], ['empty_slabs', 'empty slabs', st.empty_slabs],
            ['loaded', 'loaded magazine', mag.loaded ? `${mag.loaded.count}/${mag.loaded.capacity}` : '—'],
            ['depot_rounds', 'in the depot', mag.depot_rounds ?? 0], ['check', 'check()', st.check ? 'ok' : 'FAILED']]);
        const rows = el('div', { 'data-k': 'slabs' });
        for (const s of st.slabs) {
            const cells = Array.from({ length: st.objects_per_slab }, (_, i) => el('div', { class: 'cell', 'data-i': i, style: 'width:16px;height:16px' }));
            for (const o of s.objects) {
                const c = cells[o.index];
                if (!c) continue;
                c.dataset.holder = o.holder;
                c.style.background = o.holder === 'yours' ? 'var(--used)' : o.holder === 'magazine' ? 'var(--accent)' : '#7b4bb7';
            }
            rows.append(el('div', { class: 'row', 'data-state': s.state, 'data-live': s.live },
                el('div', { style: 'font-size:12px;color:#555', text: `slab @${s.offset}: ${s.state}, ${s.live}/${s.capacity}` }),
                el('div', { class: 'grid' }, ...cells)));
        }
        // This thread's two magazines, side by side under their heading, each label over its own stack.
        const mags = el('div', { class: 'mags' });
        for (const [k, m] of [['loaded', mag.loaded], ['previous', mag.previous]]) {
            const box = el('div', { class: 'rounds' });
            if (m) for (let i = 0; i < m.capacity; i++) box.append(el('div', { class: 'round' + (i < m.count ? ' full' : '') }));
            mags.append(el('div', { class: 'mag', 'data-mag': k }, el('div', { class: 'label', text: m ? `${k} ${m.count}/${m.capacity}` : `${k}: none` }), box));
        }
        const column = el('div', { class: 'magcol', 'data-k': 'magazine' }, el('div', { class: 'label', text: 'this thread\'s magazines' }), mags);
        p.view.replaceChildren(el('div', { class: 'cols' }, el('div', { class: 'slabrows' }, rows), column),
            el('div', { class: 'legend' },
                el('span', {}, el('i', { style: 'background:var(--used)' }), 'yours'),
                el('span', {}, el('i', { style: 'background:var(--accent)' }), 'in this thread\'s magazines'),
                el('span', {}, el('i', { style: 'background:#7b4bb7' }), 'in the depot\'s full magazines'),
                el('span', {}, el('i', { style: 'background:var(--free)' }), 'free in the slab')));
    });
    p.controls.append(el('label', {}, 'count ', count),
        el('button', { 'data-action': 'alloc', on: { click: () => act('alloc', checked(p, count, 'count', (n) => ({ count: n }))) } }, 'Allocate'),
        el('button', { 'data-action': 'free', on: { click: () => act('free', checked(p, count, 'count', (n) => ({ count: n }))) } }, 'Free newest'),
        el('button', { 'data-action': 'flush', on: { click: () => act('flush') } }, 'Flush'));
    await load();
}
