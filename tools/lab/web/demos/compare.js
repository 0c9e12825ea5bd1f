// Same requests, every allocator: a request script (or a built-in sequence) applied by the server to
// six real allocators side by side; a step slider shows each one's map after step i. Every map,
// number and refusal here comes from the API's answer (the allocators' own walks and stats).
import { bytes, el, facts, select, svg } from '../draw.js';
import { bind } from './common.js';

const DEFAULT = 'a 100; a 30; f 1; a 64 align 16\nbig = a 2000\nf 2; a 48; f big\nr';
const SIZES = [1024, 2048, 4096, 8192, 16384, 32768, 65536];
const ROWS = 16; // a map is the buffer folded into this many rows
const KIND = { b: 'block', h: 'header', p: 'padding / rounding', f: 'free', o: 'allocator bookkeeping' };

// The section's own layout: the six columns wrap below ~170 px each and scroll inside their box.
const STYLE = `
#compare textarea.script { width: 100%; font: 13px/1.4 ui-monospace, monospace; resize: vertical; }
#compare .steprow { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; margin: 6px 0; }
#compare .steprow input[type=range] { flex: 1 1 200px; min-width: 0; }
#compare .stmt { font: 13px ui-monospace, monospace; }
#compare svg.marks { width: 100%; height: auto; display: block; }
#compare svg.marks rect.refused { fill: var(--bad); }
#compare svg.marks line.now { stroke: var(--accent); stroke-width: 2; }
#compare .lanes { display: grid; grid-template-columns: repeat(auto-fill, minmax(140px, 1fr)); gap: 10px;
    max-width: 100%; overflow-x: auto; }
#compare .lane { min-width: 0; border: 1px solid #e4e4e4; border-radius: 4px; padding: 4px 6px; }
#compare .lane h3 { margin: 0; font-size: 15px; }
#compare .lane .out { font-size: 12px; margin-top: 2px; color: #555; overflow-wrap: anywhere; }
#compare .lane .out.refused { color: var(--bad); }
#compare .lane dl.facts { font-size: 12px; gap: 0 10px; }
#compare .lane ol.refusals { font-size: 11px; color: var(--bad); max-height: 7em; overflow: auto; margin: 4px 0 0;
    padding-left: 30px; overflow-wrap: anywhere; }
#compare svg.map rect { stroke: none; }
#compare svg.map rect.over { fill: #bdbdbd; }
#compare svg.map rect.header { fill: #6d4c2f; }
`;

