// The live lab page: one session per page load, one section per demo (demos/*.js). Each demo calls
// the API and redraws from the state the allocator returned; nothing is simulated here.
import { el } from './draw.js';

const DEMOS = ['arena', 'stack', 'pool', 'buddy', 'tlsf', 'slab', 'handles', 'race', 'latency', 'layout'];
const status = document.getElementById('status');

let session = null;

async function newSession() {
    const r = await fetch('/api/session', { method: 'POST' });
    if (!r.ok) throw new Error((await r.json()).error || r.statusText);
    session = (await r.json()).session;
    document.body.dataset.session = session;
}

// Every section's load(): when the session is replaced, all of them redraw from the new one.
const reloads = [];
let resetting = false;

// call(demo, op, args): the API's answer {ok, result, state}. Throws Error(message) on 4xx/5xx.
// An expired or evicted session (404 on the session) is replaced and every section redrawn from
// the new one, so a page left open keeps working. The operation is not replayed: its ids (slots,
// markers, handles) named the old session's blocks.
async function call(demo, op, args = {}) {
    const r = await fetch(`/api/${demo}/${op}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ ...args, session }),
    });
    const body = await r.json();
    if (r.status === 404 && !resetting && /session/.test(body.error || '')) {
        resetting = true;
        try {
            await newSession();
            for (const load of reloads) await load().catch(() => {});
            status.textContent = status.textContent.replace(/^session \S+…/, `session ${session.slice(0, 8)}…`);
        } finally {
            resetting = false;
        }
        throw new Error('the session had expired: a new one was started and every demo was reset; try again');
    }
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
}

async function main() {
    const info = await (await fetch('/api/info')).json();
    await newSession();
    // Give the session back as the page goes, so reloads do not pile sessions up to the cap.
    window.addEventListener('pagehide', () => {
        if (session) navigator.sendBeacon('/api/session/close', JSON.stringify({ session }));
    });
    let uPlot = null;
    if (info.uplot) {
        document.head.append(el('link', { rel: 'stylesheet', href: '/vendor/uPlot.min.css' }));
        uPlot = (await import('/vendor/uPlot.esm.js')).default;
    }
    const nav = document.getElementById('nav');
    const root = document.getElementById('demos');
    const titles = Object.fromEntries(info.demos.map((d) => [d.name, d.title]));
    for (const name of DEMOS) {
        if (!titles[name]) continue;
        nav.append(el('a', { href: `#${name}`, text: titles[name] }));
        const mod = await import(`/demos/${name}.js`);
        await mod.mount(root, { call, uPlot, title: titles[name], limits: info.limits, onReset: (load) => reloads.push(load) });
    }
    status.textContent = `session ${session.slice(0, 8)}… · expires after ${Math.round(info.limits.session_ttl_s / 60)} idle minutes` +
        (uPlot ? '' : ' · plots unavailable: this strata-lab was built without uPlot (npm missing)');
    document.body.dataset.ready = '1';
}

main().catch((e) => {
    status.textContent = 'error: ' + e.message;
    status.classList.add('error');
});
