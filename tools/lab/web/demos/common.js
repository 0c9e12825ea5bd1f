// What every demo section shares: run an operation, show refusals, redraw from the returned state.
import { message } from '../draw.js';

// bind(parts, ctx, name, render): returns act(op, args) that calls the API and re-renders.
// section.dataset.rev counts redraws so tests (and curious users) can tell a fresh picture.
export function bind(parts, ctx, name, render) {
    const section = parts.view.closest('section');
    let rev = 0;
    const draw = (answer) => {
        render(answer.state, answer);
        section.dataset.rev = String(++rev);
    };
    const act = async (op, args = {}) => {
        try {
            const a = await ctx.call(name, op, args);
            if (!a.ok) message(parts.msg, a.result.reason || 'refused', true);
            // Partly done (the slab filled after some objects): say what was done and why not all.
            else if (a.result && a.result.reason) message(parts.msg, `${describe(op, a.result)}; ${a.result.reason}`, true);
            else message(parts.msg, describe(op, a.result));
            draw(a);
            return a;
        } catch (e) {
            message(parts.msg, e.message, true);
            section.dataset.rev = String(++rev);
            return null;
        }
    };
    const load = async () => draw(await ctx.call(name, 'state'));
    if (ctx.onReset) ctx.onReset(load);
    return { act, draw, load };
}

function describe(op, r) {
    const parts = [];
    for (const k of ['id', 'slot', 'offset', 'padding', 'block_size', 'marker', 'merged_size', 'allocated']) {
        if (r[k] !== undefined) parts.push(`${k.replace('_', ' ')} ${r[k]}`);
    }
    return `${op}: ok` + (parts.length ? ' (' + parts.join(', ') + ')' : '');
}
