// Headless-Chromium test of the live lab's trace player (strata-lab serve).
//   node live-trace.test.mjs URL [SHOT_DIR]
// Loads the embedded OpenTTD trace into TLSF, seeks with the scrubber, steps (one op, one keyframe),
// plays a little, zooms the map (buttons and wheel), drags it, hovers a block and checks the tooltip
// against the API's answer, checks the footprint plot drew, and that the page has no horizontal
// overflow at 480 and 1920 px. Fails on a console error, a page error, a failed request or an HTTP
// error. Screenshots (SHOT_DIR): trace-whole.png, trace.png (zoomed, a block hovered), trace-detail.png
// (a few KiB across), all at 1200 px, then trace-480.png and trace-1920.png.
import { Harness, api as apiOf, liveArgs, overflowing, pageOverflow, redraw, settle } from './harness.mjs';

const { url, shots } = liveArgs();
const h = new Harness('live-trace', { shots });
const { check } = h;
await h.launch();
const sec = 'section#trace';
await h.run(async () => {
    const page = await h.open(url + '#trace');
    const uplot = await page.evaluate(async () => (await (await fetch('/api/info')).json()).uplot);
    const api = (op, args = {}) => apiOf(page, 'trace', op, args);
    const drawnOp = () => page.evaluate((s) => Number(document.querySelector(s).dataset.op), sec);
    const waitOp = (op) => page.waitForFunction(([s, o]) => document.querySelector(s).dataset.op === String(o), [sec, op], { timeout: 30000 });

    // The embedded trace into TLSF (the page opens the first trace in TLSF at load; choose it anyway).
    await page.waitForFunction((s) => document.querySelector(s).dataset.op !== undefined, sec, { timeout: 60000 });
    await page.selectOption(`${sec} select[aria-label=trace]`, 'openttd');
    await page.selectOption(`${sec} select[aria-label=heap]`, 'tlsf');
    await page.waitForFunction((s) => document.querySelector(s).dataset.status === 'ready' &&
        document.querySelector(s).dataset.player === 'openttd|tlsf' && document.querySelector(`${s} .trace-map svg`), sec, { timeout: 60000 });
    await page.waitForTimeout(300);
    let st = (await api('state')).state;
    check(st.trace === 'openttd' && st.heap === 'tlsf', `opened ${st.trace} in ${st.heap}`);
    const ops = st.player.ops, every = st.player.keyframe_every;
    check(ops > 500000, `the OpenTTD trace has ${ops} ops`);
    check(st.player.check, 'the heap passed check() after the replay');

    // Seek with the scrubber.
    const target = Math.floor(ops * 0.37);
    await page.evaluate(([s, v]) => {
        const r = document.querySelector(`${s} input.scrub`);
        r.value = String(v);
        r.dispatchEvent(new Event('input', { bubbles: true }));
    }, [sec, target]);
    await waitOp(target);
    check((await page.textContent(`${sec} .readout`)).includes((target).toLocaleString('en-US')), 'the readout shows the op');
    // The facts agree with the API at that op.
    const v = (await api('view', { op: target })).result;
    check(await page.textContent(`${sec} dd[data-k=live_blocks]`) === v.live_blocks.toLocaleString('en-US'),
        `live blocks at op ${target}`);

    // Steps: one op each way, one keyframe each way.
    await page.click(`${sec} button[data-action=forward]`);
    await waitOp(target + 1);
    await page.click(`${sec} button[data-action=back]`);
    await waitOp(target);
    await page.click(`${sec} button[data-action=key-forward]`);
    await waitOp((Math.floor(target / every) + 1) * every);
    await page.click(`${sec} button[data-action=key-back]`);
    await waitOp(Math.floor(target / every) * every);
    const before = await drawnOp();

    // Play a little, then pause.
    await page.selectOption(`${sec} select[aria-label=speed]`, { index: 3 });
    await page.click(`${sec} button[data-action=play]`);
    await page.waitForFunction(([s, o]) => Number(document.querySelector(s).dataset.op) > o + 100, [sec, before], { timeout: 20000 });
    await page.click(`${sec} button[data-action=play]`);
    check(!(await page.getAttribute(sec, 'data-playing')), 'paused');
    const played = await drawnOp();
    check(played > before, `playing moved from ${before} to ${played}`);
    await page.waitForTimeout(300);

    // The footprint plot drew (uPlot), with the points of the series.
    if (uplot) {
        check(await page.$(`${sec} [data-plot=bytes] canvas`), 'the footprint plot has a canvas');
        const pts = Number(await page.getAttribute(`${sec} [data-plot=bytes]`, 'data-points'));
        check(pts > 100, `the footprint plot has ${pts} points`);
        check(await page.$(`${sec} [data-plot=fragmentation] canvas`), 'the fragmentation plot has a canvas');
    } else {
        check((await page.textContent(`${sec} [data-plot=bytes]`)).includes('plots unavailable'), 'says plots are unavailable');
    }
    await page.locator(sec).screenshot({ path: h.shot('trace-whole') });

    // Zoom and pan: a button, a drag, a click on the overview (where the heap is full), then the
    // buttons until blocks are drawn one by one and wide enough to point at, and the wheel.
    const range = async () => page.evaluate((s) => document.querySelector(`${s} [data-k=range]`).textContent, sec);
    const mode = () => page.getAttribute(`${sec} .trace-map svg`, 'data-mode');
    const redrawn = (f) => redraw(page, sec, f, 10000);
    const r0 = await range();
    await redrawn(() => page.click(`${sec} button[data-action=zoom-in]`));
    check(await range() !== r0, 'the zoom button changed the range');
    const box = await page.locator(`${sec} .trace-map svg`).boundingBox();
    const r1 = await range();
    await redrawn(async () => {
        await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2);
        await page.mouse.down();
        await page.mouse.move(box.x + box.width * 0.4, box.y + box.height / 2, { steps: 5 });
        await page.mouse.up();
    });
    await page.waitForTimeout(300);
    check(await range() !== r1, 'dragging panned the map');
    // A bin inside a run of full ones (the heap is packed there).
    const occ = (await api('view', { op: played })).result.overview;
    const full = occ.findIndex((_, i) => i >= 4 && occ.slice(i - 4, i + 5).every((x) => x >= 950));
    check(full >= 0, 'the overview has a full stretch');
    const ob = await page.locator(`${sec} .trace-overview svg`).boundingBox();
    const centre = () => redrawn(() => page.mouse.click(ob.x + ((full + 0.5) / 1024) * ob.width, ob.y + ob.height / 2));
    await centre();
    // Blocks at least 10 px wide: enough of them to point at, their headers and padding drawn.
    const wide = () => page.evaluate((s) => [...document.querySelectorAll(`${s} .trace-map rect.blk`)]
        .filter((e) => e.getBoundingClientRect().width >= 10).length, sec);
    for (let i = 0; i < 24 && (await mode() !== 'blocks' || await wide() < 6); i++)
    {
        await redrawn(() => page.click(`${sec} button[data-action=zoom-in]`));
        await centre();
    }
    check(await mode() === 'blocks', 'zooming in shows blocks');
    const r2 = await range();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await redrawn(() => page.mouse.wheel(0, -200));
    await page.waitForTimeout(300);
    check(await range() !== r2, 'the wheel zoomed');

    // Hover a block: the tooltip names the block the API has there.
    const blk = await page.evaluate((s) => {
        const rects = [...document.querySelectorAll(`${s} .trace-map rect.blk`)];
        const all = rects.map((e) => ({ e, b: e.getBoundingClientRect() }));
        const wide = all.filter((x) => x.b.width >= 3);
        const r = wide[Math.floor(wide.length / 2)] || all.sort((a, b) => b.b.width - a.b.width)[0];
        return r ? { x: r.b.x + r.b.width / 2, y: r.b.y + r.b.height / 2, start: Number(r.e.dataset.start) } : null;
    }, sec);
    if (check(blk, 'a block is drawn')) {
        await page.mouse.move(blk.x, blk.y);
        await page.waitForSelector(`${sec} .trace-tip:not([hidden])`, { timeout: 5000 });
        const tipText = await page.textContent(`${sec} .trace-tip`);
        const at = await drawnOp();
        const view = (await api('view', { op: at, lo: blk.start, hi: blk.start + 1 })).result;
        const b = view.blocks.find((x) => x[0] === blk.start);
        if (check(b, `the API has a block at ${blk.start} at op ${at}`)) {
            const [start, size, header, req, op, bin] = b;
            check(tipText.includes(`block at offset ${start.toLocaleString('en-US')} (${size} B)`), `tooltip offset/size: ${tipText}`);
            check(tipText.includes(`requested ${req.toLocaleString('en-US')} B · header ${header} B · padding ${(size - header - req).toLocaleString('en-US')} B`), `tooltip header/padding: ${tipText}`);
            check(tipText.includes(`made by op ${op.toLocaleString('en-US')}`), `tooltip op: ${tipText}`);
            check(tipText.includes(view.bin_labels[bin]), `tooltip bin ${view.bin_labels[bin]}: ${tipText}`);
            check(header === 16, 'a TLSF block has a 16-byte header');
        }
        await page.locator(sec).screenshot({ path: h.shot('trace') });
        await page.mouse.move(0, 0);
    }

    // Closer: the wheel, over a small block, until it is a few KiB across, where headers and
    // padding show; the block stays under the pointer.
    const small = await page.evaluate((s) => {
        const rects = [...document.querySelectorAll(`${s} .trace-map rect.blk`)].map((e) => e.getBoundingClientRect())
            .filter((r) => r.width >= 1 && r.width <= 6);
        const r = rects[Math.floor(rects.length / 2)];
        return r ? { x: r.x + r.width / 2, y: r.y + r.height / 2 } : null;
    }, sec);
    if (check(small, 'small blocks are drawn')) {
        await page.mouse.move(small.x, small.y);
        for (let i = 0; i < 16; i++) await redrawn(() => page.mouse.wheel(0, -100));
        await page.mouse.move(small.x + 1, small.y);
        await page.waitForSelector(`${sec} .trace-tip:not([hidden])`, { timeout: 5000 });
        check(await page.$(`${sec} .trace-map rect.header`), 'headers are drawn up close');
        await page.locator(sec).screenshot({ path: h.shot('trace-detail') });
        await page.mouse.move(0, 0);
    }

    // Other heaps open too (buddy: no header; engine: no fragmentation series).
    for (const heap of ['buddy', 'engine']) {
        await page.selectOption(`${sec} select[aria-label=heap]`, heap);
        await page.waitForFunction(([s, h]) => document.querySelector(s).dataset.status === 'ready' &&
            document.querySelector(s).dataset.player === `openttd|${h}` && document.querySelector(`${s} .trace-map svg`), [sec, heap], { timeout: 60000 });
        st = (await api('state')).state;
        check(st.heap === heap && st.status === 'ready', `${heap} ready`);
    }
    await page.selectOption(`${sec} select[aria-label=heap]`, 'tlsf');
    await page.waitForFunction((s) => document.querySelector(s).dataset.status === 'ready' &&
        document.querySelector(s).dataset.player === 'openttd|tlsf', sec, { timeout: 60000 });
    await page.waitForTimeout(500);

    // No horizontal overflow at 480 and 1920 px; the plots follow the width.
    for (const w of [480, 1920]) {
        await page.setViewportSize({ width: w, height: 900 });
        await settle(page, 400);
        // This view's own elements stay inside the window (other sections are their tests' business).
        const over = await overflowing(page, sec);
        check(over.length === 0, `horizontal overflow at ${w}px: ${over.slice(0, 5).join(', ')}`);
        const page_over = (await pageOverflow(page)).over;
        if (page_over > 0) console.log(`note: the page overflows by ${page_over}px at ${w}px, outside the trace player`);
        const fits = await page.evaluate((s) => {
            const v = document.querySelector(`${s} .view`).getBoundingClientRect();
            return [...document.querySelectorAll(`${s} .uplot, ${s} svg`)].every((e) => e.getBoundingClientRect().right <= v.right + 1);
        }, sec);
        check(fits, `the map and plots fit the section at ${w}px`);
        await page.locator(sec).screenshot({ path: h.shot(`trace-${w}`) });
    }

    // --- review checks: responsive while preparing, one poll chain, plots not piling up ---------
    // A slow preparation (trickle into first-fit: seconds): the page keeps drawing frames and the
    // server keeps answering while it runs; switching heaps during it leaves one state poll going;
    // once ready, the section holds one set of plots however often it was opened.
    await page.setViewportSize({ width: 1200, height: 900 });
    let polls = 0;
    page.on('request', (r) => { if (r.url().endsWith('/api/trace/state')) polls++; });
    await page.selectOption(`${sec} select[aria-label=trace]`, 'trickle');
    for (const heap of ['buddy', 'engine', 'first_fit']) await page.selectOption(`${sec} select[aria-label=heap]`, heap);
    if ((await api('state')).state.status === 'preparing') {
        const frame = await page.evaluate(() => new Promise((done) => {
            const t = performance.now();
            requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t)));
        }));
        check(frame < 500, `frames drawn while preparing (two took ${Math.round(frame)} ms)`);
        const t0 = Date.now();
        await api('state');
        check(Date.now() - t0 < 500, `the server answers while preparing (${Date.now() - t0} ms)`);
        polls = 0;
        await page.waitForTimeout(2000);
        check(polls <= 30, `one state poll at a time while preparing: ${polls} in 2 s`);
    } else {
        console.log('note: trickle|first_fit was cached already; responsiveness not measured');
    }
    await page.selectOption(`${sec} select[aria-label=heap]`, 'buddy');
    await page.waitForFunction((s) => document.querySelector(s).dataset.status === 'ready' &&
        document.querySelector(s).dataset.player === 'trickle|buddy' && document.querySelector(`${s} .trace-map svg`), sec, { timeout: 120000 });
    await page.waitForTimeout(500);
    const uplots = await page.evaluate((s) => document.querySelectorAll(`${s} .uplot`).length, sec);
    check(uplots <= 2 && (!uplot || uplots === 2), `one set of plots after re-opening: ${uplots}`);
}, { ok: `live-trace: all checks passed; screenshots in ${shots}` });
