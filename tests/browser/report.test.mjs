// Headless-Chromium test of a strata-lab HTML report.
//   node report.test.mjs REPORT.html [SCREENSHOT.png]
// (or REPORT / SCREENSHOT in the environment; the screenshot defaults to build/report-screenshot.png,
// relative to the current directory). Fails (exit 1) on any console error, page error, failed or
// non-file request, a plot that drew nothing, a missing caption, or a plot count other than the
// embedded JSON implies. Uses Debian's Chromium (CHROMIUM or /usr/bin/chromium); downloads nothing.
import { chromium } from 'playwright-core';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const reportPath = resolve(process.argv[2] || process.env.REPORT || '');
const shotPath = resolve(process.argv[3] || process.env.SCREENSHOT || 'build/report-screenshot.png');
if (!process.argv[2] && !process.env.REPORT) {
    console.error('usage: node report.test.mjs REPORT.html [SCREENSHOT.png]');
    process.exit(2);
}

const failures = [];
const fail = (msg) => { failures.push(msg); console.error('FAIL: ' + msg); };
const html = readFileSync(reportPath, 'utf8');

// Static checks: one file, nothing fetched.
if (/https?:\/\//.test(html)) fail('the report contains an http(s) URL');
if (/\s(src|href)\s*=\s*["'](?!#)/i.test(html)) fail('the report refers to another file (src=/href=)');

// What the JSON implies: per workload a histogram and a tail plot, a footprint plot when any allocator
// has a footprint series, a largest-free plot when any has one; one plot per bars entry; one layout;
// one RSS-over-time plot when there are phase lines (report --rss).
const m = html.match(/<script type="application\/json" id="strata-data">([\s\S]*?)<\/script>/);
if (!m) { fail('no embedded JSON'); }
const data = m ? JSON.parse(m[1]) : { workloads: [] };
const has = (w, k) => w.allocators.some(a => a.series && Array.isArray(a.series[k]) && a.series[k].length);
let expected = 0;
for (const w of data.workloads || []) expected += 2 + (has(w, 'footprint') ? 1 : 0) + (has(w, 'largest_free') ? 1 : 0);
expected += (data.bars || []).length + (data.layout ? 1 : 0) +
    ((data.rss || []).some(r => r && Array.isArray(r.rss_frames_kib)) ? 1 : 0);

const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('console', (msg) => { if (msg.type() === 'error') fail('console error: ' + msg.text()); });
    page.on('pageerror', (err) => fail('page error: ' + err.message));
    page.on('request', (req) => { if (!req.url().startsWith('file:') && !req.url().startsWith('data:')) fail('network request: ' + req.url()); });
    page.on('requestfailed', (req) => fail('request failed: ' + req.url()));
    await page.goto(pathToFileURL(reportPath).href, { waitUntil: 'load' });
    await page.waitForFunction(() => document.body.hasAttribute('data-rendered') || document.querySelector('.error'),
                               null, { timeout: 15000 });

    const plots = await page.$$eval('figure.plot', (figs) => figs.map((f) => {
        const svg = f.querySelector('svg');
        const marks = svg ? svg.querySelectorAll('g.series path, g.series rect, g.series circle').length : 0;
        const box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
        const cap = f.querySelector('figcaption');
        return {
            title: (f.querySelector('h3') || {}).textContent || '(untitled)',
            svg: !!svg, marks, w: box.width, h: box.height,
            caption: cap ? cap.textContent.trim().length : 0,
            legend: f.querySelectorAll('.legend > span').length,
        };
    }));
    if (plots.length !== expected) fail(`${plots.length} plots rendered, the JSON implies ${expected}`);
    for (const p of plots) {
        if (!p.svg) fail(`${p.title}: no svg`);
        else if (p.marks === 0) fail(`${p.title}: no drawn marks`);
        if (p.w < 100 || p.h < 50) fail(`${p.title}: svg is ${p.w}x${p.h}`);
        if (p.caption < 40) fail(`${p.title}: no (or a too short) caption`);
        if (p.legend === 0) fail(`${p.title}: no legend`);
    }
    // Every workload has a summary table row per allocator, and every name shows up.
    const text = await page.evaluate(() => document.body.innerText);
    for (const w of data.workloads || []) {
        if (!text.includes(w.name)) fail(`workload ${w.name} not shown`);
        const rows = await page.$$eval(`section.workload[data-name="${w.name}"] table.summary tbody tr`, (r) => r.length);
        if (rows !== w.allocators.length) fail(`${w.name}: ${rows} summary rows for ${w.allocators.length} allocators`);
        for (const a of w.allocators) if (!text.includes(a.name)) fail(`allocator ${a.name} not shown`);
    }
    mkdirSync(dirname(shotPath), { recursive: true });
    await page.screenshot({ path: shotPath, fullPage: true });
    console.log(`${plots.length} plots (expected ${expected}), ${plots.reduce((s, p) => s + p.marks, 0)} marks; screenshot ${shotPath}`);
} finally {
    await browser.close();
}
if (failures.length) {
    console.error(`report.test: ${failures.length} failure(s)`);
    process.exit(1);
}
console.log('report.test: OK');
