// What the HTML report's charts are given, checked without a browser: runs the page's own module
// (taken out of REPORT.html, as strata-lab embedded it) against a small DOM with a stand-in for uPlot
// that records each chart's options and data, then checks them against the JSON the page embeds.
//   node tests/lab/report_plots.mjs REPORT.html
// Needs only node (tests/browser draws the real uPlot charts in Chromium). Any report can be checked:
// - latency histogram: every non-empty bin at least 2x (0.3 decade) above the y axis' floor, the y
//   axis topping at 100 %, legend values to 3 significant digits; no latency data: a "not measured"
//   note instead of a chart (also for the tail);
// - footprint / largest free: a line per allocator whose peak is the JSON series' peak however long
//   the series (decimation keeps peaks), at most 4,000 points drawn, byte ticks on powers of two;
// - bars with "log_scale": true: ticks at 1, 2, 5 x 10^k at every width, the axis' floor at or below
//   half the smallest value (no bar shorter than 0.3 decade), every bar at its value; linear bars from 0;
// - RSS over time (report --rss): a line per phase run, its points grown, shrunk and one per frame,
//   left to right, at their MiB values; a table row per run;
// - every chart follows its box's width (the shared chart() of tools/lab/web/plots.js, which the
//   report inlines: a stand-in ResizeObserver reports a new width, the chart takes it);
// - no NaN or Infinity in any chart's data; no render error;
// - the page without uPlot: no chart, a line saying the charts need uPlot, every table.
// Exit 0 when all hold, 1 otherwise (each failure printed).
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

// ---- a small DOM: what report.js uses, and a selector engine for "tag.class" chains ----------------
class Node {
    constructor(tag, doc) {
        this.tagName = tag;
        this.ownerDocument = doc;
        this.attrs = new Map();
        this.children = [];
        this.parentNode = null;
        this.text = null; // a text node's text
        this.style = {};
        this.clientWidth = 0;
    }
    setAttribute(k, v) { this.attrs.set(k, String(v)); }
    getAttribute(k) { return this.attrs.has(k) ? this.attrs.get(k) : null; }
    hasAttribute(k) { return this.attrs.has(k); }
    getAttributeNames() { return [...this.attrs.keys()]; }
    appendChild(c) { c.parentNode = this; this.children.push(c); return c; }
    get textContent() { return this.text !== null ? this.text : this.children.map(c => c.textContent).join(''); }
    set textContent(t) { this.children = []; if (t !== '' && t !== null) this.appendChild(this.ownerDocument.createTextNode(String(t))); }
    get classList() { return (this.getAttribute('class') || '').split(/\s+/).filter(Boolean); }
    *descendants() { for (const c of this.children) { if (c.text === null) { yield c; yield* c.descendants(); } } }
    matches(simple) { // tag, .class, tag.class, tag.class.class
        const [tag, ...classes] = simple.split('.');
        return (!tag || this.tagName === tag) && classes.every(k => this.classList.includes(k));
    }
    querySelectorAll(selector) { // descendant combinators only
        let set = [this];
        for (const part of selector.trim().split(/\s+/)) {
            const next = new Set();
            for (const n of set) for (const d of n.descendants()) if (d.matches(part)) next.add(d);
            set = [...next];
        }
        return set;
    }
    querySelector(selector) { return this.querySelectorAll(selector)[0] || null; }
}
class Document {
    constructor() {
        this.documentElement = new Node('html', this);
        this.body = this.documentElement.appendChild(new Node('body', this));
    }
    createElement(tag) { const n = new Node(tag, this); if (tag === 'canvas') n.getContext = () => null; return n; }
    createElementNS(_ns, tag) { return new Node(tag, this); }
    createTextNode(t) { const n = new Node('#text', this); n.text = t; return n; }
    getElementById(id) { for (const n of this.documentElement.descendants()) if (n.getAttribute('id') === id) return n; return null; }
    querySelectorAll(s) { return this.documentElement.querySelectorAll(s); }
    querySelector(s) { return this.documentElement.querySelector(s); }
}

// ---- load the page ------------------------------------------------------------------------------------
const file = process.argv[2];
if (!file) {
    console.error('usage: node report_plots.mjs REPORT.html');
    process.exit(2);
}
const html = readFileSync(file, 'utf8');
const json = html.match(/<script type="application\/json" id="strata-data">([\s\S]*?)<\/script>/);
const module = html.match(/<script type="module">([\s\S]*?)<\/script>/);
if (!json || !module) {
    console.error(`FAIL: ${file}: no embedded JSON or module`);
    process.exit(1);
}
const data = JSON.parse(json[1]);
const failures = [];
const fail = (msg) => { failures.push(msg); console.log('FAIL: ' + msg); };

