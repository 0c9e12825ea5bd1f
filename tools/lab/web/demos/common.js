// What every demo section shares: run an operation, show refusals, redraw from the returned state.
import { message } from '../draw.js';

// bind(parts, ctx, name, render, { reset, follow }): render(state, answer, op, resized) draws a
// section; op is 'state' for a load(). With follow, the section's maps are drawn at width(parts.view)
// pixels (labels keep their size and fit at every width) and follow its width: when it changes, the
// last answer is drawn again with resized true (render then draws the same picture at the new width
// and keeps nothing new from the answer). Returns
//   act(op, args): runs the operation through the API, says what happened and redraws;
//   later(f): runs f in turn with the section's operations;
//   load(): redraws from the allocator's current state (at mount, and when the session is replaced);
//   draw(answer): redraws from an answer;
//   current(): the state drawn last (a queued click checks its block is still live against it).
// A section's operations run one at a time, in the order they were clicked: the server answers on
// several threads, so two requests in flight could run, and come back, in either order, and the page
// would end up showing an older state than the allocator's. Every request also gets a sequence
// number, and an answer older than the one drawn last is dropped (a reload after a session reset
// overtakes an operation sent before it). Errors are always shown. A click queued behind a request
// that ended in a session reset is not run: it named the old session's blocks.
// reset() runs before a load() draws: the section forgets what it kept from the old session.
// section.dataset.width is the width a following section's maps were drawn at.
// ctx.onReset(fetchState) registers the section with app.js for session resets.
// section.dataset.rev counts redraws (and errors and local answers shown) so tests (and curious
// users) can tell a fresh picture.
export function bind(parts, ctx, name, render, { reset, follow = false } = {}) {
    const section = parts.view.closest('section');
    let rev = 0;
    let sent = 0; // the last request's sequence number
    let drawn = 0; // the sequence number of the answer drawn last
    let loads = 0; // load() calls so far: a click made before the latest one is not run
    let queue = Promise.resolve();
    let last = null; // { answer, op } drawn last, drawn again when the width changes
    const bump = () => { section.dataset.rev = String(++rev); };
    const paint = (answer, op, resized) => {
        const focus = focusKey(section);
        render(answer.state, answer, op, resized);
        refocus(section, parts, focus);
        if (follow) section.dataset.width = String(width(parts.view));
    };
    const draw = (answer, seq = ++sent, op = 'state') => {
        if (seq < drawn) return false;
        drawn = seq;
        last = { answer, op };
        paint(answer, op, false);
        bump();
        return true;
    };
    // The maps follow the section's width: a new width redraws the last answer (once a frame).
    let pending = 0;
    if (follow) {
        new ResizeObserver(() => {
            if (pending) return;
            pending = requestAnimationFrame(() => {
                pending = 0;
                if (last && String(width(parts.view)) !== section.dataset.width) paint(last.answer, last.op, true);
            });
        }).observe(parts.view);
    }
    const run = async (op, args, clickedAt) => {
        if (clickedAt !== loads) return null; // the session was replaced since the click
        if (typeof args === 'function') {
            args = args(); // read when its turn comes; null: nothing to send (f said why, in parts.msg)
            if (!args) { bump(); return null; }
        }
        const seq = ++sent;
        try {
            const a = await ctx.call(name, op, args);
            if (seq < drawn) return a; // a reload drew a newer state meanwhile
            if (!a.ok) message(parts.msg, a.result.reason || 'refused', true);
            // Partly done (the slab filled after some objects): say what was done and why not all.
            else if (a.result && a.result.reason) message(parts.msg, `${describe(op, a.result)}; ${a.result.reason}`, true);
            else message(parts.msg, describe(op, a.result));
            draw(a, seq, op);
            return a;
        } catch (e) {
            message(parts.msg, e.message, true);
            bump();
            return null;
        }
    };
    // run() never throws, so the queue never holds a rejected promise. args may be a function, called
    // when the operation's turn comes (after the clicks before it are answered); it returns the
    // arguments, or null to send nothing.
    const act = (op, args = {}) => {
        const clickedAt = loads;
        const p = queue.then(() => run(op, args, clickedAt));
        queue = p;
        return p;
    };
    // later(f): runs f (no request; it must not wait for act) after the clicks before it are
    // answered, unless the session was replaced since.
    const later = (f) => act(null, () => { f(); return null; });
    // fetchState(): asks for the state and returns the function that draws it, so that a session
    // reset can redraw every section at once (app.js), when all their states are in.
    const fetchState = async () => {
        const reload = ++loads > 1;
        const seq = ++sent;
        const a = await ctx.call(name, 'state');
        return () => {
            if (seq < drawn) return;
            if (reset) reset();
            if (reload) message(parts.msg, '');
            draw(a, seq);
        };
    };
    const load = async () => (await fetchState())();
    if (ctx.onReset) ctx.onReset(fetchState);
    return { act, draw, later, load, current: () => (last ? last.answer.state : null) };
}

// width(e): the pixel width to draw e's maps at (its content width; 1000 before it is laid out).
export function width(e) {
    const w = Math.floor(e.clientWidth);
    return w > 0 ? w : 1000;
}

// checked(parts, input, what, make): the arguments make(n) for the number typed in `input`, read at
// the click; when it is not a whole number within the input's min and max (an empty field, 0, 1.5),
// a function for act() that says so in its turn and sends nothing: the server would answer 400.
export function checked(parts, input, what, make) {
    const text = input.value.trim();
    const n = Number(text);
    const lo = Number(input.min), hi = Number(input.max);
    if (text !== '' && Number.isInteger(n) && n >= lo && n <= hi) return make(n);
    return () => {
        message(parts.msg, `${what} must be a whole number from ${lo} to ${hi}`, true);
        return null;
    };
}

// unless(gone, args, why): for act(op, () => ...): args, or null (nothing sent) with `why` shown when
// gone() is true. A click waits for the clicks before it, so a block drawn live when clicked (a
// double click on it, say) can be gone by the time it runs: the page then sends nothing, and never
// a stale id.
export function unless(parts, gone, args, why) {
    if (!gone()) return args;
    message(parts.msg, why, true);
    return null;
}

// Redrawing replaces the section's clickable blocks and cells; a keyboard user's focus goes back to
// the same one (data-key) when it is still there, else to the first clickable one, else to the
// first button.
function focusKey(section) {
    const a = document.activeElement;
    if (!a || a === document.body || !section.contains(a)) return null;
    return { el: a, key: a.getAttribute('data-key') };
}

function refocus(section, parts, focus) {
    if (!focus || focus.el.isConnected) return;
    const same = focus.key !== null ? [...section.querySelectorAll('[data-key]')].find((e) => e.getAttribute('data-key') === focus.key) : null;
    const next = same || parts.view.querySelector('[tabindex="0"]') || parts.controls.querySelector('button');
    if (next) next.focus();
}

function describe(op, r) {
    const parts = [];
    for (const k of ['id', 'slot', 'offset', 'padding', 'block_size', 'marker', 'merged_size', 'allocated']) {
        if (r[k] !== undefined) parts.push(`${k.replace('_', ' ')} ${r[k]}`);
    }
    return `${op}: ok` + (parts.length ? ' (' + parts.join(', ') + ')' : '');
}
