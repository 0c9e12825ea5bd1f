// What the HTML report's plots draw, checked without a browser: runs the page's own module (taken
// out of REPORT.html, as strata-lab embedded it) against a small DOM and reads the SVG it builds.
//   node tests/lab/report_plots.mjs REPORT.html
// Needs only node (tests/browser covers the real browser). The expectations come from the JSON the
// page embeds, so any report can be checked:
// - latency histogram: no non-empty bin lies on the x axis (a share of exactly 10^-k did, and one
//   under 10^-6), the y axis tops out at 100 % (one bin holding every op made it 1000 %), tooltips
//   give 3 significant digits (tiny shares read "0.00 %"); no latency data: a "not measured" note
//   instead of empty axes (also for the tail plot);
// - bars with "log_scale": true: ticks at powers of 10, every bar starts at the axis' left end and
//   ends where the log axis puts its value, none is a sliver (the flag was ignored: linear axis);
// - RSS over time (the "rss" lines, report --rss): a line per phase run, its points grown, shrunk
//   and one per frame, left to right, each at its value on the MiB axis; a table row per run;
// - no NaN or Infinity in any attribute, no render error.
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
    createElement(tag) { return new Node(tag, this); }
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
const document = new Document();
const main = document.body.appendChild(document.createElement('main'));
main.setAttribute('id', 'report');
const script = document.body.appendChild(document.createElement('script'));
script.setAttribute('id', 'strata-data');
script.textContent = json[1];

const failures = [];
const fail = (msg) => { failures.push(msg); console.log('FAIL: ' + msg); };
try {
    vm.runInNewContext(module[1], { document, console });
} catch (e) {
    fail('the page threw: ' + e.message);
}
if (document.querySelector('p.error')) fail('render error: ' + document.querySelector('p.error').textContent);

// The frame report.js draws in (its W, H, M): the histogram's x axis is at y = H - M.b.
const H = 300, MB = 44, MT = 12, BASE = H - MB, BAR_LEFT = 150;
const figures = document.querySelectorAll('figure.plot');
const figureTitled = (t) => figures.find(f => f.querySelector('h3').textContent === t);
const num = (n, k) => +n.getAttribute(k);
let checks = 0;

for (const f of figures) for (const n of f.descendants())
    for (const k of n.getAttributeNames()) if (/NaN|Infinity/.test(n.getAttribute(k)))
        fail(`${f.querySelector('h3').textContent}: ${n.tagName}.${k} = ${n.getAttribute(k)}`);

// ---- latency histogram and tail ---------------------------------------------------------------------
const hist = a => (a.histogram_filtered && a.histogram_filtered.length ? a.histogram_filtered : a.histogram_raw) || [];
for (const w of data.workloads || []) {
    const allocs = (w.allocators || []).filter(a => hist(a).some(c => c > 0));
    const hf = figureTitled(`Latency histogram: ${w.name}`), tf = figureTitled(`Tail latency: ${w.name}`);
    if (!hf || !tf) { fail(`${w.name}: no histogram or tail figure`); continue; }
    if (!allocs.length) {
        for (const f of [hf, tf]) {
            const what = f.querySelector('h3').textContent;
            if (f.querySelector('svg')) fail(`${what}: empty axes drawn for a run with no latency data`);
            if (!/not measured/i.test(f.textContent)) fail(`${what}: no "not measured" note`);
        }
        ++checks;
        continue;
    }
    const title = `Latency histogram: ${w.name}`;
    const rects = hf.querySelectorAll('g.series rect');
    const bins = allocs.reduce((s, a) => s + hist(a).filter(c => c > 0).length, 0);
    if (rects.length !== bins) fail(`${title}: ${rects.length} hover bins for ${bins} non-empty bins`);
    for (const r of rects) {
        const y = num(r, 'y') + 2, tipText = r.querySelector('title').textContent;
        if (y > BASE - 4) fail(`${title}: a non-empty bin is drawn on the x axis (y ${y}): ${tipText}`);
        const share = tipText.match(/: ([0-9.e+-]+) % of ops/);
        if (!share || !(+share[1] > 0)) fail(`${title}: tooltip without a non-zero share: ${tipText}`);
        else if (share[1].split('e')[0].replace(/^0\.0*|\./g, '').length !== 3) fail(`${title}: share not to 3 significant digits: ${tipText}`);
    }
    const yTicks = hf.querySelectorAll('g.tick text').map(t => t.textContent).filter(t => t.endsWith('%')).map(parseFloat);
    if (!yTicks.length || Math.max(...yTicks) !== 100) fail(`${title}: y axis tops at ${Math.max(...yTicks)} %, not 100 %`);
    ++checks;
}

