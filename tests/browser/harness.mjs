// The plumbing every browser test shares: arguments, Debian's Chromium, the failure list, the
// page listeners (console/page errors, failed requests, HTTP >= 400, off-origin requests) with
// expected-error allowances, waiting for the page, resizes, overflow checks, screenshots, the exit.
// Exports: CHROMIUM_ARGS, launchOptions, liveArgs, Harness, api, redraw, settle, pageOverflow, overflowing.
import { chromium } from 'playwright-core';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';

// Chromium's flags: headless, no sandbox (containers), and no network of its own (updates, sync, QUIC).
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// Playwright launch options for Debian's Chromium (CHROMIUM, or /usr/bin/chromium); downloads nothing.
export const launchOptions = (extra = {}) => ({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: CHROMIUM_ARGS, ...extra });

// `node X.test.mjs URL [SHOT_DIR]` (or LIVE_URL, SHOT_DIR) -> { url, shots, origin }; makes SHOT_DIR, exits 2 without a URL.
export function liveArgs() {
    const url = process.argv[2] || process.env.LIVE_URL;
    const shots = resolve(process.argv[3] || process.env.SHOT_DIR || 'build/release/live');
    if (!url) {
        console.error(`usage: node ${basename(process.argv[1])} URL [SHOT_DIR]`);
        process.exit(2);
    }
    mkdirSync(shots, { recursive: true });
    return { url, shots, origin: new URL(url).origin };
}

// One test's run: its browser, its failures, the allowances for errors a step provokes on purpose.
export class Harness {
    // `name` labels the summary line; `shots` is the screenshot folder (liveArgs().shots) or null.
    constructor(name, { shots = null } = {}) {
        this.name = name;
        this.shots = shots;
        this.failures = [];
        this.allowances = []; // { status, console: RegExp, failed } a step expects (see allowing())
        this.context = null;  // the persistent context (launch({ persistent: true }))
        this.browser = null;  // or the browser (launch({ persistent: false }))
        this.profile = null;  // the persistent context's tmpdir profile
        this.spare = null;    // the persistent context's first (blank) page, handed out by newPage() once
        this.local = null;    // which request URLs pages may fetch (setOrigin())
        this.fail = this.fail.bind(this);
        this.check = this.check.bind(this);
        this.same = this.same.bind(this);
    }

    // Records a failure (printed at once as "FAIL: msg"); the test exits 1 at run()'s end.
    fail(msg) { this.failures.push(msg); console.error('FAIL: ' + msg); }

    // Fails with `msg` unless `cond`; returns `cond`.
    check(cond, msg) { if (!cond) this.fail(msg); return cond; }

    // Fails unless `a` (what the page shows) and `b` (what it should) are equal as JSON; returns whether they are.
    same(a, b, msg) { return this.check(JSON.stringify(a) === JSON.stringify(b), `${msg}: page ${JSON.stringify(a)} != expected ${JSON.stringify(b)}`); }

    // The number of failures so far (to tell whether a step added one).
    get count() { return this.failures.length; }

    // Launches Chromium: a persistent context with a tmpdir profile (the live tests; 1200x900), or a
    // plain browser whose pages each get a viewport (persistent: false, the report test).
    async launch({ persistent = true, viewport = { width: 1200, height: 900 } } = {}) {
        if (persistent) {
            this.profile = mkdtempSync(join(tmpdir(), `strata-${this.name}-`));
            this.context = await chromium.launchPersistentContext(this.profile, launchOptions({ viewport }));
            this.spare = this.context.pages()[0] || null;
        } else {
            this.browser = await chromium.launch(launchOptions());
        }
        return this;
    }

    // A new page (the context's first blank page the first time) at `viewport` if given, watched (watch(page, local)).
    async newPage({ viewport, local = this.local } = {}) {
        let page;
        if (this.browser) {
            page = await this.browser.newPage(viewport ? { viewport } : {});
        } else {
            page = this.spare || await this.context.newPage();
            this.spare = null;
            if (viewport) await page.setViewportSize(viewport);
        }
        this.watch(page, local);
        return page;
    }

    // Fails on the page's console errors, page errors, failed requests, HTTP >= 400 and requests
    // `local(url)` refuses (default: off the origin open() saw), except what an allowance in force expects.
    watch(page, local) {
        const allowed = (f) => this.allowances.some(f);
        page.on('console', (m) => {
            if (m.type() === 'error' && !allowed((a) => a.console && a.console.test(m.text()))) this.fail('console error: ' + m.text());
        });
        page.on('pageerror', (e) => this.fail('page error: ' + e.message));
        page.on('requestfailed', (r) => { if (!allowed((a) => a.failed)) this.fail('request failed: ' + r.url()); });
        page.on('request', (r) => { if (local && !local(r.url())) this.fail('request leaves the page\'s origin: ' + r.url()); });
        page.on('response', (r) => {
            if (r.status() >= 400 && !allowed((a) => a.status === r.status())) this.fail(`HTTP ${r.status()} for ${r.url()}`);
        });
    }

    // Requests a page may make from now on: those to `origin` (open() sets the first URL's).
    setOrigin(origin) { this.local = (u) => u.startsWith(origin); }

