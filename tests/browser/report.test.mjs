// Headless-Chromium test of a strata-lab HTML report (uPlot charts).
//   node report.test.mjs REPORT.html [SCREENSHOT.png]
// (or REPORT / SCREENSHOT in the environment; the screenshot defaults to build/report-screenshot.png,
// relative to the current directory; SCREENSHOT-480.png and SCREENSHOT-1920.png are the page at those
// widths). Fails (exit 1) on: any console error, page error, failed or non-file request; a figure
// count other than the embedded JSON implies; a chart the data calls for without a uPlot canvas of
// nonzero size, its lines, a legend entry per line and a caption; tick labels of an axis that overlap
// each other or the axis title; horizontal page overflow at 480 or 1920 px; a chart that does not
// follow its container's width when the window is resized; a summary row missing; and, for the same
// page with uPlot taken out, anything but the tables and a line saying the charts need uPlot.
// Uses Debian's Chromium (CHROMIUM or /usr/bin/chromium); downloads nothing.
import { mkdirSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Harness, pageOverflow, settle as settleOf } from './harness.mjs';

const reportPath = resolve(process.argv[2] || process.env.REPORT || '');
const shotPath = resolve(process.argv[3] || process.env.SCREENSHOT || 'build/report-screenshot.png');
if (!process.argv[2] && !process.env.REPORT) {
    console.error('usage: node report.test.mjs REPORT.html [SCREENSHOT.png]');
    process.exit(2);
}

const h = new Harness('report.test');
const { fail } = h;
const html = readFileSync(reportPath, 'utf8');

