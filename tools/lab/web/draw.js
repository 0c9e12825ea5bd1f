// Small DOM and SVG helpers shared by the demos. Nothing here knows an allocator: the demos pass
// in the state the API returned.
const SVG = 'http://www.w3.org/2000/svg';

export function el(tag, attrs = {}, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
        if (k === 'on') for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
        else if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else e.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
}

export function svg(tag, attrs = {}, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) {
        if (k === 'on') for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
        else e.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
}

export function bytes(n) {
    if (n >= 1 << 20) return (n / (1 << 20)).toFixed(n % (1 << 20) ? 1 : 0) + ' MiB';
    if (n >= 1024) return (n / 1024).toFixed(n % 1024 ? 1 : 0) + ' KiB';
    return n + ' B';
}

// facts(dl, [[key, label, value], ...]): the numbers the tests read back (data-k = the state key).
export function facts(dl, rows) {
    dl.replaceChildren(...rows.map(([k, label, v]) =>
        el('div', {}, el('dt', { text: label }), el('dd', { 'data-k': k, text: String(v) }))));
}

// actionable(e, label, f): makes a drawn element (a div cell or an SVG rect) a keyboard-operable
// button: focusable in tab order, announced as a button with `label`, run by a click, Enter or Space.
// data-key names it so a redraw can give focus back to the same thing (common.js).
export function actionable(e, label, f, key) {
    e.setAttribute('tabindex', '0');
    e.setAttribute('role', 'button');
    e.setAttribute('aria-label', label);
    if (key !== undefined) e.setAttribute('data-key', key);
    e.addEventListener('click', f);
    e.addEventListener('keydown', (ev) => {
        if ((ev.key === 'Enter' || ev.key === ' ' || ev.key === 'Spacebar') && !ev.repeat) {
            ev.preventDefault();
            f(ev);
        }
    });
    return e;
}

export function message(m, text, refused = false) {
    m.textContent = text || '';
    m.classList.toggle('refused', !!refused);
}

// A horizontal byte map: one rect per block, x by offset. Blocks: {offset, size, used, ...}. Drawn
// `width` pixels wide (the viewBox; CSS scales it to its box until the section redraws it at the
// new width). onClick(b) runs for a click on a block that clickable(b) accepts (default: used ones).
export function byteMap(total, blocks, { width = 1000, height = 46, label, onClick, cls, clickable = (b) => b.used } = {}) {
    const s = svg('svg', { class: 'map', viewBox: `0 0 ${width} ${height}`, role: 'img' });
    const x = (o) => (o / total) * width;
    for (const b of blocks) {
        const w = Math.max(1, x(b.offset + b.size) - x(b.offset));
        const r = svg('rect', {
            x: x(b.offset), y: 4, width: w, height: height - 8,
            class: (cls ? cls(b) : (b.used ? 'used' : 'free')) + (onClick && clickable(b) ? ' clickable' : ''),
            'data-offset': b.offset, 'data-size': b.size, 'data-used': b.used,
        });
        const what = `${b.used ? 'used' + (b.id !== undefined ? ' #' + b.id : '') : 'free'} @${b.offset}, ${b.size} B`;
        r.append(svg('title', {}, what));
        if (onClick && clickable(b)) actionable(r, `${what}: free it`, () => onClick(b), `block-${b.offset}`);
        s.append(r);
        const text = label ? label(b) : '';
        if (text && w > 8 * text.length) s.append(svg('text', { x: x(b.offset) + 3, y: height / 2 + 4 }, text));
    }
    return s;
}

// A section with a heading, a short "what to look at" and slots for controls, facts, picture.
export function section(root, id, title, what) {
    const parts = {
        controls: el('div', { class: 'controls' }),
        facts: el('dl', { class: 'facts' }),
        msg: el('div', { class: 'msg', role: 'status' }),
        view: el('div', { class: 'view' }),
    };
    const s = el('section', { class: 'demo', id, 'data-demo': id },
        el('h2', { text: title }), el('p', { class: 'what', text: what }),
        parts.controls, parts.facts, parts.msg, parts.view);
    root.append(s);
    return parts;
}

export function numberInput(value, min, max, title) {
    return el('input', { type: 'number', value, min, max, title, 'aria-label': title });
}

export function select(options, value, title) {
    const s = el('select', { title, 'aria-label': title });
    for (const o of options) s.append(el('option', { value: o, text: String(o) }));
    s.value = String(value);
    return s;
}