    // Runs `f` with an allowance in force: { status: the HTTP status expected, console: RegExp of the
    // console error expected with it, failed: true when a request is expected to fail }; returns f's value.
    async allowing(allowance, f) {
        this.allowances.push(allowance);
        try {
            return await f();
        } finally {
            this.allowances.splice(this.allowances.indexOf(allowance), 1);
        }
    }

    // A new watched page at `url` (live: requests stay on its origin), loaded and ready (see ready()).
    async open(url, opts = {}) {
        if (!this.local) this.setOrigin(new URL(url).origin);
        const page = await this.newPage(opts);
        await page.goto(url, { waitUntil: 'load' });
        await this.ready(page, opts);
        return page;
    }

    // Waits until the page is ready (`ready`, a JS expression: default the live lab's
    // body[data-ready=1]) or shows an error (`error`, a selector: default .status.error); fails
    // when it is not ready, with the text of `status` (default #status) when there is one.
    async ready(page, { ready = "document.body.dataset.ready === '1'", error = '.status.error', status = '#status', timeout = 30000 } = {}) {
        await page.waitForFunction(`(${ready}) || !!document.querySelector(${JSON.stringify(error)})`, null, { timeout });
        if (!await page.evaluate(ready)) {
            const said = await page.evaluate((s) => (document.querySelector(s) || {}).textContent || '', status);
            this.fail(`the page did not finish loading: ${said}`);
        }
    }

    // SHOT_DIR/<name>.png.
    shot(name) { return join(this.shots, `${name}.png`); }

    // Runs one named step: an exception fails it as "name: message"; prints "ok   name" or "FAIL name".
    async step(name, f) {
        const before = this.count;
        try {
            await f();
        } catch (e) {
            this.fail(`${name}: ${e.message}`);
        }
        console.log(`${this.count === before ? 'ok  ' : 'FAIL'} ${name}`);
    }

    // Runs the test's body (an exception fails the test with its stack), closes the browser, removes
    // the profile and `cleanup` paths, prints the summary and exits: 1 on any failure, else 0.
    async run(body, { ok = `${this.name}: ok`, cleanup = [] } = {}) {
        try {
            await body();
        } catch (e) {
            this.fail(e && e.stack || String(e));
        } finally {
            if (this.context) await this.context.close();
            if (this.browser) await this.browser.close();
            for (const p of [this.profile, ...cleanup]) if (p) rmSync(p, { recursive: true, force: true });
        }
        if (this.failures.length) {
            console.error(`${this.name}: ${this.failures.length} failure(s)`);
            process.exit(1);
        }
        console.log(typeof ok === 'function' ? ok() : ok);
        process.exit(0);
    }
}

// POST /api/<demo>/<op> with the page's session (body[data-session]); returns the parsed answer.
export const api = (page, demo, op = 'state', args = {}) => page.evaluate(async ([d, o, a]) => {
    const r = await fetch(`/api/${d}/${o}`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ ...a, session: document.body.dataset.session }) });
    return r.json();
}, [demo, op, args]);

// Runs `f` (a click, a key) and waits until `section` (a selector) redraws: its data-rev changes.
export async function redraw(page, section, f, timeout = 60000) {
    const rev = await page.getAttribute(section, 'data-rev');
    await f();
    await page.waitForFunction(([s, r]) => document.querySelector(s).dataset.rev !== r, [section, rev], { timeout });
}

// Waits two frames and `ms`: a resize reaches the ResizeObserver, which redraws at the next frame.
export const settle = (page, ms = 50) => page.evaluate((t) => new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(res, t)))), ms);

// The page's width against the window's: { scroll, client, over } (over > 0: horizontal overflow).
export const pageOverflow = (page) => page.evaluate(() => {
    const e = document.scrollingElement || document.documentElement;
    return { scroll: e.scrollWidth, client: e.clientWidth, over: e.scrollWidth - e.clientWidth };
});

// The innermost elements in or of `scope` (a selector) past the window's right edge, as "tag.class in section#id (right)";
// with `scrollers`, not those clipped by a scroller that itself fits (a wide table scrolling in its box).
export const overflowing = (page, scope, { scrollers = false } = {}) => page.evaluate(([s, sc]) => {
    const client = document.documentElement.clientWidth;
    const clipped = (e) => {
        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement)
            if (/auto|hidden|scroll/.test(getComputedStyle(a).overflowX)) return a.getBoundingClientRect().right <= client + 0.5;
        return false;
    };
    const past = (e) => e.getBoundingClientRect().right > client + 0.5 && !(sc && clipped(e));
    const name = (e) => e.tagName.toLowerCase() + (e.getAttribute('class') ? '.' + e.getAttribute('class').trim().split(/\s+/).join('.') : '') +
        ' in section#' + (e.closest('section') || {}).id + ` (${Math.round(e.getBoundingClientRect().right)})`;
    return [...document.querySelectorAll(`:is(${s}), :is(${s}) *`)].filter((e) => past(e) && ![...e.children].some(past)).map(name);
}, [scope, scrollers]);
