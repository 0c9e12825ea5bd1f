// Headless-Chromium test of the live lab (strata-lab serve).
//   node live.test.mjs URL [SHOT_DIR]
// For each demo: perform its main action through the page (clicks, as a user would), then read the
// allocator's state from the API with the page's own session and check that the page shows exactly
// that. Fails (exit 1) on any mismatch, console error, page error or failed request. Screenshots:
// SHOT_DIR/<demo>.png per demo and SHOT_DIR/overview.png (the whole page).
// Launches Debian's Chromium (CHROMIUM or /usr/bin/chromium) with a persistent profile in a tmpdir.
import { chromium } from 'playwright-core';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const url = process.argv[2] || process.env.LIVE_URL;
const shots = resolve(process.argv[3] || process.env.SHOT_DIR || 'build/release/live');
if (!url) {
    console.error('usage: node live.test.mjs URL [SHOT_DIR]');
    process.exit(2);
}
mkdirSync(shots, { recursive: true });

const failures = [];
const fail = (msg) => { failures.push(msg); console.error('FAIL: ' + msg); };
const check = (cond, msg) => { if (!cond) fail(msg); return cond; };
const same = (a, b, msg) => check(JSON.stringify(a) === JSON.stringify(b), `${msg}: page ${JSON.stringify(a)} != API ${JSON.stringify(b)}`);

