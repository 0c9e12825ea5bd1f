import { actionable, el, facts, section } from '../draw.js';
import { bind, unless } from './common.js';

export async function mount(root, ctx) {
    const p = section(root, 'pool', 'Pool (fixed-size slots)',
        'Allocate takes the head of the free list; click a live slot to free it: it goes on the front. ' +
        'The free list is read from the free slots themselves (each holds the link to the next).');
    const { act, load, current } = bind(p, ctx, 'pool', (st) => {
        facts(p.facts, [['live', 'live', st.live], ['capacity', 'slots', st.capacity], ['slot_size', 'slot', st.slot_size + ' B'],
            ['free', 'free', st.free_list.length], ['check', 'check()', st.check ? 'ok' : 'FAILED']]);
        const head = st.free_list.length ? st.free_list[0] : -1;
        const grid = el('div', { class: 'grid' });
        for (const s of st.slots) {
            const pos = st.free_list.indexOf(s.index);
            const cell = el('div', {
                class: 'cell' + (s.live ? ' live' : '') + (s.index === head ? ' head' : ''),
                'data-slot': s.index, 'data-live': s.live,
                title: s.live ? `slot ${s.index}: live, click to free` : `slot ${s.index}: free, #${pos + 1} in the free list`,
            }, s.live ? String(s.index) : `${s.index}·${pos + 1}`);
            if (s.live) actionable(cell, `slot ${s.index}: live, free it`, () => act('free', () => unless(p, () => !current().slots[s.index].live,
                { slot: s.index }, `slot ${s.index} is already free`)), `slot-${s.index}`);
            grid.append(cell);
        }
        const chain = el('div', { class: 'chain', 'data-k': 'free_list' },
            'free list: head → ' + (st.free_list.length ? st.free_list.join(' → ') + ' → null' : 'null (pool full)'));
        p.view.replaceChildren(grid, chain, el('div', { class: 'legend' },
            el('span', {}, el('i', { style: 'background:var(--used)' }), 'live (number = slot)'),
            el('span', {}, el('i', { style: 'background:var(--free)' }), 'free (slot·position in the list)'),
            el('span', {}, el('i', { style: 'outline:2px solid var(--accent)' }), 'head: the next allocation')));
    });
    p.controls.append(el('button', { 'data-action': 'alloc', on: { click: () => act('alloc') } }, 'Allocate a slot'));
    await load();
}
