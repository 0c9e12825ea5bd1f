import { el, facts, section } from '../draw.js';
import { bind } from './common.js';

export async function mount(root, ctx) {
    const p = section(root, 'handles', 'Handles (slot map)',
        'Spawn adds a value at the end of the dense array and returns a handle (slot index + generation). ' +
        'Free a value (click it): the last value moves into its place and the slot\'s generation moves on. ' +
        'Keep a handle, free its value, then use the kept handle: the map rejects it.');
    let kept = null;
    const keptView = el('span', { class: 'chain', 'data-k': 'kept' });
    const showKept = () => { keptView.textContent = kept ? `kept handle: (index ${kept.index}, gen ${kept.generation})` : 'no kept handle'; };
    const { act, load } = bind(p, ctx, 'handles', (st, answer) => {
        facts(p.facts, [['size', 'values', st.size], ['slot_count', 'slots', st.slot_count], ['check', 'check()', st.check ? 'ok' : 'FAILED']]);
        const dense = el('div', { class: 'grid', 'data-k': 'dense' });
        for (const d of st.dense) {
            dense.append(el('div', {
                class: 'cell live', style: 'width:auto;padding:0 6px', 'data-index': d.index, 'data-value': d.value,
                'data-handle': `${d.handle.index}:${d.handle.generation}`, title: 'click to free',
                on: { click: () => act('free', { handle: d.handle }) },
            }, `${d.value} ⟨${d.handle.index}:${d.handle.generation}⟩`));
        }
        const sparse = el('div', { class: 'grid', 'data-k': 'sparse' });
        for (const s of st.sparse) {
            sparse.append(el('div', { class: 'cell' + (s.live ? ' live' : ''), style: 'width:auto;padding:0 6px',
                'data-index': s.index, 'data-generation': s.generation, 'data-live': s.live },
                `#${s.index} g${s.generation} → ${s.live ? 'dense ' + s.dense : 'free'}`));
        }
        const r = answer && answer.result;
        p.view.replaceChildren(el('div', { text: 'dense values (value ⟨index:generation⟩):' }), dense,
            el('div', { text: 'sparse slots (newest handle issued for each index):' }), sparse);
        if (r && r.handle && !answer.ok) p.msg.textContent = `rejected: handle (index ${r.handle.index}, gen ${r.handle.generation}) is stale` +
            (r.slot_generation !== undefined ? '' : '');
    });
    p.controls.append(
        el('button', { 'data-action': 'spawn', on: { click: () => act('spawn') } }, 'Spawn'),
        el('button', { 'data-action': 'keep', on: { click: async () => {
            const st = (await ctx.call('handles', 'state')).state;
            kept = st.dense.length ? st.dense[st.dense.length - 1].handle : null;
            showKept();
        } } }, 'Keep the newest handle'),
        el('button', { 'data-action': 'use-kept', on: { click: () => kept && act('get', { handle: kept }) } }, 'Use the kept handle'),
        keptView);
    showKept();
    await load();
}
