// Headless-Chromium test of the live lab's measuring demos (race, latency, layout).
//   node live-measure.test.mjs URL [SHOT_DIR]
// Runs each from the page, then reads its state from the API with the page's session and checks
// that the page shows it: the charts drew (canvases, legends), the tables' rows and numbers, the
// frame-budget column; plots.js's axes (binary byte ticks, nines); no console errors, no 4xx; at
// 480 and 1920 px wide no horizontal overflow and plots as wide as their box. Screenshots:
// SHOT_DIR/measure-<demo>-<width>.png, and SHOT_DIR/live-latency.png (1200 px, for the docs).
import { Harness, api as apiOf, liveArgs, overflowing, pageOverflow, redraw, settle as settleOf } from './harness.mjs';

const { url, shots } = liveArgs();
const h = new Harness('live lab measuring demos', { shots });
const { check, same } = h;
await h.launch();
await h.run(async () => {
    const page = await h.open(url);
    const uplot = await page.evaluate(async () => (await (await fetch('/api/info')).json()).uplot);
    if (!uplot) console.log('note: this strata-lab has no uPlot; checking the "plots unavailable" notes instead');

    const api = (demo, op = 'state', args = {}) => apiOf(page, demo, op, args);
    const click = (demo, selector) => redraw(page, `section#${demo}`, () => page.click(`section#${demo} ${selector}`));
    const fact = (demo, key) => page.textContent(`section#${demo} dd[data-k="${key}"]`);
    const rows = (demo, k) => page.$$eval(`section#${demo} [data-k=${k}] tr[data-name]`,
        (rs) => rs.map((r) => [...r.children].map((c) => c.textContent)));
    const legend = (demo) => page.$$eval(`section#${demo} .u-legend .u-series`, (s) => s.map((e) => e.textContent.trim()));
    // Waits two frames: a resize reaches the ResizeObserver, which resizes the plots at the next frame.
    const settle = () => settleOf(page);

    const checks = {
        // plots.js, unit by unit, in the page.
        async 'plots.js axes'() {
            const r = await page.evaluate(async () => {
                const m = await import('/plots.js');
                return {
                    splits256: m.byteSplits(0, 256 * 1024, 5).map(m.formatBytes),
                    splits100: m.byteSplits(0, 100 * 1024, 6).map(m.formatBytes),
                    fmt: [0, 512, 1024, 1536, 65536, 3 << 20].map(m.formatBytes),
                    ns: [8, 16.6, 999, 1000, 16600, 2.5e6].map(m.formatNs),
                    nines: [0, 50, 90, 99, 99.9, 99.99].map((p) => m.ninesLabel(m.nines(p))),
                    decades: m.decadeSplits(1, 1e4),
                };
            });
            same(r.splits256, ['0', '64 KiB', '128 KiB', '192 KiB', '256 KiB'], 'byte ticks of a 256 KiB axis');
            same(r.splits100, ['0', '32 KiB', '64 KiB', '96 KiB'], 'byte ticks of a 100 KiB axis');
            same(r.fmt, ['0', '512 B', '1 KiB', '1.5 KiB', '64 KiB', '3 MiB'], 'formatBytes');
            same(r.ns, ['8 ns', '16.6 ns', '999 ns', '1 µs', '16.6 µs', '2.5 ms'], 'formatNs');
            same(r.nines, ['min', 'p50', 'p90', 'p99', 'p99.9', 'p99.99'], 'nines labels');
            same(r.decades, [1, 10, 100, 1000, 10000], 'decade ticks');
        },
        async race() {
            await click('race', 'button[data-action=run]');
            if (uplot) await page.waitForSelector('section#race .plot[data-done="1"]', { timeout: 30000 });
            const st = (await api('race')).state;
            const pct = (f) => (100 * f).toFixed(1) + '%';
            same((await rows('race', 'final')).map((c) => [c[0], c[2], c[3], c[5]]),
                 st.runs.map((r) => [r.name, pct(r.mean_fragmentation), pct(r.final_fragmentation), String(r.failures)]), 'race: table rows');
            for (const r of st.runs) {
                check(r.fragmentation.every((f) => f >= 0 && f <= 1), `race: ${r.name} fragmentation within [0, 1]`);
                check(r.in_use.some((v) => v > 0), `race: ${r.name} holds bytes at some point`);
            }
            if (uplot) {
                same(await page.$$eval('section#race .plot canvas', (c) => c.length), 2, 'race: two plots (in use, fragmentation)');
                same((await legend('race')).length, st.runs.length + 1, 'race: one legend row per allocator');
                check((await legend('race')).slice(1).every((t, i) => t.startsWith(st.runs[i].name)), 'race: legend names');
            } else {
                check(await page.$('section#race .noplots'), 'race: says plots are unavailable');
            }
        },
        async latency() {
            await click('latency', 'button[data-action=run]');
            const st = (await api('latency')).state;
            same(Number(await fact('latency', 'samples')), st.samples, 'latency: samples');
            const names = st.runs.map((r) => r.name);
            for (const n of ['malloc', 'mimalloc', 'engine heap', 'tlsf', 'arena'])
                check(names.includes(n) || st.skipped.some((s) => s.name === n), `latency: ${n} measured or its absence explained`);
            same(await page.$$eval('section#latency [data-k=skipped]', (s) => s.map((e) => e.dataset.name)), st.skipped.map((s) => s.name), 'latency: skipped peers noted');
            const table = await rows('latency', 'percentiles');
            same(table.map((c) => c[0]), names, 'latency: rows');
            // The budget column, against the API's curves: 60 fps and 1000 allocations (16.7 µs), then 120 fps and 10000 (833 ns).
            const crossing = (cdf, b) => {
                const i = cdf.findIndex(([, ns]) => ns > b);
                return i < 0 ? 'never' : i === 0 ? 'every call' : 'p' + cdf[i - 1][0];
            };
            const expectCross = async (budget, what) => {
                const shown = await page.$$eval('section#latency [data-k=percentiles] td[data-k=crossing]', (t) => t.map((e) => e.textContent));
                st.runs.forEach((r, i) => {
                    const want = crossing(r.cdf, budget);
                    const ok = want.startsWith('p') ? shown[i].startsWith('p') && Math.abs(Number(shown[i].slice(1)) - Number(want.slice(1))) < 0.01 : shown[i] === want;
                    check(ok, `latency: ${r.name} crosses the ${what} budget at ${want}, page says ${shown[i]}`);
                });
            };
            same(await fact('latency', 'budget_ns'), '16.7 µs', 'latency: default budget');
            await expectCross(1e6 * (1000 / 60) / 1000, '16.7 µs');
            await page.selectOption('section#latency select[title="frame time"]', { index: 2 });
            await page.selectOption('section#latency select[title="allocations per frame"]', '10000');
            same(await fact('latency', 'budget_ns'), '833 ns', 'latency: budget after the change');
            await expectCross(1e6 * (1000 / 120) / 10000, '833 ns');
            if (uplot) {
                same(await page.$$eval('section#latency .plot canvas', (c) => c.length), 2, 'latency: histogram and percentile plots');
                same((await legend('latency')).length, 2 * (st.runs.length + 1) + 1, 'latency: legend rows (both plots, and the budget)');
            }
            await page.selectOption('section#latency select[title="frame time"]', { index: 0 });
            await page.selectOption('section#latency select[title="allocations per frame"]', '1000');
        },
        async layout() {
            await click('layout', 'button[data-action=run]');
            const st = (await api('layout')).state;
            same(Number(await fact('layout', 'aos_lines')), st.aos.lines, 'layout: AoS lines');
            same(Number(await fact('layout', 'soa_lines')), st.soa.lines, 'layout: SoA lines');
            same(await page.$$eval('section#layout [data-k=aos] [data-bytes], section#layout [data-k=soa] [data-bytes]', (b) => b.map((e) => Number(e.dataset.bytes))),
                 [st.aos.bytes_loaded, st.soa.bytes_loaded], 'layout: bars');
        },
        async widths() {
            for (const width of [480, 1920]) {
                await page.setViewportSize({ width, height: 1000 });
                await settle();
                // The elements that reach past the right edge, innermost first: what to fix. A wide
                // table scrolling in a box that fits does not count. These demos' sections must fit;
                // another section's overflow is that section's (noted).
                const mine = await overflowing(page, 'section#race, section#latency, section#layout', { scrollers: true });
                check(mine.length === 0, `${width} px: the measuring demos overflow horizontally: ${mine.slice(0, 5).join(', ')}`);
                const o = await pageOverflow(page);
                if (o.over > 0) console.log(`note: ${width} px: the page is ${o.scroll} px wide, from other sections: ${(await overflowing(page, 'body', { scrollers: true })).slice(0, 3).join(', ')}`);
                if (uplot) {
                    const sizes = await page.$$eval('section#race .plot, section#latency .plot', (bs) => bs.map((b) => {
                        const c = b.querySelector('.uplot');
                        return { k: b.closest('section').id + '/' + b.dataset.k, box: b.clientWidth, plot: c ? c.getBoundingClientRect().width : -1 };
                    }));
                    for (const s of sizes) check(s.plot > 0 && Math.abs(s.plot - s.box) <= 2, `${width} px: ${s.k} is ${s.plot} px wide in a ${s.box} px box`);
                }
                for (const demo of ['race', 'latency', 'layout']) {
                    await page.locator(`section#${demo}`).screenshot({ path: h.shot(`measure-${demo}-${width}`) });
                }
            }
            await page.setViewportSize({ width: 1200, height: 900 });
            await settle();
            await page.locator('section#latency').screenshot({ path: h.shot('live-latency') });
        },
    };
    for (const [name, f] of Object.entries(checks)) await h.step(name, f);
}, { ok: `live lab measuring demos: ok (screenshots in ${shots})` });