export async function mount(root, ctx) {
    if (!document.getElementById('compare-style')) document.head.append(el('style', { id: 'compare-style', text: STYLE }));
    const p = section(root, ctx);
    const script = el('textarea', { class: 'script', rows: 5, spellcheck: 'false', 'aria-label': 'request script' });
    script.value = DEFAULT;
    const buffer = select(SIZES, 4096, 'buffer size of every allocator');
    for (const o of buffer.options) o.textContent = bytes(Number(o.value));
    const slot = el('input', { type: 'number', value: 0, min: 0, max: 65536, title: 'pool slot size (0: the largest request)',
        'aria-label': 'pool slot size' });
    const seq = el('select', { 'aria-label': 'recorded sequence', title: 'a recorded sequence' });
    const slider = el('input', { type: 'range', min: 0, max: 0, value: 0, 'aria-label': 'step' });
    const stepText = el('span', { class: 'stmt', 'data-k': 'statement' });
    const marks = el('div', { class: 'marks' });
    const lanes = el('div', { class: 'lanes' });
    p.view.append(el('div', { class: 'steprow' }, el('button', { 'data-action': 'prev', on: { click: () => nudge(-1) } }, '◀'),
        slider, el('button', { 'data-action': 'next', on: { click: () => nudge(1) } }, '▶'), stepText), marks, lanes,
    el('div', { class: 'legend' }, ...Object.entries(KIND).map(([k, v]) => el('span', {}, swatch(k), v)),
        el('span', { text: `each map: the buffer folded into ${ROWS} rows, offset 0 at the top left; hover a block for its name; ` +
            'the same block has the same colour in every column' }),
        el('span', { text: 'red marks under the slider: refused steps, one row per allocator in column order' })));

    let run = null; // the last run's result: summary and refusals, by version
    let shown = null; // the state drawn last, for redraws on resize
    let queued = false; // a step request waits for its turn: it sends the slider's value then

    const render = (st, answer, op) => {
        if (op === 'run' && answer.result) run = answer.result;
        if (run && run.version !== st.version) run = null;
        if (seq.options.length === 0) {
            for (const q of st.sequences) seq.append(el('option', { value: q.name, text: q.title }));
        }
        if (op === 'run' || op === 'state') {
            script.value = st.steps > 0 || op === 'run' ? st.script : script.value;
            buffer.value = String(st.buffer);
        }
        slider.max = String(st.steps);
        if (!queued) slider.value = String(st.step);
        const stmt = st.step > 0 ? st.statements[st.step - 1] : null;
        stepText.textContent = `step ${st.step} / ${st.steps}` + (stmt ? `: ${stmt.text} (line ${stmt.line})` : ': nothing yet');
        facts(p.facts, [['step', 'step', st.step], ['steps', 'steps', st.steps], ['buffer', 'buffer', bytes(st.buffer)],
            ['pool_slot', 'pool slot', `${st.pool_slot} B, align ${st.pool_align}`],
            ['refusals', 'refusals', run ? run.refusals.length : '–'], ['intact', 'contents', st.intact ? 'intact' : 'CHANGED']]);
        shown = st;
        drawMarks(marks, st, run);
        drawLanes(lanes, st, run);
    };
    // A script the server could not parse: its answer names the line and column; select that spot.
    const pointAt = (text) => {
        const m = /^line (\d+), column (\d+)/.exec(text);
        if (!m) return;
        const lines = script.value.split('\n');
        const line = Math.min(Number(m[1]), lines.length);
        let at = Number(m[2]) - 1;
        for (let i = 0; i < line - 1; i++) at += lines[i].length + 1;
        at = Math.min(at, script.value.length);
        script.focus();
        script.setSelectionRange(at, Math.min(at + 1, script.value.length));
        script.dataset.error = String(at);
    };
    const call = async (demo, op, args) => {
        delete script.dataset.error;
        try {
            return await ctx.call(demo, op, args);
        } catch (e) {
            if (op === 'run') pointAt(e.message);
            throw e;
        }
    };
    const { act, load } = bind(p, { ...ctx, call }, 'compare', render, { reset: () => { run = null; } });

    // The pool's slot: 0 (the script's largest request) up to the buffer size.
    const slotSize = () => Math.min(Number(buffer.value), Math.max(0, Math.floor(Number(slot.value) || 0)));
    const go = (args) => act('run', () => ({ ...args, buffer: Number(buffer.value), slot: slotSize() }));
    const toStep = () => {
        if (queued) return;
        queued = true;
        act('step', () => { queued = false; return { step: Number(slider.value) }; });
    };
    function nudge(d) {
        const v = Math.min(Number(slider.max), Math.max(0, Number(slider.value) + d));
        if (v === Number(slider.value)) return;
        slider.value = String(v);
        toStep();
    }
    slider.addEventListener('input', toStep);
    p.controls.append(
        el('label', {}, 'buffer ', buffer), el('label', {}, 'pool slot (0: largest request) ', slot),
        el('button', { 'data-action': 'run', on: { click: () => go({ script: script.value }) } }, 'Run'),
        el('label', {}, 'sequence ', seq),
        el('button', { 'data-action': 'load', on: { click: () => go({ sequence: seq.value }) } }, 'Load and run'));
    p.controls.after(script);

    // Maps follow their column's width.
    let lastWidth = 0;
    new ResizeObserver(() => {
        const w = lanes.clientWidth;
        if (shown && w !== lastWidth) {
            lastWidth = w;
            drawLanes(lanes, shown, run);
            drawMarks(marks, shown, run);
        }
    }).observe(lanes);

    await load();
    await go({ script: script.value });
}

function section(root, ctx) {
    const parts = {
        controls: el('div', { class: 'controls' }),
        facts: el('dl', { class: 'facts' }),
        msg: el('div', { class: 'msg', role: 'status' }),
        view: el('div', { class: 'view' }),
    };
    root.append(el('section', { class: 'demo', id: 'compare', 'data-demo': 'compare' },
        el('h2', { text: ctx.title }),
        el('p', { class: 'what', text: 'One script of requests, applied by the server to six real allocators, each over its own ' +
            'buffer of the same size. Statements: a SIZE [align A] allocates (blocks are numbered 1, 2, ... or named: ' +
            'x = a 100), f N frees block N (or f x), r resets; separate them with ; or new lines. Move the slider to ' +
            'see every allocator after step i: where it put each block, its headers and padding, and what it refused.' }),
        parts.controls, parts.facts, parts.msg, parts.view));
    return parts;
}

function swatch(kind) {
    const s = svg('svg', { width: 10, height: 10, class: 'map', style: 'display:inline-block;width:10px;border:0;margin-right:4px' });
    s.append(svg('rect', { x: 0, y: 0, width: 10, height: 10, class: cls(kind), ...(kind === 'b' ? { style: `fill:${blockColor(3)}` } : {}) }));
    return s;
}