// A stand-in for uPlot: records what each chart is given.
class FakeUPlot {
    constructor(opts, d, target) {
        Object.assign(this, { opts, data: d, target, width: opts.width, height: opts.height, series: opts.series, axes: opts.axes });
    }
    setSize({ width, height }) { this.width = width; this.height = height; }
    destroy() {}
}
FakeUPlot.paths = { stepped: o => ({ stepped: o }), linear: () => () => null, bars: o => ({ bars: o }) };

// A stand-in ResizeObserver and animation frames: the boxes observed and their callbacks, and the
// frames asked for, run by hand below.
const observed = new Map(), frames = [];
class FakeResizeObserver {
    constructor(cb) { this.cb = cb; }
    observe(box) { observed.set(box, this.cb); }
    disconnect() {}
}

// Runs the page's module in a fresh DOM; returns { document, charts }.
function runPage(withUPlot) {
    const document = new Document();
    const main = document.body.appendChild(document.createElement('main'));
    main.setAttribute('id', 'report');
    const script = document.body.appendChild(document.createElement('script'));
    script.setAttribute('id', 'strata-data');
    script.textContent = json[1];
    const context = { document, console, ResizeObserver: FakeResizeObserver,
                      requestAnimationFrame: (f) => frames.push(f), cancelAnimationFrame: () => {} };
    if (withUPlot) context.uPlot = FakeUPlot;
    try {
        vm.runInNewContext(module[1], context);
    } catch (e) {
        fail(`the page threw${withUPlot ? '' : ' (without uPlot)'}: ` + e.message);
    }
    if (document.querySelector('p.error')) fail('render error: ' + document.querySelector('p.error').textContent);
    return { document, charts: context.strataCharts || [] };
}

const { document, charts } = runPage(true);
const chartTitled = (t) => charts.find(c => c.title === t);
const figures = document.querySelectorAll('figure.plot');
const figureTitled = (t) => figures.find(f => f.querySelector('h3').textContent === t);
// An axis' ticks and labels as uPlot would ask for them on an axis `px` CSS pixels long.
const ticksOf = (c, ai, px) => {
    const u = { axes: c.u.axes, bbox: { width: px, height: px } };
    const [lo, hi] = c.u.opts.scales[ai === 0 ? 'x' : 'y'].range(); // uPlot's defaults: axis 0 on x, 1 on y
    const splits = c.u.axes[ai].splits(u, ai, lo, hi);
    return { splits, labels: c.u.axes[ai].values(u, splits), lo, hi };
};
const close = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
let checks = 0;

for (const c of charts) c.u.data.forEach((col, k) => col.forEach((v, i) => {
    if (v !== null && !Number.isFinite(v)) fail(`${c.title}: data[${k}][${i}] = ${v}`);
}));

// ---- every chart follows its box's width ---------------------------------------------------------
for (const c of charts) {
    const box = c.u.target, onResize = observed.get(box);
    if (!onResize) { fail(`${c.title}: its box is not watched for resizes`); continue; }
    for (const w of [333, 1234]) {
        box.clientWidth = w;
        onResize([]);
        for (const f of frames.splice(0)) f();
        if (c.u.width !== w) fail(`${c.title}: ${c.u.width} px wide in a ${w} px box`);
    }
}
if (charts.length) ++checks;