// Static checks: one file, nothing fetched, uPlot inlined.
if (/https?:\/\//.test(html)) fail('the report contains an http(s) URL');
if (/\s(src|href)\s*=\s*["'](?!#)/i.test(html)) fail('the report refers to another file (src=/href=)');
if (!/var uPlot=/.test(html)) fail('uPlot is not inlined (this strata-lab was built without it: npm ci in tools/lab/web)');

// What the JSON implies. Figures: per workload a histogram and a tail figure (a "not measured" note
// when nothing was timed), a footprint chart when any allocator has a footprint series, a
// largest-free chart likewise; one chart per bars entry; the layout map; one RSS chart for phase
// lines (report --rss). Charts: the figures that draw with uPlot, and how many lines each has.
const m = html.match(/<script type="application\/json" id="strata-data">([\s\S]*?)<\/script>/);
if (!m) fail('no embedded JSON');
const data = m ? JSON.parse(m[1]) : { workloads: [] };
const withSeries = (w, k) => w.allocators.filter(a => a.series && Array.isArray(a.series.op) && Array.isArray(a.series[k]) && a.series[k].length);
const hist = a => (a.histogram_filtered && a.histogram_filtered.length ? a.histogram_filtered : a.histogram_raw) || [];
const tail = a => (a.tail_filtered && a.tail_filtered.length ? a.tail_filtered : a.tail_raw) || [];
const want = []; // { title, lines }
let figures = 0;
for (const w of data.workloads || []) {
    w.allocators = w.allocators || [];
    figures += 2;
    const timed = w.allocators.filter(a => hist(a).some(c => c > 0)).length, tails = w.allocators.filter(a => tail(a).length).length;
    if (timed) want.push({ title: `Latency histogram: ${w.name}`, lines: timed });
    if (tails) want.push({ title: `Tail latency: ${w.name}`, lines: tails });
    const fp = withSeries(w, 'footprint').length, lf = withSeries(w, 'largest_free').length;
    if (fp) want.push({ title: `Footprint over time: ${w.name}`, lines: fp + (withSeries(w, 'footprint')[0].series.live_bytes ? 1 : 0) });
    if (lf) want.push({ title: `Largest free block over time: ${w.name}`, lines: lf });
    figures += (fp ? 1 : 0) + (lf ? 1 : 0);
}
for (const b of data.bars || []) {
    const names = new Set();
    for (const g of b.groups || []) for (const k of Object.keys(g.values || {})) names.add(k);
    want.push({ title: b.title || 'bars', lines: names.size });
}
const rssRuns = (data.rss || []).filter(r => r && Array.isArray(r.rss_frames_kib));
if (rssRuns.length) want.push({ title: 'RSS per frame: strata-mt phase', lines: rssRuns.length });
figures += (data.bars || []).length + (data.layout ? 1 : 0) + (rssRuns.length ? 1 : 0);

await h.launch({ persistent: false });
const shot = (suffix) => shotPath.replace(/(\.png)?$/, suffix + '.png');

// Opens `file` at `width` px; returns the page once rendered, watched by the harness: a request
// for anything but the file itself and data: URLs fails.
async function open(file, width) {
    const page = await h.newPage({ viewport: { width, height: 900 }, local: (u) => u.startsWith('file:') || u.startsWith('data:') });
    const t0 = Date.now();
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    await h.ready(page, { ready: "document.body.hasAttribute('data-rendered')", error: '.error', status: '.error', timeout: 15000 });
    return { page, ms: Date.now() - t0 };
}

// Every chart: its size, its container's, its lines, its legend, and per axis whether the tick
// labels collide (with each other, or with the axis title for a vertical axis).
const inspect = (page) => page.evaluate(() => (globalThis.strataCharts || []).map(({ fig, u, title }) => {
    const canvas = fig.querySelector('.uplot canvas'), box = fig.querySelector('.chart');
    const ctx = document.createElement('canvas').getContext('2d');
    const axes = u.axes.map((a, ai) => {
        if (!a.show || !a._splits || !a._values) return { ok: true };
        ctx.font = (Array.isArray(a.font) ? a.font[0] : a.font) || '11px sans-serif';
        const horizontal = a.side === 0 || a.side === 2, scale = a.scale || (ai === 0 ? 'x' : 'y');
        const marks = a._splits.map((v, i) => ({ at: u.valToPos(v, scale), label: String(a._values[i] ?? '') }))
            .filter(t => t.label !== '').sort((p, q) => p.at - q.at);
        const widest = Math.max(0, ...marks.map(t => ctx.measureText(t.label).width));
        let ok = true, why = '';
        for (let i = 1; i < marks.length; ++i) {
            const need = horizontal ? (ctx.measureText(marks[i - 1].label).width + ctx.measureText(marks[i].label).width) / 2 + 2 : 10;
            if (marks[i].at - marks[i - 1].at < need) { ok = false; why = `"${marks[i - 1].label}" and "${marks[i].label}" overlap`; }
        }
        // A vertical axis reserves its size for the labels; the title lies outside it.
        if (!horizontal && widest + (a.ticks.size || 0) + (a.gap || 0) > a._size + 0.5) { ok = false; why = `labels ${widest.toFixed(0)} px wide in a ${a._size} px axis`; }
        return { ok, why, n: marks.length };
    });
    return {
        title, w: canvas ? canvas.getBoundingClientRect().width : 0, h: canvas ? canvas.getBoundingClientRect().height : 0,
        uw: u.width, boxW: box.clientWidth, lines: u.series.length - 1,
        legend: fig.querySelectorAll('.u-legend .u-series').length - 1,
        caption: (fig.querySelector('figcaption') || { textContent: '' }).textContent.trim().length, axes,
    };
}));
const overflow = async (page) => (await pageOverflow(page)).over;
const settle = (page) => settleOf(page);

const tmp = mkdtempSync(join(tmpdir(), 'strata-report-'));
await h.run(async () => {
    const { page, ms } = await open(reportPath, 1280);
    if (ms > 10000) fail(`the page took ${ms} ms to render`);
    const figs = await page.$$eval('figure.plot', (fs) => fs.map((f) => ({
        title: (f.querySelector('h3') || {}).textContent || '(untitled)',
        note: f.classList.contains('not-measured') ? (f.querySelector('.note') || {}).textContent || '' : null,
        map: f.classList.contains('map') ? f.querySelectorAll('svg g.series rect').length : null,
    })));
    if (figs.length !== figures) fail(`${figs.length} figures rendered, the JSON implies ${figures}`);
    for (const f of figs) {
        if (f.note !== null && !/Not measured|Too few/.test(f.note)) fail(`${f.title}: an empty figure without a note`);
        if (f.map !== null && f.map === 0) fail(`${f.title}: the map drew nothing`);
    }
    const checkCharts = (charts, width) => {
        if (charts.length !== want.length) fail(`${width} px: ${charts.length} uPlot charts, the JSON calls for ${want.length}`);
        for (const w of want) {
            const c = charts.find(x => x.title === w.title);
            if (!c) { fail(`${w.title}: no uPlot chart`); continue; }
            if (c.w < 100 || c.h < 80) fail(`${w.title} (${width} px): canvas ${c.w}x${c.h}`);
            if (c.lines !== w.lines) fail(`${w.title}: ${c.lines} lines, the data has ${w.lines}`);
            if (c.legend !== c.lines) fail(`${w.title}: ${c.legend} legend entries for ${c.lines} lines`);
            if (c.caption < 40) fail(`${w.title}: no (or a too short) caption`);
            if (Math.abs(c.uw - c.boxW) > 1) fail(`${w.title} (${width} px): chart ${c.uw} px wide in a ${c.boxW} px container`);
            c.axes.forEach((a, i) => { if (!a.ok) fail(`${w.title} (${width} px): axis ${i}: ${a.why}`); });
        }
    };
    const at1280 = await inspect(page);
    checkCharts(at1280, 1280);
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
    // Resizing: the charts follow their containers down to 480 px and up to 1920 px, with no
    // horizontal page overflow at either.
    for (const width of [480, 1920]) {
        await page.setViewportSize({ width, height: 900 });
        await settle(page);
        const over = await overflow(page);
        if (over > 0) fail(`${width} px: the page overflows horizontally by ${over} px`);
        const charts = await inspect(page);
        checkCharts(charts, width);
        if (width === 480 && charts.some((c, i) => at1280[i] && c.uw >= at1280[i].uw && at1280[i].uw > 480))
            fail('480 px: a chart did not shrink with its container');
        await page.screenshot({ path: shot(`-${width}`), fullPage: true });
    }
    console.log(`${figs.length} figures, ${at1280.length} uPlot charts (expected ${want.length}), rendered in ${ms} ms; ` +
                `screenshots ${shotPath}, ${shot('-480')}, ${shot('-1920')}`);
    await page.close();

    // A fresh load at 480 px (not a resize): no overflow either.
    const narrow = await open(reportPath, 480);
    const over = await overflow(narrow.page);
    if (over > 0) fail(`480 px (fresh load): the page overflows horizontally by ${over} px`);
    await narrow.page.close();

    // The same page without uPlot: the tables, a line saying the charts need uPlot, no error.
    const bare = join(tmp, 'no-uplot.html');
    writeFileSync(bare, html.replace(/<script>\n[\s\S]*?<\/script>\n(?=<script type="module">)/, '<script>\n</script>\n'));
    const b = await open(bare, 1280);
    const res = await b.page.evaluate(() => ({
        note: (document.querySelector('p.nouplot') || { textContent: '' }).textContent,
        charts: document.querySelectorAll('.uplot').length,
        tables: document.querySelectorAll('section.workload table.summary').length,
    }));
    if (!/need uPlot/.test(res.note)) fail('without uPlot: no line saying the charts need uPlot');
    if (res.charts) fail(`without uPlot: ${res.charts} charts`);
    if (res.tables !== (data.workloads || []).length) fail(`without uPlot: ${res.tables} summary tables for ${(data.workloads || []).length} workloads`);
}, { ok: 'report.test: OK', cleanup: [tmp] });
