// The live lab page: one session per page load, one section per demo (demos/*.js). Each demo calls
// the API and redraws from the state the allocator returned; nothing is simulated here.
import { el } from './draw.js';

const DEMOS = ['arena', 'stack', 'pool', 'buddy', 'tlsf', 'slab', 'handles', 'device', 'race', 'latency', 'layout', 'compare', 'trace'];
const status = document.getElementById('status');

let session = null;

// answer(r): the JSON body of a response, or null when it has none (an HTML 502 page from a proxy, an
// empty body). A failed request throws Error(the API's `error`, or "STATUS STATUS-TEXT").
async function answer(r) {
    let body = null;
    if (/json/.test(r.headers.get('Content-Type') || '')) body = await r.json().catch(() => null);
    if (!r.ok && !(body && body.error)) throw new Error(`${r.status} ${r.statusText || 'error'}`.trim());
    return body;
}

// fetch, but a request that got no answer at all (server stopped, network down, nothing in 30 s)
// says so. The time limit keeps a section's queue of clicks (demos/common.js) from waiting forever.
async function request(url, init = {}) {
    try {
        return await fetch(url, { ...init, signal: AbortSignal.timeout(30000) });
    } catch (e) {
        throw new Error(`no answer from the server (${e.message})`);
    }
}

async function newSession() {
    const r = await request('/api/session', { method: 'POST' });
    const body = await answer(r);
    if (!r.ok) throw new Error(body.error);
    if (!body || !body.session) throw new Error('the server sent no session');
    session = body.session;
    document.body.dataset.session = session;
}

// Every section's fetchState() (demos/common.js): when the session is replaced, all of them redraw
// from the new one, together once every state is in (a test, or a reader, never sees half the page reset).
const reloads = [];
// The session reset in progress: { from: the session it replaces, done: promise }. Other requests
// sent with that session wait for it instead of starting another.
let resetting = null;

async function resetSession() {
    await newSession();
    // One after the other: the server's few workers each hold a kept-alive connection, so ten
    // requests at once can wait seconds for a worker.
    const draws = [];
    for (const fetchState of reloads) draws.push(await fetchState().catch(() => null));
    for (const draw of draws) {
        try {
            if (draw) draw();
        } catch (e) {
            console.error(e); // one section's drawing error leaves the others drawn
        }
    }
    status.textContent = status.textContent.replace(/^session \S+…/, `session ${session.slice(0, 8)}…`);
}

// call(demo, op, args): the API's answer {ok, result, state}. Throws Error(message) on 4xx/5xx, on a
// body that is not the API's JSON and when the server does not answer.
// An expired or evicted session (404 on the session) is replaced and every section redrawn from
// the new one, so a page left open keeps working. The operation is not replayed: its ids (slots,
// markers, handles) named the old session's blocks. Requests that were already on their way with the
// old session get the same message and start no second reset.
async function call(demo, op, args = {}) {
    const sent = session;
    const r = await request(`/api/${demo}/${op}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ ...args, session: sent }),
    });
    const body = await answer(r);
    if (r.status === 404 && /session/.test(body.error)) {
        // A reload's own request (sent with the new session) does not wait for the reset it is part of.
        if (resetting && resetting.from === sent) await resetting.done.catch(() => {});
        else if (!resetting && session === sent) {
            resetting = { from: sent, done: resetSession() };
            try {
                await resetting.done;
            } finally {
                resetting = null;
            }
        }
        throw new Error('the session had expired: a new one was started and every demo was reset; try again');
    }
    if (!r.ok) throw new Error(body.error);
    if (!body) throw new Error(`the server's answer is not JSON (${r.status} ${r.statusText})`);
    return body;
}

async function main() {
    const info = await answer(await request('/api/info'));
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
        await mod.mount(root, { call, uPlot, title: titles[name], limits: info.limits, onReset: (fetchState) => reloads.push(fetchState) });
    }
    status.textContent = `session ${session.slice(0, 8)}… · expires after ${Math.round(info.limits.session_ttl_s / 60)} idle minutes` +
        (uPlot ? '' : ' · plots unavailable: this strata-lab was built without uPlot (npm missing)');
    document.body.dataset.ready = '1';
}

main().catch((e) => {
    status.textContent = 'error: ' + e.message;
    status.classList.add('error');
});