// ---- bars -------------------------------------------------------------------------------------------------
for (const b of data.bars || []) {
    const f = figureTitled(b.title || 'bars');
    if (!f) { fail(`bars "${b.title}": no figure`); continue; }
    const ticks = f.querySelectorAll('g.tick').map(t => ({ v: +t.getAttribute('data-value'), x: num(t.querySelector('line'), 'x1') }));
    const rects = f.querySelectorAll('g.series rect');
    const log = b.log_scale === true;
    if (!rects.length) { fail(`bars "${b.title}": nothing drawn`); continue; }
    const decades = ticks.filter(t => Math.abs(Math.log10(t.v) - Math.round(Math.log10(t.v))) < 1e-9);
    let at;
    if (log) {
        if (decades.length < 2) { fail(`bars "${b.title}": log_scale without two power-of-10 ticks`); continue; }
        if (ticks.some(t => ![1, 2, 5].includes(Math.round(t.v / Math.pow(10, Math.floor(Math.log10(t.v) + 1e-9))))))
            fail(`bars "${b.title}": a tick that is not 1, 2 or 5 times a power of 10`);
        const [a0, a1] = decades;
        const perDecade = (a1.x - a0.x) / (Math.log10(a1.v) - Math.log10(a0.v));
        at = v => a0.x + (Math.log10(v) - Math.log10(a0.v)) * perDecade;
        if (Math.abs(at(decades[decades.length - 1].v) - decades[decades.length - 1].x) > 0.5)
            fail(`bars "${b.title}": power-of-10 ticks are not evenly spaced (a linear axis?)`);
    } else {
        const [t0, t1] = ticks;
        at = v => t0.x + (v - t0.v) * (t1.x - t0.x) / (t1.v - t0.v);
    }
    for (const r of rects) {
        const v = +r.getAttribute('data-value'), x = num(r, 'x'), end = x + num(r, 'width');
        const what = `bars "${b.title}": ${r.querySelector('title').textContent}`;
        if (Math.abs(x - BAR_LEFT) > 1e-6) fail(`${what}: starts at ${x}, not at the axis (${BAR_LEFT})`);
        if (v > 0 && Math.abs(end - at(v)) > 0.5) fail(`${what}: ends at ${end.toFixed(1)}, its value is at ${at(v).toFixed(1)}`);
        if (log && num(r, 'width') < 10) fail(`${what}: a sliver (${num(r, 'width')} px) on a log axis`);
    }
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
    const f = rssSection.querySelector('figure.plot');
    const series = f ? f.querySelectorAll('g.series') : [];
    if (series.length !== rssLines.length) fail(`RSS: ${series.length} lines for ${rssLines.length} phase runs`);
    // The y axis: two labelled ticks give MiB -> px.
    const yt = f ? f.querySelectorAll('g.tick').filter(t => num(t.querySelector('line'), 'y1') === num(t.querySelector('line'), 'y2')) : [];
    const [a, b] = yt.map(t => ({ v: +t.querySelector('text').textContent, y: num(t.querySelector('line'), 'y1') }));
    series.forEach((g, k) => {
        const run = rssLines[k], pts = g.querySelectorAll('circle');
        const want = [run.grown_rss_kib, run.shrunk_rss_kib, ...run.rss_frames_kib];
        if (pts.length !== want.length) { fail(`RSS ${run.malloc}: ${pts.length} points for ${want.length} values`); return; }
        pts.forEach((c, i) => {
            if (i && num(c, 'cx') <= num(pts[i - 1], 'cx')) fail(`RSS ${run.malloc}: point ${i} not right of point ${i - 1}`);
            const y = a.y + (want[i] / 1024 - a.v) * (b.y - a.y) / (b.v - a.v);
            if (Math.abs(num(c, 'cy') - y) > 0.5) fail(`RSS ${run.malloc}: point ${i} at y ${num(c, 'cy')}, its value is at ${y.toFixed(1)}`);
        });
    });
    for (const run of rssLines) if (!rssSection.textContent.includes(run.malloc)) fail(`RSS: ${run.malloc} not shown`);
    const rows = rssSection.querySelectorAll('table.rss tbody tr');
    if (rows.length !== rssLines.length) fail(`RSS: ${rows.length} table rows for ${rssLines.length} phase runs`);
    if (rssLines.some(r => r.end_frame === true) && !/strata_malloc_end_frame/.test(f.querySelector('figcaption').textContent))
        fail('RSS: a run called strata_malloc_end_frame and the caption does not say so');
    ++checks;
}

if (failures.length) {
    console.log(`report_plots: ${failures.length} failure(s) in ${file}`);
    process.exit(1);
}
console.log(`report_plots: OK (${figures.length} plots, ${checks} checked) ${file}`);