const profile = mkdtempSync(join(tmpdir(), 'strata-live-'));
const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1200, height: 900 },
});
const origin = new URL(url).origin;
let page;
try {
    page = context.pages()[0] || await context.newPage();
    // The session-loss scenario at the end expects exactly one 404 (the old session) and its console line.
    let sessionLoss = false;
    page.on('console', (m) => {
        if (m.type() === 'error' && !(sessionLoss && /404/.test(m.text()))) fail('console error: ' + m.text());
    });
    page.on('pageerror', (e) => fail('page error: ' + e.message));
    page.on('requestfailed', (r) => fail('request failed: ' + r.url()));
    page.on('request', (r) => { if (!r.url().startsWith(origin)) fail('request leaves the server: ' + r.url()); });
    page.on('response', (r) => {
        if (r.status() >= 400 && !(sessionLoss && r.status() === 404)) fail(`HTTP ${r.status()} for ${r.url()}`);
    });
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForFunction(() => document.body.dataset.ready === '1' || document.querySelector('.status.error'), null, { timeout: 30000 });
    check(await page.evaluate(() => document.body.dataset.ready === '1'), 'the page did not finish loading: ' +
          await page.textContent('#status'));

    // Built without uPlot (no npm at configure time), the page says so instead of plotting.
    const uplot = await page.evaluate(async () => (await (await fetch('/api/info')).json()).uplot);
    if (!uplot) console.log('note: this strata-lab has no uPlot; checking the "plots unavailable" notes instead');
    // The allocator's state, from the API, with the page's session.
    const api = (demo, op = 'state', args = {}) => page.evaluate(async ([d, o, a]) => {
        const r = await fetch(`/api/${d}/${o}`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ ...a, session: document.body.dataset.session }) });
        return r.json();
    }, [demo, op, args]);
    // Clicks `selector` inside the demo's section and waits for the section to redraw.
    const click = async (demo, selector) => {
        const sec = `section#${demo}`;
        const rev = await page.getAttribute(sec, 'data-rev');
        await page.click(`${sec} ${selector}`);
        await page.waitForFunction(([s, r]) => document.querySelector(s).dataset.rev !== r, [sec, rev], { timeout: 60000 });
    };
    const fact = (demo, key) => page.textContent(`section#${demo} dd[data-k="${key}"]`);
    const rects = (demo, sel = 'svg.map rect[data-used]') => page.$$eval(`section#${demo} ${sel}`,
        (rs) => rs.map((r) => ({ offset: Number(r.dataset.offset), size: Number(r.dataset.size), used: r.dataset.used === 'true' })));
    const shot = async (demo) => {
        await page.locator(`section#${demo}`).screenshot({ path: join(shots, `${demo}.png`) });
    };
    const demos = {
        async arena() {
            await page.fill('section#arena input[type=number]', '100');
            await page.selectOption('section#arena select', '64');
            await click('arena', 'button[data-action=alloc]');
            await click('arena', 'button[data-action=alloc]');
            const st = (await api('arena')).state;
            same(Number(await fact('arena', 'head')), st.head, 'arena head');
            same(Number(await fact('arena', 'in_use')), st.in_use, 'arena in use');
            const used = (await rects('arena')).filter((r) => r.used);
            same(used.map((r) => r.offset), st.allocations.map((a) => a.offset), 'arena allocation offsets');
            check(st.allocations[1].offset % 64 === 0, 'arena: 64-aligned');
        },
        async stack() {
            await click('stack', 'button[data-action=alloc]');
            await click('stack', 'button[data-action=mark]');
            await click('stack', 'button[data-action=alloc]');
            await click('stack', 'button[data-action=alloc]');
            let st = (await api('stack')).state;
            same(Number(await fact('stack', 'top')), st.top, 'stack top before rewind');
            await click('stack', 'button[data-action=rewind]');
            st = (await api('stack')).state;
            same(Number(await fact('stack', 'top')), st.top, 'stack top after rewind');
            same(st.allocations.length, 1, 'stack: rewind freed the two above the marker');
            same(await page.$$eval('section#stack line.marker', (ls) => ls.map((l) => Number(l.dataset.marker))),
                 st.markers.map((m) => m.id), 'stack markers');
        },
        async pool() {
            for (let i = 0; i < 4; i++) await click('pool', 'button[data-action=alloc]');
            await click('pool', '.cell.live[data-slot="1"]');
            await click('pool', '.cell.live[data-slot="3"]');
            const st = (await api('pool')).state;
            const text = await page.textContent('section#pool [data-k=free_list]');
            same(text.replace('free list: head → ', '').replace(' → null', '').split(' → ').map(Number), st.free_list, 'pool free list');
            same(st.free_list.slice(0, 2), [3, 1], 'pool: freed slots on the front, newest first');
            same(await page.$$eval('section#pool .cell', (cs) => cs.map((c) => c.dataset.live === 'true')),
                 st.slots.map((s) => s.live), 'pool slot states');
        },
        async buddy() {
            await page.fill('section#buddy input[type=number]', '100');
            await click('buddy', 'button[data-action=alloc]');
            await click('buddy', 'button[data-action=alloc]');
            await click('buddy', 'rect.used');
            const st = (await api('buddy')).state;
            same(await rects('buddy'), st.blocks.map((b) => ({ offset: b.offset, size: b.size, used: b.used })), 'buddy blocks');
        },
        async tlsf() {
            await page.fill('section#tlsf input[type=number]', '100');
            await click('tlsf', 'button[data-action=alloc]');
            await page.fill('section#tlsf input[type=number]', '300');
            await click('tlsf', 'button[data-action=alloc]');
            await click('tlsf', 'button[data-action=alloc]');
            await click('tlsf', 'rect.used');
            await page.fill('section#tlsf input[type=number]', '90');
            await click('tlsf', 'button[data-action=probe]');
            const a = await api('tlsf', 'probe', { size: 90 });
            const st = a.state;
            same(await rects('tlsf'), st.blocks.map((b) => ({ offset: b.offset, size: b.size, used: b.used })), 'tlsf blocks');
            const bits = await page.$$eval('section#tlsf .bit[data-sl]', (bs) => bs.map((b) => [Number(b.dataset.fl), Number(b.dataset.sl), Number(b.dataset.on)]));
            same(bits.filter((b) => b[2]).map((b) => [b[0], b[1]]),
                 bits.filter((b) => (st.sl_bitmaps[b[0]] >>> b[1]) & 1).map((b) => [b[0], b[1]]), 'tlsf second-level bitmaps');
            same(a.result.search.path, 'second-level', 'tlsf: the freed hole is found by the second-level scan');
            const chosen = await page.$eval('section#tlsf .bit.chosen[data-sl]', (b) => [Number(b.dataset.fl), Number(b.dataset.sl)]);
            same(chosen, [a.result.search.chosen.fl, a.result.search.chosen.sl], 'tlsf chosen class');
        },
        async slab() {
            await click('slab', 'button[data-action=alloc]');
            await click('slab', 'button[data-action=alloc]');
            await page.fill('section#slab input[type=number]', '3');
            await click('slab', 'button[data-action=free]');
            const st = (await api('slab')).state;
            same(Number(await fact('slab', 'yours')), st.yours, 'slab: objects held');
            same(st.yours, 5, 'slab: 4 + 4 - 3 objects held');
            same(await page.$$eval('section#slab [data-k=slabs] > .row', (rs) => rs.map((r) => r.dataset.state)),
                 st.slabs.map((s) => s.state), 'slab rows');
            const holders = await page.$$eval('section#slab .cell[data-holder]', (cs) => cs.map((c) => c.dataset.holder).sort());
            same(holders, st.slabs.flatMap((s) => s.objects.map((o) => o.holder)).sort(), 'slab object holders');
            same(await fact('slab', 'loaded'), st.magazine.loaded ? `${st.magazine.loaded.count}/${st.magazine.loaded.capacity}` : '—',
                 'slab: the loaded magazine');
        },
        async handles() {
            for (let i = 0; i < 3; i++) await click('handles', 'button[data-action=spawn]');
            await page.click('section#handles button[data-action=keep]');
            await page.waitForFunction(() => !/no kept/.test(document.querySelector('section#handles [data-k=kept]').textContent));
            const kept = await page.textContent('section#handles [data-k=kept]');
            const [, index, gen] = kept.match(/index (\d+), gen (\d+)/);
            await click('handles', `[data-k=dense] .cell[data-handle="${index}:${gen}"]`);
            await click('handles', 'button[data-action=use-kept]');
            check(/rejected/.test(await page.textContent('section#handles .msg')), 'handles: the kept stale handle is rejected');
            const a = await api('handles', 'get', { handle: { index: Number(index), generation: Number(gen) } });
            same(a.ok, false, 'handles: the API rejects it too');
            same(await page.$$eval('section#handles [data-k=dense] .cell', (cs) => cs.map((c) => Number(c.dataset.value))),
                 a.state.dense.map((d) => d.value), 'handles: dense values');
            same(await page.$$eval('section#handles [data-k=sparse] .cell', (cs) => cs.map((c) => [Number(c.dataset.index), Number(c.dataset.generation), c.dataset.live === 'true'])),
                 a.state.sparse.map((x) => [x.index, x.generation, x.live]), 'handles: sparse slots');
        },
        async race() {
            await click('race', 'button[data-action=run]');
            if (!uplot) {
                check(await page.$('section#race .noplots'), 'race: says plots are unavailable');
                return;
            }
            await page.waitForSelector('section#race .plot[data-done="1"]', { timeout: 30000 });
            const st = (await api('race')).state;
            same(await page.$$eval('section#race [data-k=final] tr[data-name]', (rs) => rs.map((r) => [r.dataset.name, Number(r.lastChild.textContent)])),
                 st.runs.map((r) => [r.name, r.failures]), 'race: failures per allocator');
            check(await page.$('section#race .plot canvas'), 'race: the plot is drawn');
            same(await page.$$eval('section#race .u-legend .u-series', (s) => s.length), st.runs.length + 1, 'race: one series per allocator');
        },
        async latency() {
            await click('latency', 'button[data-action=run]');
            const st = (await api('latency')).state;
            same(Number(await fact('latency', 'samples')), st.samples, 'latency: samples');
            check(await page.$(uplot ? 'section#latency .plot canvas' : 'section#latency .noplots'), 'latency: the histogram is drawn');
            same(await page.$$eval('section#latency [data-k=percentiles] tr[data-name]', (rs) => rs.map((r) => r.dataset.name)),
                 st.runs.map((r) => r.name), 'latency: rows');
        },
        async layout() {
            await click('layout', 'button[data-action=run]');
            const st = (await api('layout')).state;
            same(Number(await fact('layout', 'aos_lines')), st.aos.lines, 'layout: AoS lines');
            same(Number(await fact('layout', 'soa_lines')), st.soa.lines, 'layout: SoA lines');
            same(st.aos.lines, 8 * st.soa.lines, 'layout: a 32-byte entity loads 8x the lines of a 4-byte column');
        },
    };
    for (const [name, run] of Object.entries(demos)) {
        const before = failures.length;
        try {
            await page.locator(`section#${name}`).scrollIntoViewIfNeeded();
            await run();
        } catch (e) {
            fail(`${name}: ${e.message}`);
        }
        await shot(name).catch((e) => fail(`${name} screenshot: ${e.message}`));
        console.log(`${failures.length === before ? 'ok  ' : 'FAIL'} ${name}`);
    }
    // The session expires (or is evicted) under the page: the next click starts a new session, every
    // section redraws from it, and the click is not replayed against the new session's blocks.
    {
        const before = failures.length;
        try {
            await page.locator('section#pool').scrollIntoViewIfNeeded();
            const old = await page.evaluate(() => document.body.dataset.session);
            check((await api('pool')).state.live > 0, 'session loss: the pool has live slots first');
            await page.evaluate(async () => {
                await fetch('/api/session/close', { method: 'POST', body: JSON.stringify({ session: document.body.dataset.session }) });
            });
            sessionLoss = true;
            const slot = await page.getAttribute('section#pool .cell.live', 'data-slot');
            await click('pool', `.cell.live[data-slot="${slot}"]`);
            await page.waitForFunction(() => /expired/.test(document.querySelector('section#pool .msg').textContent));
            sessionLoss = false;
            const now = await page.evaluate(() => document.body.dataset.session);
            check(now && now !== old, 'session loss: a new session was started');
            for (const name of ['pool', 'arena', 'stack']) {
                const st = (await api(name)).state;
                same(Number(await fact(name, name === 'pool' ? 'live' : name === 'arena' ? 'in_use' : 'top')),
                     name === 'pool' ? st.live : name === 'arena' ? st.in_use : st.top, `session loss: ${name} redrawn from the new session`);
            }
            same(await page.$$eval('section#pool .cell.live', (cs) => cs.length), 0, 'session loss: no live pool slots drawn');
        } catch (e) {
            fail(`session loss: ${e.message}`);
        }
        sessionLoss = false;
        console.log(`${failures.length === before ? 'ok  ' : 'FAIL'} session loss`);
    }
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(shots, 'overview.png'), fullPage: true });
} catch (e) {
    fail(e.stack || e.message);
} finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
}
if (failures.length) {
    console.error(`live lab browser test: ${failures.length} failure(s)`);
    process.exit(1);
}
console.log(`live lab browser test: ok (screenshots in ${shots})`);