// ---- latency histogram and tail ---------------------------------------------------------------------
const hist = a => (a.histogram_filtered && a.histogram_filtered.length ? a.histogram_filtered : a.histogram_raw) || [];
for (const w of data.workloads || []) {
    const allocs = (w.allocators || []).filter(a => hist(a).some(c => c > 0));
    const hf = figureTitled(`Latency histogram: ${w.name}`), tf = figureTitled(`Tail latency: ${w.name}`);
    if (!hf || !tf) { fail(`${w.name}: no histogram or tail figure`); continue; }
    if (!allocs.length) {
        for (const f of [hf, tf]) {
            const what = f.querySelector('h3').textContent;
            if (chartTitled(what)) fail(`${what}: a chart drawn for a run with no latency data`);
            if (!/not measured/i.test(f.textContent)) fail(`${what}: no "not measured" note`);
        }
        ++checks;
        continue;
    }
    const title = `Latency histogram: ${w.name}`, c = chartTitled(title);
    if (!c) { fail(`${title}: no chart`); continue; }
    if (c.u.series.length - 1 !== allocs.length) fail(`${title}: ${c.u.series.length - 1} lines for ${allocs.length} allocators`);
    const [floor, top] = c.u.opts.scales.y.range();
    allocs.forEach((a, k) => {
        const h = hist(a), total = h.reduce((s, n) => s + n, 0), col = c.u.data[k + 1];
        h.forEach((n, i) => {
            if (!(n > 0)) return;
            const v = col[i], tip = c.u.series[k + 1].value(c.u, v, k + 1, i);
            if (!close(v, n / total)) fail(`${title}: ${a.name} bin ${i} drawn at ${v}, its share is ${n / total}`);
            if (v < 2 * floor * (1 - 1e-9)) fail(`${title}: ${a.name} bin ${i} (${v}) is within 0.3 decade of the axis (${floor})`);
            if (v > top) fail(`${title}: ${a.name} bin ${i} (${v}) above the axis' top (${top})`);
            const share = tip.match(/^([0-9.e+-]+) %/);
            if (!share || !(+share[1] > 0)) fail(`${title}: legend value without a non-zero share: ${tip}`);
            else if (share[1].split('e')[0].replace(/^0\.0*|\./g, '').length !== 3) fail(`${title}: share not to 3 significant digits: ${tip}`);
        });
    });
    for (const px of [200, 1400]) {
        const yTicks = ticksOf(c, 1, px).labels.map(parseFloat);
        if (!yTicks.length || Math.max(...yTicks) !== 100) fail(`${title}: y axis tops at ${Math.max(...yTicks)} % (${px} px), not 100 %`);
    }
    const xt = ticksOf(c, 0, 300).splits;
    if (xt.some(v => !close(Math.log10(v), Math.round(Math.log10(v))))) fail(`${title}: x ticks at 300 px not at powers of 10: ${xt}`);
    ++checks;
}

// ---- footprint / largest free ------------------------------------------------------------------------
for (const w of data.workloads || []) for (const [key, name] of [['footprint', 'Footprint'], ['largest_free', 'Largest free block']]) {
    const allocs = (w.allocators || []).filter(a => a.series && Array.isArray(a.series.op) && Array.isArray(a.series[key]) && a.series[key].length);
    const title = `${name} over time: ${w.name}`, c = chartTitled(title);
    if (!allocs.length) { if (c) fail(`${title}: a chart without data`); continue; }
    if (!c) { fail(`${title}: no chart`); continue; }
    const xs = c.u.data[0];
    if (xs.length > 4000 * (allocs.length + 1)) fail(`${title}: ${xs.length} points drawn`);
    if (xs.some((x, i) => i && x <= xs[i - 1])) fail(`${title}: x not ascending`);
    allocs.forEach((a, k) => {
        const want = a.series[key].reduce((m, v) => (v !== null && v > m ? v : m), -Infinity);
        const got = c.u.data[k + 1].reduce((m, v) => (v !== null && v > m ? v : m), -Infinity);
        if (!close(want, got)) fail(`${title}: ${a.name} peaks at ${got} drawn, ${want} in the data`);
        if (c.u.data[k + 1].filter(v => v !== null).length > 4000) fail(`${title}: ${a.name}: more than 4,000 points drawn`);
    });
    for (const px of [150, 300, 800]) {
        const { splits, lo, hi } = ticksOf(c, 1, px);
        const log = c.u.opts.scales.y.distr === 3;
        if (splits.length < 2) fail(`${title}: fewer than two y ticks at ${px} px`);
        if (log && splits.some(v => !Number.isInteger(Math.log2(v)))) fail(`${title}: log ticks not at powers of two: ${splits}`);
        if (!log && splits.length > 1 && !Number.isInteger(Math.log2(splits[1] - splits[0]))) fail(`${title}: byte step ${splits[1] - splits[0]} not a power of two`);
        if (splits.some(v => v < lo * (1 - 1e-9) || v > hi * (1 + 1e-9))) fail(`${title}: a tick outside [${lo}, ${hi}]`);
        if ((splits.length - 1) * 20 > px) fail(`${title}: ${splits.length} y ticks on ${px} px`);
    }
    ++checks;
}

