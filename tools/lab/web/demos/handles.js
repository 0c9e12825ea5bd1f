import { actionable, el, facts, message, section } from '../draw.js';
import { bind, unless } from './common.js';

export async function mount(root, ctx) {
    const p = section(root, 'handles', 'Handles (slot map)',
        'Spawn adds a value at the end of the dense array and returns a handle (slot index + generation). ' +
        'Free a value (click it): the last value moves into its place and the slot\'s generation moves on. ' +
        'Keep a handle, free its value, then use the kept handle: the map rejects it.');
    // newest: the handle the last spawn returned (after a swap-and-pop the last dense value is not
    // the newest one). kept: the handle "Keep" saved. Both name this session's slots: a session
    // reset forgets them.
    let newest = null;
    let kept = null;
    const keptView = el('span', { class: 'chain', 'data-k': 'kept' });
    const showKept = () => { keptView.textContent = kept ? `kept handle: (index ${kept.index}, gen ${kept.generation})` : 'no kept handle'; };
    const { act, later, load, current } = bind(p, ctx, 'handles', (st, answer, op) => {
        const r = answer && answer.result;
        if (op === 'spawn' && answer.ok && r && r.handle) newest = r.handle;
        facts(p.facts, [['size', 'values', st.size], ['slot_count', 'slots', st.slot_count], ['check', 'check()', st.check ? 'ok' : 'FAILED']]);
        const dense = el('div', { class: 'grid', 'data-k': 'dense' });
        for (const d of st.dense) {
            const h = `${d.handle.index}:${d.handle.generation}`;
            dense.append(actionable(el('div', {
                class: 'cell live', style: 'width:auto;padding:0 6px', 'data-index': d.index, 'data-value': d.value,
                'data-handle': h, title: 'click to free',
            }, `${d.value} ⟨${h}⟩`), `value ${d.value}, handle (index ${d.handle.index}, gen ${d.handle.generation}): free it`,
            () => act('free', () => unless(p, () => !current().dense.some((x) => x.handle.index === d.handle.index && x.handle.generation === d.handle.generation),
                { handle: d.handle }, `value ${d.value} is already freed`)), `handle-${h}`));
        }
        const sparse = el('div', { class: 'grid', 'data-k': 'sparse' });
        for (const s of st.sparse) {
            sparse.append(el('div', { class: 'cell' + (s.live ? ' live' : ''), style: 'width:auto;padding:0 6px',
                'data-index': s.index, 'data-generation': s.generation, 'data-live': s.live },
                `#${s.index} g${s.generation} → ${s.live ? 'dense ' + s.dense : 'free'}`));
        }
        p.view.replaceChildren(el('div', { text: 'dense values (value ⟨index:generation⟩):' }), dense,
            el('div', { text: 'sparse slots (newest handle issued for each index):' }), sparse);
        if (r && r.handle && !answer.ok) p.msg.textContent = `rejected: handle (index ${r.handle.index}, gen ${r.handle.generation}) is stale` +
            (r.slot_generation !== undefined ? '' : '');
    }, { reset: () => { newest = null; kept = null; showKept(); } });
    // Keep and Use take their turn after the clicks before them (a spawn still on its way).
    const keep = () => {
        kept = newest;
        showKept();
        message(p.msg, kept ? `kept the newest handle (index ${kept.index}, gen ${kept.generation})` : 'no handle to keep: spawn a value first', !kept);
    };
    const use = () => {
        if (kept) return { handle: kept };
        message(p.msg, 'no handle kept: press "Keep the newest handle" first', true);
        return null;
    };
    p.controls.append(
        el('button', { 'data-action': 'spawn', on: { click: () => act('spawn') } }, 'Spawn'),
        el('button', { 'data-action': 'keep', on: { click: () => later(keep) } }, 'Keep the newest handle'),
        el('button', { 'data-action': 'use-kept', on: { click: () => act('get', use) } }, 'Use the kept handle'));
    // The kept handle on a line of its own: its text changes length, the control bar stays put.
    p.controls.after(el('div', { class: 'controls kept' }, keptView));
    showKept();
    await load();
}
