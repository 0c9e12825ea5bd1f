// The trace player: a recorded or synthetic trace replayed (once, server side) through a real heap,
// shown as an address-space map at any op with a scrubber, and the heap's footprint, largest free
// block and fragmentation over time. The server keeps every placement the allocator chose and
// keyframes of the live set; every picture here is drawn from its answers.
import { el, facts, message, section, select, svg } from '../draw.js';
import { bind } from './common.js';
import { chart } from '../plots.js';

const SPEEDS = [10, 100, 1000, 10000, 100000]; // ops per second
const MIN_SPAN = 256; // the deepest zoom: bytes across the map
const fmt = (n) => Number(n).toLocaleString('en-US');

// An offset as the ruler writes it: in the unit that the tick step needs, with the decimals it needs.
function offsetLabel(v, step) {
    const unit = step >= 1 << 20 ? [1 << 20, 'MiB'] : step >= 1024 ? [1024, 'KiB'] : [1, 'B'];
    const d = Math.min(3, Math.max(0, Math.ceil(-Math.log10(step / unit[0]) - 1e-9)));
    return (v / unit[0]).toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) + ' ' + unit[1];
}

function bytesShort(n) {
    if (n >= 1 << 30) return (n / (1 << 30)).toFixed(2) + ' GiB';
    if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + ' MiB';
    if (n >= 1024) return (n / 1024).toFixed(1) + ' KiB';
    return n + ' B';
}

// A tick step: the power of two at or above `target` bytes (offsets read as round KiB and MiB).
function niceStep(target) {
    return Math.pow(2, Math.ceil(Math.log2(Math.max(1, target))));
}

function addStyles() {
    if (document.getElementById('trace-css')) return;
    document.head.append(el('link', { id: 'trace-css', rel: 'stylesheet', href: '/trace.css' }));
}