// ---- bars -------------------------------------------------------------------------------------------------
for (const b of data.bars || []) {
    const c = chartTitled(b.title || 'bars');
    if (!c) { fail(`bars "${b.title}": no chart`); continue; }
    const log = b.log_scale === true, names = c.u.series.slice(1).map(s => s.label);
    const [lo, hi] = c.u.opts.scales.y.range();
    let minV = Infinity, maxV = 0, bars = 0;
    (b.groups || []).forEach((g, gi) => {
        for (const [s, v] of Object.entries(g.values || {})) {
            if (typeof v !== 'number' || !isFinite(v) || (log && v <= 0)) continue;
            const k = names.indexOf(s), slot = gi * (names.length + 1) + k;
            if (k < 0 || c.u.data[k + 1][slot] !== v) fail(`bars "${b.title}": ${g.label} / ${s} = ${v} drawn as ${k < 0 ? 'nothing' : c.u.data[k + 1][slot]}`);
            minV = Math.min(minV, v); maxV = Math.max(maxV, v); ++bars;
        }
    });
    if (!bars) { fail(`bars "${b.title}": nothing drawn`); continue; }
    if (hi < maxV) fail(`bars "${b.title}": the axis ends at ${hi}, below the largest value ${maxV}`);
    const fillTo = c.u.series[1].fillTo();
    if (fillTo !== lo) fail(`bars "${b.title}": bars start at ${fillTo}, not at the axis (${lo})`);
    if (log) {
        if (c.u.opts.scales.y.distr !== 3) fail(`bars "${b.title}": log_scale without a log axis`);
        if (Math.log10(minV) - Math.log10(lo) < 0.3 - 1e-9) fail(`bars "${b.title}": the shortest bar is under 0.3 decade long (a sliver)`);
        for (const px of [240, 480, 1600]) {
            const t = ticksOf(c, 1, px).splits;
            if (t.filter(v => close(Math.log10(v), Math.round(Math.log10(v)))).length < 2) fail(`bars "${b.title}": fewer than two power-of-10 ticks at ${px} px`);
            if (t.some(v => ![1, 2, 5].includes(Math.round(v / 10 ** Math.floor(Math.log10(v) + 1e-9))))) fail(`bars "${b.title}": a tick that is not 1, 2 or 5 times a power of 10`);
            if ((t.length - 1) * 40 > px) fail(`bars "${b.title}": ${t.length} ticks crowd ${px} px`);
        }
    } else if (lo !== 0) fail(`bars "${b.title}": a linear axis that does not start at 0`);
    ++checks;
}

// ---- RSS over time ----------------------------------------------------------------------------------------
const rssLines = (data.rss || []).filter(r => r && Array.isArray(r.rss_frames_kib));
const rssSection = document.querySelector('section.rss');
if (!rssLines.length) {
    if (rssSection) fail('an RSS section without rss lines in the JSON');
} else if (!rssSection || !/RSS over time \(phase workload\)/.test(rssSection.querySelector('h2').textContent)) {
    fail('rss lines in the JSON but no "RSS over time (phase workload)" section');
} else {
    const c = charts.find(x => x.kind === 'rss');
    if (!c) fail('RSS: no chart');
    else {
        if (c.u.series.length - 1 !== rssLines.length) fail(`RSS: ${c.u.series.length - 1} lines for ${rssLines.length} phase runs`);
        const xs = c.u.data[0];
        if (xs.some((x, i) => i && x <= xs[i - 1])) fail('RSS: points not left to right');
        rssLines.forEach((run, k) => {
            const want = [run.grown_rss_kib, run.shrunk_rss_kib, ...run.rss_frames_kib], col = c.u.data[k + 1];
            want.forEach((kib, i) => { if (!close(col[i], kib / 1024)) fail(`RSS ${run.malloc}: point ${i} at ${col[i]} MiB, its value is ${kib / 1024}`); });
            if (col.slice(want.length).some(v => v !== null)) fail(`RSS ${run.malloc}: points past its last frame`);
        });
        const labels = ticksOf(c, 0, 900).labels;
        if (labels[0] !== 'grown' || labels[1] !== 'shrunk') fail(`RSS: x axis starts ${labels.slice(0, 2)}, not grown, shrunk`);
        if (rssLines.some(r => r.end_frame === true) && !/strata_malloc_end_frame/.test(c.fig.querySelector('figcaption').textContent))
            fail('RSS: a run called strata_malloc_end_frame and the caption does not say so');
    }
    for (const run of rssLines) if (!rssSection.textContent.includes(run.malloc)) fail(`RSS: ${run.malloc} not shown`);
    const rows = rssSection.querySelectorAll('table.rss tbody tr');
    if (rows.length !== rssLines.length) fail(`RSS: ${rows.length} table rows for ${rssLines.length} phase runs`);
    ++checks;
}

// ---- without uPlot: the tables and a line saying the charts need it ---------------------------------
{
    const bare = runPage(false);
    if (bare.charts.length) fail(`without uPlot: ${bare.charts.length} charts`);
    const note = bare.document.querySelector('p.nouplot');
    if (!note || !/need uPlot/.test(note.textContent)) fail('without uPlot: no line saying the charts need uPlot');
    const tables = bare.document.querySelectorAll('section.workload table.summary').length;
    if (tables !== (data.workloads || []).length) fail(`without uPlot: ${tables} summary tables for ${(data.workloads || []).length} workloads`);
    ++checks;
}

if (failures.length) {
    console.log(`report_plots: ${failures.length} failure(s) in ${file}`);
    process.exit(1);
}
console.log(`report_plots: OK (${charts.length} charts, ${checks} checked) ${file}`);
