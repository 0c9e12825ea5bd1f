// Makes a report document with one 200,000-point series out of a report's embedded JSON:
//   node long-series.mjs REPORT.html OUT.json
// The browser stage renders this document with `strata-lab report --from` and runs report.test.mjs on
// it: a series this long must not be spread into Math.max(...) (that overflows the stack) and must not
// slow the page (report.js hands uPlot at most 4,000 points per line: each bucket's lowest and highest).
import { readFileSync, writeFileSync } from 'node:fs';

const [from, out] = process.argv.slice(2);
const html = readFileSync(from, 'utf8');
const m = html.match(/<script type="application\/json" id="strata-data">([\s\S]*?)<\/script>/);
if (!m) throw new Error(`${from}: no embedded JSON`);
const doc = JSON.parse(m[1]);
const wl = doc.workloads.find((w) => w.allocators.some((a) => a.series && a.series.op && a.series.op.length));
if (!wl) throw new Error(`${from}: no workload with a series`);
const n = 200000;
// Three allocators keep the file small (~25 MB); one long series is enough to overflow a spread.
wl.allocators = wl.allocators.filter((a) => a.series && a.series.op && a.series.op.length).slice(0, 3);
for (const a of wl.allocators) {
    if (!a.series || !a.series.op || !a.series.op.length) continue;
    const len = a.series.op.length;
    for (const [k, v] of Object.entries(a.series)) {
        if (Array.isArray(v) && v.length === len)
            a.series[k] = Array.from({ length: n }, (_, i) => (k === 'op' ? i : v[Math.floor((i * len) / n)]));
    }
}
doc.workloads = [wl];
writeFileSync(out, JSON.stringify(doc));
console.log(`long-series: ${out}: ${wl.name}, ${n} points per series`);
