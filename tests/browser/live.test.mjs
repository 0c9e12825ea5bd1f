// Headless-Chromium test of the live lab (strata-lab serve).
//   node live.test.mjs URL [SHOT_DIR]
// For each demo: perform its main action through the page (clicks, as a user would), then read the
// allocator's state from the API with the page's own session and check that the page shows exactly
// that. Fails (exit 1) on any mismatch, console error, page error or failed request. Screenshots:
// SHOT_DIR/<demo>.png per demo and SHOT_DIR/overview.png (the whole page).
// Launches Debian's Chromium (CHROMIUM or /usr/bin/chromium) with a persistent profile in a tmpdir.
import { Harness, api as apiOf, liveArgs, pageOverflow, redraw } from './harness.mjs';

const { url, shots } = liveArgs();
const h = new Harness('live lab browser test', { shots });
const { fail, check, same } = h;
await h.launch();
let page;
await h.run(async () => {
    // Watched by the harness: any console error, failed request or HTTP error fails, except where a
    // step expects one (h.allowing: the error answers and the session loss below).
    page = await h.open(url);

    // The allocator's state, from the API, with the page's session.
    const api = (demo, op = 'state', args = {}) => apiOf(page, demo, op, args);
    // Clicks `selector` inside the demo's section and waits for the section to redraw.
    const click = (demo, selector) => redraw(page, `section#${demo}`, () => page.click(`section#${demo} ${selector}`));
    // Presses `key` on the element `selector` inside the demo's section (focused as Tab would) and
    // waits for the section to redraw.
    const press = (demo, selector, key) => redraw(page, `section#${demo}`, async () => {
        await page.focus(`section#${demo} ${selector}`);
        await page.keyboard.press(key);
    });
    const msg = (demo) => page.textContent(`section#${demo} .msg[role=status]`);
    const fact = (demo, key) => page.textContent(`section#${demo} dd[data-k="${key}"]`);
    const rects = (demo, sel = 'svg.map rect[data-used]') => page.$$eval(`section#${demo} ${sel}`,
        (rs) => rs.map((r) => ({ offset: Number(r.dataset.offset), size: Number(r.dataset.size), used: r.dataset.used === 'true' })));
    const shot = (demo) => page.locator(`section#${demo}`).screenshot({ path: h.shot(demo) });
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
            // An allocation's search is drawn on the bitmaps as they were when it ran (before it).
            const pre = (await api('tlsf')).state;
            await click('tlsf', 'button[data-action=alloc]');
            const post = (await api('tlsf')).state;
            const onBits = (key) => page.$$eval(`section#tlsf [data-k~=${key}] .bit[data-sl]`,
                (bs) => bs.filter((b) => b.dataset.on === '1').map((b) => [Number(b.dataset.fl), Number(b.dataset.sl)]));
            const apiBits = (sl) => sl.flatMap((m, f) => Array.from({ length: 32 }, (_, s) => [f, s]).filter(([, s]) => (m >>> s) & 1));
            same(await onBits('search-bitmaps'), apiBits(pre.sl_bitmaps), 'tlsf: the search is drawn on the bitmaps before the allocation');
            same(await onBits('bitmaps'), apiBits(post.sl_bitmaps), 'tlsf: then the bitmaps after it');
            const ch = await page.$eval('section#tlsf [data-k~=search-bitmaps] .bit.chosen[data-sl]', (b) => [Number(b.dataset.fl), Number(b.dataset.sl), b.dataset.on]);
            same(ch[2], '1', 'tlsf: the chosen class is drawn as a non-empty list, as the search saw it');
            const newest = post.blocks.filter((b) => b.used).reduce((a, b) => (b.id > a.id ? b : a));
            same(await page.$$eval('section#tlsf rect.hit', (rs) => rs.map((r) => Number(r.dataset.offset))), [newest.offset],
                 'tlsf: the block the allocation got is outlined');
            await click('tlsf', 'rect.used');
            await page.fill('section#tlsf input[type=number]', '90');
            await click('tlsf', 'button[data-action=probe]');
            const a = await api('tlsf', 'probe', { size: 90 });
            const st = a.state;
            same(await rects('tlsf'), st.blocks.map((b) => ({ offset: b.offset, size: b.size, used: b.used })), 'tlsf blocks');
            const bits = await page.$$eval('section#tlsf [data-k~=bitmaps] .bit[data-sl]', (bs) => bs.map((b) => [Number(b.dataset.fl), Number(b.dataset.sl), Number(b.dataset.on)]));
            same(bits.filter((b) => b[2]).map((b) => [b[0], b[1]]),
                 bits.filter((b) => (st.sl_bitmaps[b[0]] >>> b[1]) & 1).map((b) => [b[0], b[1]]), 'tlsf second-level bitmaps');
            same(a.result.search.path, 'second-level', 'tlsf: the freed hole is found by the second-level scan');
            const chosen = await page.$eval('section#tlsf [data-k~=search-bitmaps] .bit.chosen[data-sl]', (b) => [Number(b.dataset.fl), Number(b.dataset.sl)]);
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
        async device() {
            const bars = () => page.$$eval('section#device svg.map rect[data-used]', (rs) => rs.map((r) => ({ block: Number(r.dataset.block),
                offset: Number(r.dataset.offset), size: Number(r.dataset.size), used: r.dataset.used === 'true', kind: r.dataset.kind })));
            const apiBars = (st) => st.blocks.flatMap((b) => b.blocks.map((a) => ({ block: b.index, offset: a.offset, size: a.size,
                used: a.used, kind: a.used ? a.kind : 'free' })));
            await page.fill('section#device input[type=number]', '65536');
            await page.selectOption('section#device select[aria-label=alignment]', '4096');
            await page.selectOption('section#device select[aria-label="resource kind"]', 'optimal');
            await click('device', 'button[data-action=alloc]');
            let st = (await api('device')).state;
            same(st.allocations.map((a) => [a.kind, a.size, a.offset % 4096]), [['optimal', 65536, 0]], 'device: one 64 KiB image, 4 KiB-aligned');
            await page.selectOption('section#device select[aria-label="resource kind"]', 'linear');
            await click('device', 'button[data-action=alloc-random]');
            same((await api('device')).state.live_allocations, 2, 'device: a random buffer too');
            await click('device', 'button[data-action=free]');
            same((await api('device')).state.live_allocations, 1, 'device: a random one freed');
            await click('device', 'button[data-action=fragment]');
            st = (await api('device')).state;
            check(st.check, 'device: the pool passes check() after fragment');
            check(st.fragmentation > 0, 'device: fragment leaves the free space in pieces');
            same(await bars(), apiBars(st), 'device: block maps after fragment');
            same(await page.$$eval('section#device path.ticks', (ps) => ps.map((t) => Number(t.dataset.pages))),
                 st.blocks.map((b) => b.size / st.granularity), 'device: one tick per granularity page');
            same(await fact('device', 'fragmentation'), (st.fragmentation * 100).toFixed(1) + '%', 'device: fragmentation');
            // Buffers and images never share a granularity page (neighbours in a block, by offset).
            for (const b of st.blocks) {
                const used = b.blocks.filter((a) => a.used);
                for (let i = 1; i < used.length; i++) {
                    const [l, r] = [used[i - 1], used[i]];
                    if (l.kind !== r.kind) check(Math.floor((l.offset + l.size - 1) / st.granularity) < Math.floor(r.offset / st.granularity),
                        `device: block ${b.index}: ${l.kind} @${l.offset} and ${r.kind} @${r.offset} share a page`);
                }
            }
            // Defragment: the first click plans a pass (arrows to reserved destinations), the second commits it.
            await click('device', 'button[data-action=defrag]');
            st = (await api('device')).state;
            check(st.pass_in_flight && st.moves.length > 0, 'device: the fragmented pool has moves to plan');
            same(await page.$$eval('section#device path.move', (ps) => ps.map((m) => [Number(m.dataset.srcBlock), Number(m.dataset.srcOffset),
                Number(m.dataset.dstBlock), Number(m.dataset.dstOffset)])), st.moves.map((m) => [m.src_block, m.src_offset, m.dst_block, m.dst_offset]),
                 'device: one arrow per planned move');
            same(await page.$$eval('section#device rect.reserved', (rs) => rs.length), st.moves.length, 'device: each destination reserved');
            same(await bars(), apiBars(st), 'device: block maps with a pass in flight');
            check(/commit/.test(await page.textContent('section#device button[data-action=defrag]')), 'device: the button now commits');
            await click('device', 'button[data-action=defrag]');
            const after = (await api('device')).state;
            check(after.check && !after.pass_in_flight, 'device: the pass is committed and the pool checks');
            same(Number(await fact('device', 'bytes_moved')), after.bytes_moved, 'device: bytes moved');
            same(after.bytes_moved, st.moves.reduce((n, m) => n + m.size, 0), 'device: bytes moved = the pass\'s moves');
            same(await page.$$eval('section#device rect.hit', (rs) => rs.map((r) => [Number(r.dataset.block), Number(r.dataset.offset)]).sort()),
                 after.committed.map((m) => [m.dst_block, m.dst_offset]).sort(), 'device: moved allocations outlined at their destination');
            same(await bars(), apiBars(after), 'device: block maps after the commit');
            await click('device', 'rect.used.clickable');
            same((await api('device')).state.live_allocations, after.live_allocations - 1, 'device: a click frees a block');
            check(/^free: #\d+/.test(await msg('device')), 'device: the free is described: ' + await msg('device'));
            // Commit one more pass and plan the next, so the screenshot shows the arrows.
            for (let i = 0; i < 3; i++) await click('device', 'button[data-action=defrag]');
            check(/^pass \d+ planned|^defragmentation done/.test(await msg('device')), 'device: the pass is described: ' + await msg('device'));
        },
        // race, latency and layout: tests/browser/live-measure.test.mjs.
    };
    for (const [name, run] of Object.entries(demos)) {
        await h.step(name, async () => {
            try {
                await page.locator(`section#${name}`).scrollIntoViewIfNeeded();
                await run();
            } finally {
                await shot(name).catch((e) => fail(`${name} screenshot: ${e.message}`));
            }
        });
    }
    // Behaviour across demos: ordering of answers, the keyboard, the handles' kept handle, buddy's
    // merged block, error answers that are not the API's JSON.
    const checks = {
        // act() (demos/common.js) against a fake API whose answers the test releases one by one.
        async 'answer order (unit)'() {
            const r = await page.evaluate(async () => {
                const { bind } = await import('/demos/common.js');
                const mk = (t) => document.createElement(t);
                const parts = { controls: mk('div'), facts: mk('dl'), msg: mk('div'), view: mk('div') };
                mk('section').append(parts.controls, parts.facts, parts.msg, parts.view);
                const pending = [];
                const ctx = { call: (demo, op, args) => new Promise((resolve, reject) => pending.push({ op, args, resolve, reject })) };
                const drawn = [];
                const { act, load } = bind(parts, ctx, 'fake', (st) => drawn.push(st.n));
                const tick = () => new Promise((res) => setTimeout(res, 0));
                // Never waits long: a page that sends what it should not fails the checks below, not by hanging.
                const within = (pr) => Promise.race([pr, new Promise((res) => setTimeout(res, 1000))]);
                const take = (f) => { const i = pending.findIndex(f); return i < 0 ? { resolve() {}, reject() {} } : pending.splice(i, 1)[0]; };
                const state = () => take((q) => q.op === 'state');
                const op = (n) => take((q) => q.op === 'op' && q.args.n === n);
                const answer = (n) => ({ ok: true, result: {}, state: { n } });
                const out = {};
                let l = load(); await tick(); state().resolve(answer(0)); await within(l);
                // Two clicks: the second is sent only once the first is answered.
                const a1 = act('op', { n: 1 }); const a2 = act('op', { n: 2 }); await tick();
                out.inFlightAfterTwoClicks = pending.length;
                op(1).resolve(answer(1)); await within(a1); await tick();
                out.secondSentAfterFirst = pending.length === 1 && pending[0].args.n === 2;
                op(2).resolve(answer(2)); await within(a2);
                // A reload answered first: the older operation's answer is dropped.
                const a3 = act('op', { n: 3 }); await tick();
                l = load(); await tick();
                state().resolve(answer(10)); await within(l);
                op(3).resolve(answer(3)); await within(a3);
                // An error that arrives after a newer picture is still shown.
                const a4 = act('op', { n: 4 }); await tick();
                l = load(); await tick();
                state().resolve(answer(11)); await within(l);
                op(4).reject(new Error('boom')); await within(a4);
                out.errorShown = parts.msg.textContent;
                // A click queued behind the request that ended in a session reset is not sent.
                const a5 = act('op', { n: 5 }); const a6 = act('op', { n: 6 }); await tick();
                l = load(); await tick();
                state().resolve(answer(12)); await within(l);
                op(5).reject(new Error('expired')); await within(a5); await within(a6); await tick();
                out.sentAfterReset = pending.length;
                for (const q of pending.splice(0)) q.resolve(answer(-1));
                out.drawn = drawn;
                return out;
            });
            same(r.inFlightAfterTwoClicks, 1, 'order: one request of a section in flight at a time');
            check(r.secondSentAfterFirst, 'order: the second click is sent after the first is answered');
            same(r.errorShown, 'boom', 'order: an error is shown even after a newer picture');
            same(r.sentAfterReset, 0, 'order: a click queued before a session reset is not sent');
            same(r.drawn, [0, 1, 2, 10, 11, 12], 'order: pictures drawn (an answer older than a reload is dropped)');
        },
        // Many clicks at once on the real server: the page ends showing the allocator's last state.
        async 'answer order (server)'() {
            await page.fill('section#slab input[type=number]', '1');
            const rev = Number(await page.getAttribute('section#slab', 'data-rev'));
            await page.evaluate(() => {
                const b = (a) => document.querySelector(`section#slab button[data-action=${a}]`);
                for (let i = 0; i < 8; i++) { b('alloc').click(); b('alloc').click(); b('free').click(); }
            });
            await page.waitForFunction((r) => Number(document.querySelector('section#slab').dataset.rev) >= r, rev + 24, { timeout: 60000 });
            const st = (await api('slab')).state;
            same(Number(await fact('slab', 'yours')), st.yours, 'order: slab objects held after 24 quick clicks');
            same(Number(await page.getAttribute('section#slab', 'data-rev')), rev + 24, 'order: one redraw per click');
        },
        async keyboard() {
            await click('pool', 'button[data-action=alloc]');
            const cells = await page.$$eval('section#pool .cell', (cs) => cs.map((c) => ({ live: c.dataset.live === 'true',
                role: c.getAttribute('role'), tab: c.getAttribute('tabindex'), label: c.getAttribute('aria-label') })));
            check(cells.filter((c) => c.live).every((c) => c.role === 'button' && c.tab === '0' && c.label),
                  'keyboard: live pool slots are focusable buttons with a label');
            check(cells.filter((c) => !c.live).every((c) => c.tab === null), 'keyboard: free pool slots are not in the tab order');
            // Tab from the Allocate button reaches the first live slot, drawn with a visible focus ring.
            await page.focus('section#pool button[data-action=alloc]');
            await page.keyboard.press('Tab');
            const focused = await page.evaluate(() => {
                const a = document.activeElement;
                return { slot: a.dataset.slot, live: a.dataset.live, outline: getComputedStyle(a).outlineStyle };
            });
            check(focused.live === 'true' && focused.outline !== 'none', `keyboard: Tab reaches a live pool slot, outlined (${JSON.stringify(focused)})`);
            const rev = await page.getAttribute('section#pool', 'data-rev');
            await page.keyboard.press('Enter');
            await page.waitForFunction((r) => document.querySelector('section#pool').dataset.rev !== r, rev);
            same((await api('pool')).state.slots[Number(focused.slot)].live, false, 'keyboard: Enter freed the focused pool slot');
            check(await page.evaluate(() => document.querySelector('section#pool').contains(document.activeElement)),
                  'keyboard: focus stays in the pool section after the redraw');
            // Buddy and TLSF blocks (SVG rects) and handle values: Space or Enter frees them.
            await click('buddy', 'button[data-action=alloc]');
            let ids = (await api('buddy')).state.blocks.filter((b) => b.used).length;
            check(await page.$eval('section#buddy rect.used', (r) => r.getAttribute('role') === 'button' && r.getAttribute('tabindex') === '0' &&
                  !!r.getAttribute('aria-label')), 'keyboard: buddy blocks are focusable buttons');
            await press('buddy', 'rect.used', ' ');
            same((await api('buddy')).state.blocks.filter((b) => b.used).length, ids - 1, 'keyboard: Space freed a buddy block');
            await click('tlsf', 'button[data-action=alloc]');
            ids = (await api('tlsf')).state.live_allocations;
            await press('tlsf', 'rect.clickable[role=button]', 'Enter');
            same((await api('tlsf')).state.live_allocations, ids - 1, 'keyboard: Enter freed a TLSF block');
            await click('handles', 'button[data-action=spawn]');
            ids = (await api('handles')).state.size;
            await press('handles', '[data-k=dense] .cell[role=button][tabindex="0"]', 'Enter');
            same((await api('handles')).state.size, ids - 1, 'keyboard: Enter freed a handle value');
        },
        // "Keep the newest handle" keeps the last spawn's handle, also after a swap-and-pop moved it.
        async 'handles keep'() {
            for (let i = 0; i < 3; i++) await click('handles', 'button[data-action=spawn]');
            let st = (await api('handles')).state;
            const newest = st.dense[st.dense.length - 1].handle;
            await click('handles', '[data-k=dense] .cell[data-index="0"]'); // the last value moves to index 0
            st = (await api('handles')).state;
            const last = st.dense[st.dense.length - 1].handle;
            check(last.index !== newest.index || last.generation !== newest.generation, 'handles keep: the last dense value is not the newest');
            await click('handles', 'button[data-action=keep]');
            same(await page.textContent('section#handles [data-k=kept]'), `kept handle: (index ${newest.index}, gen ${newest.generation})`,
                 'handles keep: the newest spawned handle is kept');
            await click('handles', 'button[data-action=use-kept]');
            check(/^get: ok/.test(await msg('handles')), 'handles keep: the kept live handle is accepted: ' + await msg('handles'));
            // No answer from the server: the page says so (no uncaught rejection: pageerror fails the test).
            await h.allowing({ failed: true, console: /ERR_|Failed to load/ }, async () => {
                await page.route('**/api/handles/**', (r) => r.abort('connectionrefused'));
                await click('handles', 'button[data-action=use-kept]');
                check(/no answer from the server/.test(await msg('handles')), 'handles keep: a network error is shown: ' + await msg('handles'));
                await page.unroute('**/api/handles/**');
            });
        },
        // buddy: after a free, only the block it merged into is outlined.
        async 'buddy merge'() {
            for (const b of (await api('buddy')).state.blocks) if (b.used) await api('buddy', 'free', { id: b.id });
            await page.fill('section#buddy input[type=number]', '64');
            for (let i = 0; i < 3; i++) await click('buddy', 'button[data-action=alloc]'); // @0, @64, @128
            const hits = () => page.$$eval('section#buddy rect.hit', (rs) => rs.map((r) => [Number(r.dataset.offset), Number(r.dataset.size)]));
            await click('buddy', 'rect.used[data-offset="64"]');
            same(await hits(), [[64, 64]], 'buddy merge: the freed block (its buddy is used) alone is outlined');
            await click('buddy', 'rect.used[data-offset="0"]');
            same(await hits(), [[0, 128]], 'buddy merge: the merged 128-byte block alone is outlined');
        },
        // An error answer that is not the API's JSON (a proxy's HTML page) is shown by its status.
        async 'error answers'() {
            await h.allowing({ status: 502, console: /502/ }, async () => {
                await page.route('**/api/arena/**', (r) => r.fulfill({ status: 502, contentType: 'text/html', body: '<html>Bad Gateway</html>' }));
                await click('arena', 'button[data-action=alloc]');
                same(await msg('arena'), '502 Bad Gateway', 'error answers: a 502 HTML page');
                await page.unroute('**/api/arena/**');
            });
        },
    };
    for (const [name, run] of Object.entries(checks)) {
        await h.step(name, async () => {
            try {
                await run();
            } finally {
                await page.unrouteAll().catch(() => {});
            }
        });
    }
    // The session expires (or is evicted) under the page: the next click starts a new session, every
    // section redraws from it, and the click is not replayed against the new session's blocks.
    await h.step('session loss', async () => {
        await page.locator('section#pool').scrollIntoViewIfNeeded();
        const old = await page.evaluate(() => document.body.dataset.session);
        check((await api('pool')).state.live > 0, 'session loss: the pool has live slots first');
        check(!/no kept/.test(await page.textContent('section#handles [data-k=kept]')), 'session loss: a handle is kept first');
        check(await page.$('section#tlsf [data-k=search]'), 'session loss: a TLSF search is shown first');
        await page.evaluate(async () => {
            await fetch('/api/session/close', { method: 'POST', body: JSON.stringify({ session: document.body.dataset.session }) });
        });
        await h.allowing({ status: 404, console: /404/ }, async () => {
            const slot = await page.getAttribute('section#pool .cell.live', 'data-slot');
            await click('pool', `.cell.live[data-slot="${slot}"]`);
            await page.waitForFunction(() => /expired/.test(document.querySelector('section#pool .msg').textContent));
        });
        const now = await page.evaluate(() => document.body.dataset.session);
        check(now && now !== old, 'session loss: a new session was started');
        for (const name of ['pool', 'arena', 'stack']) {
            const st = (await api(name)).state;
            same(Number(await fact(name, name === 'pool' ? 'live' : name === 'arena' ? 'in_use' : 'top')),
                 name === 'pool' ? st.live : name === 'arena' ? st.in_use : st.top, `session loss: ${name} redrawn from the new session`);
        }
        same(await page.$$eval('section#pool .cell.live', (cs) => cs.length), 0, 'session loss: no live pool slots drawn');
        // What the sections kept from the old session is gone with it.
        same(await page.textContent('section#handles [data-k=kept]'), 'no kept handle', 'session loss: the kept handle is forgotten');
        await click('handles', 'button[data-action=use-kept]');
        check(/no handle kept/.test(await msg('handles')), 'session loss: "Use the kept handle" says none is kept: ' + await msg('handles'));
        same(!!(await page.$('section#tlsf [data-k=search]')), false, 'session loss: the old heap\'s TLSF search is not shown');
    });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: h.shot('overview'), fullPage: true });
    await widths();

    // Every allocator demo at 480 and 1920 px on a page of its own (a new session): normal use,
    // refusals included (each answered 200 ok:false, shown as a refusal; the listeners above fail on
    // any 4xx or console error), no horizontal overflow, no overlapping neighbours in the control
    // bars, legends, facts and labels, maps that follow a resize; SHOT_DIR/<demo>-<width>.png.
    async function widths() {
        const refusedShown = async (demo, what) => {
            const m = await page.$eval(`section#${demo} .msg[role=status]`, (e) => ({ text: e.textContent, refused: e.classList.contains('refused') }));
            check(m.refused && m.text.length > 0, `${demo}: ${what} is shown as a refusal (${JSON.stringify(m)})`);
            return m.text;
        };
        const until = async (demo, f, max = 80) => { // clicks f() until the section shows a refusal
            for (let i = 0; i < max; i++) {
                await f();
                if (await page.$eval(`section#${demo} .msg[role=status]`, (e) => e.classList.contains('refused'))) return true;
            }
            return false;
        };
        // Clicks `selector` twice at once: the second click waits for the first, finds its block gone
        // and sends nothing (no stale id, no 400).
        const twice = async (demo, selector) => {
            const rev = Number(await page.getAttribute(`section#${demo}`, 'data-rev'));
            await page.$eval(`section#${demo} ${selector}`, (e) => { e.dispatchEvent(new MouseEvent('click', { bubbles: true })); e.dispatchEvent(new MouseEvent('click', { bubbles: true })); });
            await page.waitForFunction(([d, r]) => Number(document.querySelector(`section#${d}`).dataset.rev) >= r + 2, [demo, rev], { timeout: 30000 });
            check(/already free/.test(await msg(demo)), `${demo}: a double click frees once and says so: ${await msg(demo)}`);
        };
        const positions = (sel) => page.$$eval(sel, (es) => es.map((e) => { const r = e.getBoundingClientRect(); return [Math.round(r.x), Math.round(r.y)]; }));
        const steps = {
            async arena() {
                // A size the server would refuse as malformed (none, 0, a fraction) is not sent.
                for (const bad of ['', '0', '1.5']) {
                    await page.fill('section#arena input[type=number]', bad);
                    await click('arena', 'button[data-action=alloc]');
                    check(/size must be a whole number/.test(await refusedShown('arena', `the size "${bad}"`)), `arena: the size "${bad}" is not sent`);
                }
                await page.fill('section#arena input[type=number]', '4096');
                await click('arena', 'button[data-action=alloc]');
                await refusedShown('arena', 'a request past the end');
                await page.fill('section#arena input[type=number]', '100');
                await click('arena', 'button[data-action=alloc]');
            },
            async stack() {
                await click('stack', 'button[data-action=pop]');
                await refusedShown('stack', 'a pop of the empty stack');
                await click('stack', 'button[data-action=alloc]');
                const bar = 'section#stack .controls:not(.markers) > *';
                const before = await positions(bar);
                await click('stack', 'button[data-action=mark]');
                same(await positions(bar), before, 'stack: the control bar stays put as a rewind button appears');
                await click('stack', 'button[data-action=alloc]');
                const oldest = Math.min(...await page.$$eval('section#stack rect.clickable', (rs) => rs.map((r) => Number(r.dataset.offset))));
                await click('stack', `rect.clickable[data-offset="${oldest}"]`); // the older block: a stack frees LIFO
                check(/out of order/.test(await refusedShown('stack', 'an out-of-order free')), 'stack: the refusal says out of order');
                // Pop both, then rewind, clicked at once: the marker is gone when the rewind runs.
                const rev = Number(await page.getAttribute('section#stack', 'data-rev'));
                await page.evaluate(() => {
                    const b = (s) => document.querySelector(`section#stack button[data-action=${s}]`);
                    const rewind = b('rewind');
                    b('pop').click(); b('pop').click(); rewind.click();
                });
                await page.waitForFunction((r) => Number(document.querySelector('section#stack').dataset.rev) >= r + 3, rev, { timeout: 30000 });
                check(/gone/.test(await refusedShown('stack', 'a rewind to a marker the top fell below')), 'stack: the marker is gone');
                same(await positions(bar), before, 'stack: the control bar stays put as the rewind button goes');
                await click('stack', 'button[data-action=alloc]');
                await click('stack', 'button[data-action=mark]');
            },
            async pool() {
                check(await until('pool', () => click('pool', 'button[data-action=alloc]'), 40), 'pool: fills up');
                await refusedShown('pool', 'an allocation from a full pool');
                await twice('pool', '.cell.live');
            },
            async buddy() {
                await page.fill('section#buddy input[type=number]', '8192');
                await click('buddy', 'button[data-action=alloc]');
                await refusedShown('buddy', 'a request above the region');
                await page.fill('section#buddy input[type=number]', '100');
                for (let i = 0; i < 3; i++) await click('buddy', 'button[data-action=alloc]');
                await twice('buddy', 'rect.used');
            },
            async tlsf() {
                await page.fill('section#tlsf input[type=number]', '9000');
                await click('tlsf', 'button[data-action=alloc]');
                await refusedShown('tlsf', 'a request above the heap');
                await page.fill('section#tlsf input[type=number]', '100');
                for (let i = 0; i < 3; i++) await click('tlsf', 'button[data-action=alloc]');
                await twice('tlsf', 'rect.clickable');
                await click('tlsf', 'button[data-action=alloc]');
            },
            async slab() {
                await click('slab', 'button[data-action=free]');
                await refusedShown('slab', 'a free with nothing held');
                await click('slab', 'button[data-action=flush]');
                await refusedShown('slab', 'a flush with empty magazines');
                await page.fill('section#slab input[type=number]', '65');
                await click('slab', 'button[data-action=alloc]');
                check(/count must be/.test(await refusedShown('slab', 'a count above 64')), 'slab: the count 65 is not sent');
                await page.fill('section#slab input[type=number]', '64');
                await click('slab', 'button[data-action=alloc]');
                check(await until('slab', () => click('slab', 'button[data-action=alloc]'), 6), 'slab: fills up');
                await page.fill('section#slab input[type=number]', '60');
                await click('slab', 'button[data-action=free]');
            },
            async handles() {
                check(await until('handles', () => click('handles', 'button[data-action=spawn]'), 30), 'handles: fills up');
                await refusedShown('handles', 'a spawn into a full map');
                await twice('handles', '[data-k=dense] .cell[role=button]');
            },
            async device() {
                await click('device', 'button[data-action=free]');
                await refusedShown('device', 'a free with nothing live');
                await click('device', 'button[data-action=defrag]');
                await refusedShown('device', 'a defragmentation with nothing to move');
                await click('device', 'button[data-action=fragment]');
                const bar = 'section#device .controls > *';
                const before = await positions(bar);
                await click('device', 'button[data-action=defrag]');
                check(/commit/.test(await page.textContent('section#device button[data-action=defrag]')), 'device: a pass is planned');
                same(await positions(bar), before, 'device: the controls stay put as the defragment button\'s label changes');
                await click('device', 'button[data-action=defrag]');
                await page.fill('section#device input[type=number]', '1048576');
                check(await until('device', () => click('device', 'button[data-action=alloc]'), 8), 'device: the budget refuses');
                await refusedShown('device', 'an allocation past the budget');
                await page.fill('section#device input[type=number]', '65536');
                await twice('device', 'rect.used.clickable');
            },
        };
        // Pairs of neighbours (children of one box) whose boxes overlap: "a | b" labels.
        const overlaps = (demo) => page.$$eval(`section#${demo} :is(.controls, .legend, dl.facts, .mags, .mag, .bits .row, .bits .cells, .grid)`, (boxes) => {
            const out = [];
            for (const box of boxes) {
                const kids = [...box.children].filter((k) => getComputedStyle(k).display !== 'none').map((k) => [k, k.getBoundingClientRect()]);
                for (let i = 0; i < kids.length; i++) {
                    for (let j = i + 1; j < kids.length; j++) {
                        const [a, r] = kids[i], [b, q] = kids[j];
                        const w = Math.min(r.right, q.right) - Math.max(r.left, q.left), h = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
                        if (w > 0.5 && h > 0.5) out.push(`${a.textContent.slice(0, 24)} | ${b.textContent.slice(0, 24)}`);
                    }
                }
            }
            return out;
        });
        // Pairs of labels (elements holding text only) on one line less than 3 px apart: "a | b". In
        // the magazine column, the facts, the legends and the TLSF bitmap labels (the bits are cells, 2 px apart).
        const crowded = (demo) => page.$$eval(`section#${demo} :is([data-k=magazine], dl.facts, .legend, .bits)`, (boxes) => {
            const out = [];
            for (const box of boxes) {
                const leaves = [...box.querySelectorAll('*')].filter((e) => !e.children.length && !e.matches('.bit') && e.textContent.trim() && e.getClientRects().length)
                    .map((e) => [e, e.getBoundingClientRect()]);
                for (let i = 0; i < leaves.length; i++) {
                    for (let j = i + 1; j < leaves.length; j++) {
                        const [a, r] = leaves[i], [b, q] = leaves[j];
                        const h = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
                        const gap = Math.max(q.left - r.right, r.left - q.right);
                        if (h > 0.5 && gap < 3) out.push(`${a.textContent.slice(0, 24)} | ${b.textContent.slice(0, 24)}`);
                    }
                }
            }
            return out;
        });
        // Every map drawn at its section's width: its viewBox is the view's width, its box within it.
        const mapsFit = () => page.$$eval('section.demo:is(#arena, #stack, #buddy, #tlsf, #device) svg.map', (ss) => ss.map((s) => {
            const view = s.closest('.view');
            return { demo: s.closest('section').id, viewBox: s.viewBox.baseVal.width, view: Math.floor(view.clientWidth), box: s.getBoundingClientRect().width };
        }).filter((m) => Math.abs(m.viewBox - m.view) > 1 || m.box > m.view + 1));
        const main = page;
        for (const w of [480, 1920]) {
            page = await h.newPage({ viewport: { width: w, height: 1000 } });
            try {
                await page.goto(url, { waitUntil: 'load' });
                await h.ready(page);
                if (w === 480) await page.screenshot({ path: h.shot('page-480') });
                for (const [name, run] of Object.entries(steps)) {
                    await h.step(`${name} at ${w} px`, async () => {
                        try {
                            await page.locator(`section#${name}`).scrollIntoViewIfNeeded();
                            await run();
                            const o = await pageOverflow(page);
                            check(o.over <= 0, `${name} at ${w} px: the page overflows (${o.scroll} > ${o.client})`);
                            const hits = await overlaps(name);
                            check(hits.length === 0, `${name} at ${w} px: neighbours overlap: ${hits.slice(0, 5).join('; ')}`);
                            const close = await crowded(name);
                            check(close.length === 0, `${name} at ${w} px: labels run into each other: ${close.slice(0, 5).join('; ')}`);
                        } finally {
                            await page.locator(`section#${name}`).screenshot({ path: h.shot(`${name}-${w}`) }).catch((e) => fail(`${name}-${w} screenshot: ${e.message}`));
                        }
                    });
                }
                const bad = await mapsFit();
                check(bad.length === 0, `maps at ${w} px drawn at the wrong width: ${JSON.stringify(bad)}`);
                if (w === 1920) await h.step('resize: maps follow the window', async () => { // shrink the window, then widen it again
                    for (const to of [480, 1200]) {
                        await page.setViewportSize({ width: to, height: 1000 });
                        await page.waitForFunction(() => [...document.querySelectorAll('section.demo:is(#arena, #stack, #buddy, #tlsf, #device)')]
                            .every((s) => s.dataset.width === String(Math.floor(s.querySelector('.view').clientWidth))), null, { timeout: 10000 })
                            .catch(() => fail(`resize to ${to} px: a section did not redraw at its new width`));
                        const off = await mapsFit();
                        check(off.length === 0, `resize to ${to} px: maps keep the old width: ${JSON.stringify(off)}`);
                        const o = await pageOverflow(page);
                        check(o.over <= 0, `resize to ${to} px: the page overflows (${o.scroll} > ${o.client})`);
                    }
                });
            } finally {
                await page.close();
                page = main;
            }
        }
    }
}, { ok: () => `live lab browser test: ok (screenshots in ${shots})` });