export async function mount(root, ctx) {
    addStyles();
    const p = section(root, 'trace', ctx.title,
        'A whole trace replayed through a real heap: every block below sits where the allocator placed it. ' +
        'Scrub, step (one op or one keyframe) or play; zoom the map with the wheel or the buttons, drag it to pan, ' +
        'hover a block for its header, padding, bin and the op that made it.');
    const sec = p.view.closest('section');
    const traceSel = select([], '', 'trace');
    const heapSel = select(['tlsf', 'buddy', 'first_fit', 'engine'], 'tlsf', 'heap');
    const scrub = el('input', { type: 'range', min: 0, max: 0, value: 0, step: 1, class: 'scrub', 'aria-label': 'op' });
    const readout = el('span', { class: 'readout', 'data-k': 'position' });
    const speedSel = select(SPEEDS.map((s) => `${fmt(s)} ops/s`), `${fmt(1000)} ops/s`, 'speed');
    const btn = (action, text, title, f) => el('button', { 'data-action': action, title, 'aria-label': title, on: { click: f } }, text);
    const playBtn = btn('play', '▶ play', 'play', () => togglePlay());
    const overview = el('div', { class: 'trace-overview' });
    const ruler = el('div', { class: 'trace-ruler' });
    const map = el('div', { class: 'trace-map' });
    const tip = el('div', { class: 'trace-tip', role: 'tooltip', hidden: '' });
    const note = el('div', { class: 'legend trace-note' });
    const plotBytes = el('div', { class: 'plot trace-plot', 'data-plot': 'bytes' });
    const plotFrag = el('div', { class: 'plot trace-plot', 'data-plot': 'fragmentation' });
    const scrubRow = el('div', { class: 'controls trace-scrub' },
        btn('key-back', '« key', 'back one keyframe', () => stepKey(-1)),
        btn('back', '◀', 'back one op', () => seek(cur.op - 1)),
        playBtn,
        btn('forward', '▶', 'forward one op', () => seek(cur.op + 1)),
        btn('key-forward', 'key »', 'forward one keyframe', () => stepKey(1)),
        el('label', {}, 'speed ', speedSel), readout);
    const zoomRow = el('div', { class: 'controls trace-zoom' },
        btn('zoom-in', '+', 'zoom in', () => zoom(0.5)),
        btn('zoom-out', '−', 'zoom out', () => zoom(2)),
        btn('zoom-all', 'whole heap', 'show the whole heap', () => setRange(0, cur.total)),
        el('span', { class: 'legend', 'data-k': 'range' }));
    p.view.append(scrubRow, scrub, zoomRow, overview, ruler, map, tip, note,
        el('div', { class: 'trace-plots' }, plotBytes, plotFrag));
    p.controls.append(el('label', {}, 'trace ', traceSel), el('label', {}, 'heap ', heapSel),
        el('span', { class: 'trace-status', 'data-k': 'status' }));
    const statusEl = p.controls.querySelector('.trace-status');

    // What is shown: the player's key (trace, heap, ops), the op and the zoom range.
    const cur = { token: null, key: '', op: 0, ops: 0, total: 1, lo: 0, hi: 1, every: 1, view: null, series: null, walked: true };
    let want = null; // the view to ask for next: {op, lo, hi}
    let inflight = false;
    let poll = null;
    let opening = 0; // opens queued or in flight
    let playing = null; // {last: timestamp, carry: fractional ops}
    const plots = [];

    // Views go one at a time and the newest wish wins: a scrub or a drag asks many times a second.
    const request = (op, lo = cur.lo, hi = cur.hi) => {
        cur.asked = true;
        want = { op: Math.max(0, Math.min(cur.ops, Math.round(op))), lo: Math.round(lo), hi: Math.round(hi) };
        pump();
    };
    const pump = async () => {
        if (inflight || !want || !cur.key) return;
        const w = want;
        want = null;
        inflight = true;
        try {
            const a = await ctx.call('trace', 'view', { op: w.op, lo: w.lo, hi: w.hi, bins: binsFor() });
            if (a.ok && a.result.pending) { showState(a.state); return; }
            if (!a.ok) message(p.msg, a.result.reason || 'refused', true);
            else drawView(a.result);
        } catch (e) {
            message(p.msg, e.message, true);
            stopPlay();
        } finally {
            inflight = false;
            if (want) pump();
            else if (playing) requestAnimationFrame(tick);
        }
    };
    const seek = (op) => { stopPlay(); request(op); };
    const stepKey = (dir) => {
        stopPlay();
        const k = cur.every;
        request(dir < 0 ? Math.floor((cur.op - 1) / k) * k : (Math.floor(cur.op / k) + 1) * k);
    };
    const setRange = (lo, hi) => {
        const span = Math.max(MIN_SPAN, Math.min(cur.total, hi - lo));
        lo = Math.max(0, Math.min(cur.total - span, lo));
        cur.lo = lo; cur.hi = lo + span;
        request(want ? want.op : cur.op, cur.lo, cur.hi);
    };
    const zoom = (factor, at = (cur.lo + cur.hi) / 2) => {
        const span = (cur.hi - cur.lo) * factor;
        const f = (at - cur.lo) / (cur.hi - cur.lo);
        setRange(at - f * span, at - f * span + span);
    };
    const binsFor = () => Math.max(16, Math.min(1024, Math.floor((map.clientWidth || 800) / 2)));

    // Playing: advance by speed × elapsed time whenever the previous view has been drawn.
    const speed = () => SPEEDS[speedSel.selectedIndex] || 1000;
    const tick = (t) => {
        if (!playing || inflight) return;
        const dt = playing.last ? Math.min(0.5, (t - playing.last) / 1000) : 0.05;
        playing.last = t;
        playing.carry += speed() * dt;
        const step = Math.floor(playing.carry);
        playing.carry -= step;
        if (cur.op >= cur.ops) { stopPlay(); return; }
        if (step === 0) { requestAnimationFrame(tick); return; }
        request(cur.op + step);
    };
    const togglePlay = () => {
        if (playing) { stopPlay(); return; }
        if (cur.op >= cur.ops) request(0);
        playing = { last: 0, carry: 0 };
        playBtn.textContent = '⏸ pause';
        sec.dataset.playing = '1';
        requestAnimationFrame(tick);
    };
    const stopPlay = () => {
        playing = null;
        playBtn.textContent = '▶ play';
        delete sec.dataset.playing;
    };

    scrub.addEventListener('input', () => { stopPlay(); request(Number(scrub.value)); });

    // The map: the wheel zooms around the pointer, a drag pans, hovering names a block.
    // The offset under a pointer: the map's content box (inside its border) spans [lo, hi).
    const offsetAt = (clientX) => {
        const s = map.querySelector('svg');
        if (!s) return cur.lo;
        const left = s.getBoundingClientRect().left + s.clientLeft;
        return cur.lo + ((clientX - left) / Math.max(1, s.clientWidth)) * (cur.hi - cur.lo);
    };
    map.addEventListener('wheel', (e) => {
        if (!cur.view) return;
        e.preventDefault();
        zoom(e.deltaY < 0 ? 0.8 : 1.25, offsetAt(e.clientX));
    }, { passive: false });
    let drag = null;
    let lastPointer = null; // the pointer's last move over the map: the tooltip follows redraws
    map.addEventListener('pointerdown', (e) => {
        if (!cur.view || e.button !== 0) return;
        drag = { x: e.clientX, lo: cur.lo, hi: cur.hi };
        map.setPointerCapture(e.pointerId);
        map.classList.add('dragging');
    });
    map.addEventListener('pointermove', (e) => {
        if (drag) {
            const dx = e.clientX - drag.x;
            const shift = (dx / Math.max(1, map.clientWidth)) * (drag.hi - drag.lo);
            setRange(drag.lo - shift, drag.hi - shift);
            tip.hidden = true;
            return;
        }
        lastPointer = e;
        hover(e);
    });
    const endDrag = () => { drag = null; map.classList.remove('dragging'); };
    map.addEventListener('pointerup', endDrag);
    map.addEventListener('pointercancel', endDrag);
    map.addEventListener('pointerleave', () => { tip.hidden = true; lastPointer = null; });
    overview.addEventListener('click', (e) => {
        if (!cur.view) return;
        const r = overview.getBoundingClientRect();
        const at = ((e.clientX - r.left) / Math.max(1, r.width)) * cur.total;
        const span = cur.hi - cur.lo;
        setRange(at - span / 2, at + span / 2);
    });

    // Hover: the block under the pointer (blocks are sorted by start and disjoint), or the bin's fill.
    const hover = (e) => {
        const v = cur.view;
        if (!v) return;
        const at = offsetAt(e.clientX);
        let lines = null;
        if (v.blocks.length || !v.omitted) {
            let a = 0, b = v.blocks.length - 1, hit = null;
            while (a <= b) {
                const m = (a + b) >> 1, blk = v.blocks[m];
                if (at < blk[0]) b = m - 1;
                else if (at >= blk[0] + blk[1]) a = m + 1;
                else { hit = blk; break; }
            }
            if (hit) {
                const [start, size, header, req, op, bin] = hit;
                const pad = Math.max(0, size - header - req);
                const label = v.bin_labels[bin];
                lines = [`block at offset ${fmt(start)} (${size} B)`,
                    `user pointer at offset ${fmt(start + header)}`,
                    `requested ${fmt(req)} B · header ${header} B · padding ${fmt(pad)} B`,
                    label ? `bin: ${label}` : 'bin: none (one address-ordered free list)',
                    `made by op ${fmt(op)}`];
                tip.dataset.start = String(start);
            } else {
                lines = [`free at offset ${fmt(Math.floor(at))}`];
                delete tip.dataset.start;
            }
        } else {
            const i = Math.min(v.bins.length - 1, Math.floor(((at - v.lo) / (v.hi - v.lo)) * v.bins.length));
            lines = [`offset ${fmt(Math.floor(at))}: ${(v.bins[i] / 10).toFixed(1)}% used around here`,
                `${fmt(v.omitted)} blocks in view: zoom in to see them one by one`];
            delete tip.dataset.start;
        }
        tip.replaceChildren(...lines.map((t) => el('div', { text: t })));
        tip.hidden = false;
        const host = p.view.getBoundingClientRect();
        const x = Math.min(e.clientX - host.left + 12, host.width - tip.offsetWidth - 4);
        tip.style.left = `${Math.max(0, x)}px`;
        tip.style.top = `${e.clientY - host.top + 14}px`;
    };

    // --- drawing ---------------------------------------------------------------------------------
    const drawView = (v) => {
        cur.view = v;
        cur.op = v.op;
        cur.lo = v.lo;
        cur.hi = v.hi;
        scrub.value = String(v.op);
        readout.textContent = `op ${fmt(v.op)} / ${fmt(cur.ops)}`;
        sec.dataset.op = String(v.op);
        const s = v.sample;
        const frag = s && cur.walked && s.free_bytes ? 1 - s.largest_free / s.free_bytes : null;
        facts(p.facts, [['op', 'op', fmt(v.op)], ['live_blocks', 'live blocks', fmt(v.live_blocks)],
            ['requested', 'requested', bytesShort(v.requested)], ['used_bytes', 'blocks', bytesShort(v.used_bytes)],
            ['top', 'highest block end', bytesShort(v.top)],
            ['largest_free', 'largest free', s && cur.walked ? bytesShort(s.largest_free) : 'n/a'],
            ['fragmentation', 'fragmentation', frag === null ? 'n/a' : frag.toFixed(3)],
            ['refusals', 'refusals', fmt(v.refusals)]]);
        p.view.querySelector('[data-k=range]').textContent =
            `showing ${bytesShort(v.hi - v.lo)} from offset ${fmt(v.lo)} of ${bytesShort(cur.total)}`;
        drawOverview(v);
        drawRuler(v);
        drawMap(v);
        for (const u of plots) u.redraw(false, false);
        if (!tip.hidden && lastPointer && !drag) hover(lastPointer); // the block under the pointer may have changed
        sec.dataset.rev = String(Number(sec.dataset.rev || 0) + 1);
    };

    const width = () => Math.max(200, Math.round(map.clientWidth || p.view.clientWidth || 800));

    const drawOverview = (v) => {
        const W = width(), H = 24, n = v.overview.length;
        const s = svg('svg', { class: 'map', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img',
            'aria-label': 'the whole heap: used fraction per bin; the box is the zoomed range' });
        for (let i = 0; i < n; i++) {
            if (!v.overview[i]) continue;
            const h = (v.overview[i] / 1000) * (H - 2);
            s.append(svg('rect', { x: (i / n) * W, y: H - 1 - h, width: Math.max(0.5, W / n), height: h, class: 'occ' }));
        }
        const x0 = (v.lo / cur.total) * W, x1 = (v.hi / cur.total) * W;
        s.append(svg('rect', { x: x0, y: 0.5, width: Math.max(2, x1 - x0), height: H - 1, class: 'window' }));
        overview.replaceChildren(s);
    };

    const drawRuler = (v) => {
        const W = width(), H = 22, span = v.hi - v.lo;
        const step = niceStep(span / Math.max(2, W / 120));
        const s = svg('svg', { class: 'ruler', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'offsets' });
        let ticks = 0;
        for (let t = Math.ceil(v.lo / step) * step; t <= v.hi; t += step) {
            const x = ((t - v.lo) / span) * W;
            s.append(svg('line', { x1: x, x2: x, y1: H - 7, y2: H, class: 'tick' }));
            const anchor = x < 30 ? 'start' : x > W - 30 ? 'end' : 'middle';
            s.append(svg('text', { x, y: H - 10, 'text-anchor': anchor }, offsetLabel(t, step)));
            ticks++;
        }
        s.dataset.ticks = String(ticks);
        ruler.replaceChildren(s);
    };

    const drawMap = (v) => {
        const W = width(), H = 96, span = v.hi - v.lo;
        const x = (o) => ((o - v.lo) / span) * W;
        const s = svg('svg', { class: 'map trace', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img',
            'aria-label': `the heap from offset ${v.lo} to ${v.hi} at op ${v.op}` });
        s.dataset.blocks = String(v.blocks.length);
        if (v.omitted) {
            const n = v.bins.length;
            for (let i = 0; i < n; i++) {
                if (!v.bins[i]) continue;
                const h = (v.bins[i] / 1000) * (H - 8);
                s.append(svg('rect', { x: (i / n) * W, y: H - 4 - h, width: Math.max(0.5, W / n), height: h, class: 'occ' }));
            }
            s.dataset.mode = 'bins';
        } else {
            s.dataset.mode = 'blocks';
            v.blocks.forEach((b, i) => {
                const [start, size, header, req] = b;
                const x0 = Math.max(0, x(start)), x1 = Math.min(W, x(start + size));
                const w = x1 - x0;
                if (w <= 0) return;
                s.append(svg('rect', { x: x0, y: 4, width: Math.max(0.6, w), height: H - 8,
                    class: 'blk' + (i % 2 ? ' odd' : '') + (w >= 5 ? ' sep' : ''), 'data-start': start }));
                // The header (in front) and the padding (at the end), where at least a pixel wide,
                // clipped to the map like the block.
                const part = (from, to, cls) => {
                    if (x(to) - x(from) < 1) return;
                    const a = Math.max(0, x(from)), z = Math.min(W, x(to));
                    if (z > a) s.append(svg('rect', { x: a, y: 4, width: z - a, height: H - 8, class: cls }));
                };
                if (header) part(start, start + header, 'header');
                const pad = size - header - req;
                if (pad > 0) part(start + size - pad, start + size, 'pad');
            });
        }
        map.replaceChildren(s);
        note.replaceChildren(
            el('span', {}, el('i', { class: 'sw blk' }), 'block (payload)'),
            el('span', {}, el('i', { class: 'sw header' }), 'header'),
            el('span', {}, el('i', { class: 'sw pad' }), 'padding (granted beyond the request)'),
            el('span', { text: v.omitted ? `${fmt(v.omitted)} blocks in view: bars show the used fraction; zoom in for blocks` : '' }));
    };

    // Series: bytes (footprint, blocks, largest free) and fragmentation, with a line at the current op.
    const cursorLine = (u) => {
        const x = u.valToPos(cur.op, 'x', true);
        if (!Number.isFinite(x)) return;
        const c = u.ctx;
        c.save();
        c.strokeStyle = '#6a1b9a';
        c.lineWidth = 2 * (window.devicePixelRatio || 1);
        c.beginPath();
        c.moveTo(x, u.bbox.top);
        c.lineTo(x, u.bbox.top + u.bbox.height);
        c.stroke();
        c.restore();
    };
    const drawSeries = (sr) => {
        for (const u of plots) u.destroy();
        plots.length = 0;
        plotBytes.replaceChildren();
        plotFrag.replaceChildren();
        if (!ctx.uPlot) {
            plotBytes.append(el('div', { class: 'noplots', text: 'plots unavailable (built without uPlot)' }));
            return;
        }
        // chart(): as wide as its box, following it when the box is resized.
        const size = { height: 220, minWidth: 220, fallbackWidth: 400 };
        const common = {
            scales: { x: { time: false } }, legend: { live: false },
            cursor: { drag: { x: false, y: false } }, hooks: { draw: [cursorLine] },
        };
        const bytesAxis = { size: 76, values: (u, vs) => vs.map((v) => bytesShort(v)) };
        const bs = [{ label: 'op' }, { label: sr.walked ? 'footprint' : 'committed', stroke: '#1f6feb', width: 2 },
            { label: 'blocks', stroke: '#d9822b', width: 1.5 }];
        const bd = [sr.op, sr.footprint, sr.used_bytes];
        if (sr.walked) { bs.push({ label: 'largest free', stroke: '#2e7d32', width: 1.5 }); bd.push(sr.largest_free); }
        plots.push(chart(ctx.uPlot, plotBytes, { ...common, axes: [{ label: 'op' }, bytesAxis], series: bs }, bd, size));
        plotBytes.dataset.points = String(sr.op.length);
        if (sr.walked) {
            const frag = sr.op.map((_, i) => (sr.free_bytes[i] ? 1 - sr.largest_free[i] / sr.free_bytes[i] : 0));
            plots.push(chart(ctx.uPlot, plotFrag, { ...common, scales: { x: { time: false }, y: { range: [0, 1] } },
                axes: [{ label: 'op' }, { size: 44 }],
                series: [{ label: 'op' }, { label: 'fragmentation (1 − largest / free)', stroke: '#c62828', width: 1.5 }] },
            [sr.op, frag], size));
            plotFrag.dataset.points = String(sr.op.length);
        } else {
            plotFrag.append(el('div', { class: 'noplots', text:
                'The engine heap does not walk its free memory (size-class runs, TLSF arenas, spans): ' +
                'no largest-free or fragmentation series; its footprint is the bytes it has committed.' }));
        }
    };
    new ResizeObserver(() => {
        if (cur.view) { drawOverview(cur.view); drawRuler(cur.view); drawMap(cur.view); }
    }).observe(p.view);

    // --- the session's state: the catalogue, the player's status -----------------------------------
    const showState = (st) => {
        if (poll) { clearTimeout(poll); poll = null; }
        if (st.traces && traceSel.options.length !== st.traces.length) {
            const keep = traceSel.value;
            traceSel.replaceChildren(...st.traces.map((t) => el('option', { value: t.name, text: t.name, title: t.description })));
            traceSel.value = st.trace || keep || st.traces[0].name;
        }
        sec.dataset.status = st.status;
        if (st.status === 'closed') {
            statusEl.textContent = '';
            return 'open';
        }
        // While an open is queued the selects show the user's choice, not the older player's.
        if (opening === 0) {
            if (st.trace) traceSel.value = st.trace;
            if (st.heap) heapSel.value = st.heap;
        }
        sec.dataset.player = `${st.trace}|${st.heap}`;
        const desc = (st.traces || []).find((t) => t.name === st.trace);
        if (st.status === 'preparing') {
            statusEl.textContent = `preparing… ${st.phase || ''} ${Math.round((st.progress || 0) * 100)}%`;
            poll = setTimeout(() => act('state'), 150);
            return null;
        }
        if (st.status === 'failed') {
            statusEl.textContent = '';
            message(p.msg, `could not prepare ${st.trace}: ${st.error}`, true);
            return null;
        }
        const pl = st.player;
        statusEl.textContent = `${fmt(pl.ops)} ops${pl.cut ? ` (the first ${fmt(pl.max_ops)}: the trace is longer)` : ''} · ${fmt(pl.placements)} blocks placed · prepared in ${fmt(pl.prepare_ms)} ms · ` +
            `keyframe every ${fmt(pl.keyframe_every)} ops · heap check ${pl.check ? 'ok' : 'FAILED'}`;
        statusEl.title = (desc ? desc.description + '. ' : '') + `Map: ${pl.layout}.`;
        const key = `${st.trace}|${st.heap}|${pl.ops}|${pl.heap_bytes}`;
        if (key !== cur.key) {
            cur.key = key;
            cur.ops = pl.ops;
            cur.total = pl.heap_bytes;
            cur.every = pl.keyframe_every;
            cur.lo = 0;
            cur.hi = pl.heap_bytes;
            cur.view = null;
            cur.asked = false;
            scrub.max = String(pl.ops);
            message(p.msg, `${st.trace} in ${st.heap}: ${desc ? desc.description : ''}; ${fmt(pl.refusals)} allocations refused. Map: ${pl.layout}.`,
                pl.refusals > 0);
            loadSeries(cur.token = {}, st.op);
        }
        return null;
    };
    // The series of the player just opened; `token` tells whether another was opened meanwhile.
    const loadSeries = async (token, op) => {
        try {
            const a = await ctx.call('trace', 'series');
            if (cur.token !== token || !a.ok || a.result.pending) return;
            cur.series = a.result;
            cur.walked = a.result.walked;
            drawSeries(a.result);
            if (!cur.asked) request(op); // the first view, unless the user asked for one already
        } catch (e) {
            message(p.msg, e.message, true);
        }
    };
    // Opening another pair clears the picture: nothing of the previous player stays on show while
    // the new one is prepared.
    const open = () => {
        stopPlay();
        cur.key = '';
        cur.token = null;
        cur.view = null;
        for (const u of plots) u.destroy();
        plots.length = 0;
        for (const e of [overview, ruler, map, note, plotBytes, plotFrag, p.facts]) e.replaceChildren();
        readout.textContent = '';
        tip.hidden = true;
        // The pair chosen now: a state poll answered before this open runs must not change it.
        const choice = { trace: traceSel.value, heap: heapSel.value };
        opening++;
        act('open', () => choice).finally(() => { opening--; });
    };

    const { act, load } = bind(p, ctx, 'trace', (st, answer, op) => {
        // "open: ok" and "state: ok" (common.js) say nothing here: the status line says it.
        if (/^(open|state): ok$/.test(p.msg.textContent)) message(p.msg, '');
        if (showState(st) === 'open') open();
    }, { reset: () => { stopPlay(); cur.key = ''; cur.view = null; } });
    traceSel.addEventListener('change', open);
    heapSel.addEventListener('change', open);
    await load();
}