function cls(kind) {
    return { b: 'used', h: 'header', p: 'pad', f: 'free', o: 'over' }[kind];
}

// The same block gets the same colour in every column.
function blockColor(n) {
    return `hsl(${(n * 47) % 360} 62% 52%)`;
}

function blockName(st, n) {
    const name = st.names[n - 1];
    return name ? `block ${n} (${name})` : `block ${n}`;
}

// One strip per allocator under the slider: a red mark at each refused step; the current step as a line.
function drawMarks(box, st, run) {
    const W = Math.max(200, Math.round(box.clientWidth || 600)), rowH = 7, H = 6 * rowH + 4;
    const s = svg('svg', { class: 'marks', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img',
        'aria-label': 'refused steps per allocator' });
    const n = Math.max(1, st.steps);
    const x = (i) => ((i - 1) / n) * W; // step i (1-based) spans [x(i), x(i + 1))
    if (run) {
        for (const r of run.refusals) {
            const rect = svg('rect', { class: 'refused refusal-mark', x: x(r.step), y: 2 + r.lane * rowH, width: Math.max(2, W / n - 1),
                height: rowH - 2, 'data-step': r.step, 'data-lane': r.lane });
            rect.append(svg('title', {}, `step ${r.step}, ${st.lanes[r.lane].name}: ${r.reason}`));
            s.append(rect);
        }
    }
    if (st.step > 0) {
        const at = x(st.step) + W / n / 2;
        s.append(svg('line', { class: 'now', x1: at, x2: at, y1: 0, y2: H }));
    }
    box.replaceChildren(s);
}

function drawLanes(box, st, run) {
    const cols = st.lanes.map((lane, i) => {
        const col = el('div', { class: 'lane', 'data-lane': lane.name });
        const o = lane.outcome;
        const out = el('div', { class: 'out' + (o && !o.ok ? ' refused' : ''), 'data-k': 'outcome' },
            !o ? 'before the first step' : o.ok ? `step ${st.step}: ok` : `step ${st.step} refused: ${o.reason}`);
        const dl = el('dl', { class: 'facts' });
        facts(dl, [['footprint', 'footprint', bytes(lane.footprint)], ['waste', 'waste', bytes(lane.waste)],
            ['live', 'live', lane.live], ['requested', 'requested', bytes(lane.requested)],
            ['largest_free', 'largest free', bytes(lane.largest_free)], ['check', 'check', lane.check ? 'ok' : 'FAILED']]);
        const mine = run ? run.refusals.filter((r) => r.lane === i) : [];
        const list = el('ol', { class: 'refusals', 'aria-label': `${lane.name}: refused steps` },
            ...mine.slice(0, 200).map((r) => el('li', { value: r.step, text: r.reason, 'data-step': r.step })));
        col.append(el('h3', { text: lane.name }), el('div', { class: 'mapbox' }), out, dl,
            el('div', { class: 'legend', text: `${mine.length} refused in the whole script` }));
        if (mine.length) col.append(list);
        return col;
    });
    box.replaceChildren(...cols);
    // Drawn once the columns are laid out, at their width.
    st.lanes.forEach((lane, i) => {
        const holder = cols[i].querySelector('.mapbox');
        holder.append(drawMap(lane, st, Math.max(100, Math.floor(holder.clientWidth))));
    });
}

// The buffer folded into ROWS rows; each segment is cut where it crosses a row's end.
function drawMap(lane, st, W) {
    const per = st.buffer / ROWS, rowH = 9, gap = 1, H = ROWS * (rowH + gap);
    const s = svg('svg', { class: 'map', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img',
        'aria-label': `${lane.name}: the buffer's ${st.buffer} bytes, ${per} per row` });
    for (const [offset, size, kind, block] of lane.segments) {
        const g = svg('g', { 'data-kind': kind, 'data-offset': offset, 'data-size': size, 'data-block': block });
        const who = block ? blockName(st, block) + ': ' : '';
        g.append(svg('title', {}, `${who}${KIND[kind]}, ${size} B at offset ${offset}`));
        for (let at = offset, left = size; left > 0;) {
            const row = Math.floor(at / per), col = at - row * per, take = Math.min(left, per - col);
            g.append(svg('rect', { x: (col / per) * W, y: row * (rowH + gap), width: Math.max(0.75, (take / per) * W),
                height: rowH, class: cls(kind), ...(kind === 'b' ? { style: `fill:${blockColor(block)}` } : {}) }));
            at += take;
            left -= take;
        }
        s.append(g);
    }
    return s;
}
