// Headless-Chromium test of the live lab's "Same requests, every allocator" section (compare).
//   node live-compare.test.mjs URL [SHOT_DIR]
// Types a script and runs it, moves the step slider, loads a built-in sequence; checks that six maps
// drew what the API says (the blocks at their offsets), that the refusal marks and messages appear,
// that at 480 and 1920 px nothing overflows the page horizontally; fails on a console error, a page
// error, a failed request or an HTTP error. Screenshots: SHOT_DIR/compare-{1200,480,1920}.png.
import { Harness, api as apiOf, liveArgs, overflowing, pageOverflow, redraw as redrawOf, settle } from './harness.mjs';

const { url, shots } = liveArgs();
const h = new Harness('live-compare', { shots });
const { check } = h;
await h.launch();
const sec = 'section#compare';
await h.run(async () => {
    const page = await h.open(url + '#compare');
    if (!check(await page.$(sec), 'no compare section')) throw new Error('no compare section');

    const api = (op = 'state', args = {}) => apiOf(page, 'compare', op, args);
    // Runs `f` (a click, a key) and waits until the section has redrawn.
    const redraw = (f) => redrawOf(page, sec, f, 30000);
    // The blocks each map drew ('b' segments: block -> offset), per lane, against the API's state.
    const sameMaps = async (what) => {
        const st = (await api()).state;
        const drawn = await page.$$eval(`${sec} .lane`, (cols) => cols.map((c) => ({
            name: c.dataset.lane,
            blocks: [...c.querySelectorAll('svg.map g[data-kind="b"]')].map((g) => [Number(g.dataset.block), Number(g.dataset.offset)]),
            segments: c.querySelectorAll('svg.map g[data-kind]').length,
            rects: c.querySelectorAll('svg.map rect').length,
        })));
        check(drawn.length === 6, `${what}: ${drawn.length} columns, not 6`);
        st.lanes.forEach((lane, i) => {
            const d = drawn[i] || { blocks: [], segments: 0, rects: 0 };
            check(d.name === lane.name, `${what}: column ${i} is ${d.name}, not ${lane.name}`);
            check(d.segments === lane.segments.length && d.rects >= d.segments, `${what}: ${lane.name} drew ${d.segments} segments, the API has ${lane.segments.length}`);
            const want = lane.segments.filter((s) => s[2] === 'b').map((s) => [s[3], s[0]]);
            check(JSON.stringify(d.blocks) === JSON.stringify(want), `${what}: ${lane.name} blocks ${JSON.stringify(d.blocks)} != API ${JSON.stringify(want)}`);
        });
        const step = Number(await page.textContent(`${sec} dd[data-k="step"]`));
        check(step === st.step, `${what}: the page shows step ${step}, the API ${st.step}`);
        return st;
    };

    // 1. Type a script and run it.
    const script = 'a 100; a 30; f 1; a 64 align 16\nx = a 600\nf x; a 3000\nr';
    await page.fill(`${sec} textarea.script`, script);
    await page.selectOption(`${sec} select[aria-label^="buffer"]`, '4096');
    await page.fill(`${sec} input[aria-label="pool slot size"]`, '64');
    await redraw(() => page.click(`${sec} button[data-action=run]`));
    let st = await sameMaps('after run');
    check(st.steps === 8 && st.step === 8, `run: steps ${st.steps}, step ${st.step}`);
    check(await page.inputValue(`${sec} input[type=range]`) === '8', 'the slider is at the last step');
    // The refusals: marks in the strip and in the columns (the arena and the stack cannot free block 1).
    const marks = await page.$$eval(`${sec} .refusal-mark`, (ms) => ms.map((m) => [Number(m.dataset.step), Number(m.dataset.lane)]));
    check(marks.some(([s, l]) => s === 3 && l === 0) && marks.some(([s, l]) => s === 3 && l === 1),
        'refusal marks for the arena and the stack at step 3: ' + JSON.stringify(marks));
    const stackList = await page.$$eval(`${sec} .lane[data-lane="stack"] ol.refusals li`, (ls) => ls.map((l) => l.textContent));
    check(stackList.some((t) => /out of order/.test(t)), 'the stack column lists its out-of-order refusal: ' + JSON.stringify(stackList));
    const listed = async (lane) => page.$$eval(`${sec} .lane[data-lane="${lane}"] ol.refusals li`, (ls) => ls.map((l) => `${l.value}: ${l.textContent}`));
    const poolList = await listed('pool');
    check(poolList.some((t) => /^1: 100 B is above the pool's slot size \(64 B\)/.test(t)) &&
          poolList.some((t) => /^3: nothing to free/.test(t)), 'the pool column lists its slot refusals: ' + JSON.stringify(poolList));
    const buddyList = await listed('buddy');
    check(buddyList.some((t) => /^7: out of memory/.test(t)), 'the buddy column lists its out-of-memory refusal: ' + JSON.stringify(buddyList));
    check((await api()).state.pool_slot === 64, 'the pool slot chosen on the page');

    // 2. Move the slider to step 3 (the refused free): the columns say so.
    await redraw(async () => {
        await page.$eval(`${sec} input[type=range]`, (r) => { r.value = '3'; r.dispatchEvent(new Event('input', { bubbles: true })); });
    });
    st = await sameMaps('step 3');
    check(st.step === 3, 'slider: step 3 shown');
    const out = await page.textContent(`${sec} .lane[data-lane="arena"] [data-k=outcome]`);
    check(/refused/.test(out) && /frees in bulk/.test(out), 'the arena column says why it refused: ' + out);
    check(/ok/.test(await page.textContent(`${sec} .lane[data-lane="tlsf"] [data-k=outcome]`)), 'TLSF freed block 1');
    const tlsfHeaders = await page.$$eval(`${sec} .lane[data-lane="tlsf"] svg.map g[data-kind="h"]`, (g) => g.length);
    check(tlsfHeaders === 1, `TLSF draws the header of its one live block (${tlsfHeaders})`);
    const hover = await page.$eval(`${sec} .lane[data-lane="buddy"] svg.map g[data-kind="b"] title`, (t) => t.textContent);
    check(/^block 2: block, 30 B at offset/.test(hover), 'a block names itself on hover: ' + hover);
    await redraw(() => page.click(`${sec} button[data-action=next]`));
    check((await sameMaps('next')).step === 4, 'the next button: step 4');
    await page.locator(sec).screenshot({ path: h.shot('compare-1200') });

    // 3. A malformed script: the server's 400 names the place, the page selects it and keeps the
    // last good run on screen.
    await h.allowing({ status: 400, console: /400/ }, async () => {
        await page.fill(`${sec} textarea.script`, 'a 10\nf 7');
        await redraw(() => page.click(`${sec} button[data-action=run]`));
    });
    const said = await page.textContent(`${sec} .msg[role=status]`);
    check(/^line 2, column 3: block 7 is not allocated yet/.test(said), 'the parse error is shown: ' + said);
    const sel = await page.$eval(`${sec} textarea.script`, (t) => [t.selectionStart, t.dataset.error]);
    check(sel[0] === 7 && sel[1] === '7', 'the error\'s place is selected: ' + JSON.stringify(sel));
    check((await api()).state.steps === 8, 'a malformed script leaves the last run in place');

    // 4. Load a built-in sequence.
    await page.selectOption(`${sec} select[aria-label="recorded sequence"]`, 'fragmenting');
    await redraw(() => page.click(`${sec} button[data-action=load]`));
    st = await sameMaps('fragmenting');
    check((await page.inputValue(`${sec} textarea.script`)).startsWith('# many small'), 'the sequence is in the script box');
    check(st.steps > 20, 'the sequence has its steps');
    const bigRefused = await page.$$eval(`${sec} .refusal-mark[data-step="${st.steps}"]`, (ms) => ms.length);
    check(bigRefused >= 3, `the one big block is refused by several allocators (${bigRefused})`);

    // 5. Widths: no horizontal overflow; the maps follow the columns.
    for (const width of [480, 1920]) {
        await page.setViewportSize({ width, height: 1000 });
        await settle(page, 300);
        // Nothing in this section reaches past the window (other sections are their own tests').
        const wide = await overflowing(page, sec);
        check(wide.length === 0, `${width} px: horizontal overflow: ${wide.slice(0, 3).join(', ')}`);
        const doc = (await pageOverflow(page)).over;
        if (doc > 0) console.log(`note: at ${width} px the page is ${doc} px wider than the window (outside this section)`);
        const fit = await page.$$eval(`${sec} .lane`, (cols) => cols.map((c) => {
            const svgEl = c.querySelector('svg.map');
            return { lane: c.getBoundingClientRect(), map: svgEl.getBoundingClientRect(), w: Number(svgEl.getAttribute('width')) };
        }));
        for (const f of fit) {
            check(f.map.right <= f.lane.right + 1, `${width} px: a map leaves its column`);
            check(Math.abs(f.w - f.map.width) <= 16, `${width} px: a map drawn ${f.w} px wide shows ${Math.round(f.map.width)} px (not redrawn at the column's width)`);
        }
        const rows = new Set(fit.map((f) => Math.round(f.lane.top)));
        if (width === 1920) check(rows.size === 1 || fit[0].lane.width >= 160, `1920 px: columns ${rows.size} rows`);
        await page.locator(sec).screenshot({ path: h.shot(`compare-${width}`) });
    }
    // The docs' picture: 1200 px.
    await page.setViewportSize({ width: 1200, height: 900 });
    await settle(page, 300);
    await redraw(async () => {
        await page.$eval(`${sec} input[type=range]`, (r) => { r.value = String(r.max); r.dispatchEvent(new Event('input', { bubbles: true })); });
    });
    await page.locator(sec).screenshot({ path: h.shot('compare') });

    // --- review checks: text beyond ASCII in a script ----------------------------------------------
    // A character outside the grammar is quoted whole in the 400's message (no U+FFFD from a cut
    // UTF-8 sequence), and the page selects it; a comment may hold any text.
    await page.fill(`${sec} textarea.script`, 'a 16 # é ok\na 32 é');
    await h.allowing({ status: 400, console: /400/ }, () => redraw(() => page.click(`${sec} button[data-action=run]`)));
    const uni = await page.textContent(`${sec} .msg[role=status]`);
    check(/^line 2, column 6: .*'é'/.test(uni) && !uni.includes('\ufffd'), 'a non-ASCII character is quoted whole: ' + uni);
    const at = await page.$eval(`${sec} textarea.script`, (t) => t.value.slice(t.selectionStart, t.selectionEnd));
    check(at === 'é', `the character is selected: '${at}'`);
});
