/**
 * The Graph view's webview: a toolbar (the pass picker, before/after, zoom, collapse) over
 * one pane, or two side by side when comparing a pass with the snapshot before it.
 *
 * It speaks only through the messages of src/common/graphMessages.ts: the host sends the
 * graph (the server's answer) and the Relay cursor; the view asks for another snapshot and
 * for a node's Relay text to be selected.  It keeps its state (document, snapshot,
 * comparison) with the webview API, so a reload asks for the same view.  Nothing here
 * reaches the network: the page's Content-Security-Policy allows only its own script and
 * style.
 */

import './style.css';
import { HostToView, PassChoice, ViewState, ViewToHost } from '../../src/common/graphMessages';
import { Model } from './model';
import { Pane, PaneEvents } from './pane';

declare function acquireVsCodeApi(): { postMessage(message: ViewToHost): void; getState(): unknown; setState(state: unknown): void };

const vscode = acquireVsCodeApi();
const LARGE = 1500; // nodes: above this, groups start collapsed

function send(message: ViewToHost): void {
    vscode.postMessage(message);
}

function element<K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<HTMLElementTagNameMap[K]> = {}, parent?: HTMLElement): HTMLElementTagNameMap[K] {
    const e = Object.assign(document.createElement(tag), props);
    parent?.appendChild(e);
    return e;
}

const app = document.getElementById('app')!;
const bar = element('div', { className: 'toolbar' }, app);
const picker = element('select', { id: 'pass', title: 'the snapshot to draw' }, bar);
const functions = element('select', { id: 'function', title: 'the function to draw' }, bar);
const compareLabel = element('label', { className: 'toggle', title: 'the snapshot before beside it, nodes mapped through spans' }, bar);
const compare = element('input', { type: 'checkbox', id: 'compare' }, compareLabel);
compareLabel.appendChild(document.createTextNode(' before/after'));
const buttons: Record<string, HTMLButtonElement> = {};
for (const [name, text, title] of [['fit', 'fit', 'the whole graph in view'], ['zoomout', '−', 'zoom out'], ['zoomin', '+', 'zoom in'],
    ['collapse', 'collapse', 'collapse the top-level groups'], ['expand', 'expand', 'expand every group']] as const) {
    buttons[name] = element('button', { id: name, textContent: text, title }, bar);
}
const status = element('span', { className: 'status' }, bar);
const panes = element('div', { className: 'panes' }, app);

let state: ViewState | null = null; // the host sends it with every graph; kept with setState for VS Code's serializer
let shown: Pane[] = [];
let mapping: { toAfter: Map<string, string[]>; toBefore: Map<string, string[]> } | null = null;
let last: Extract<HostToView, { type: 'graph' }> | null = null; // the graph message drawn
let graphId: string | null = null; // the function drawn (@main unless another was picked)
// The user's last choice of snapshot or comparison, numbered so that an answer to an earlier
// one (already on its way when the user chose again) is not drawn and does not reset the
// controls; from the clock, so numbers keep growing across a reload of the page.
let chosen = 0;

function choose(): void {
    chosen = Math.max(chosen + 1, Date.now());
    send({ type: 'choose', after: picker.value === '' ? null : Number(picker.value), compare: compare.checked, choice: chosen });
}

function other(pane: Pane): Pane | undefined {
    return shown.find((p) => p !== pane);
}

function mapped(pane: Pane, id: string): string[] {
    if (!mapping) {
        return [];
    }
    return (pane.side === 'after' ? mapping.toBefore : mapping.toAfter).get(id) ?? [];
}

const events: PaneEvents = {
    click(pane, id) {
        pane.setHighlight('selected', [id]);
        pane.describe(id);
        const there = other(pane);
        if (there) {
            const ids = mapped(pane, id);
            there.setHighlight('selected', []);
            there.setHighlight('mapped', ids);
            if (ids.length) {
                there.reveal(ids[0]);
            }
            there.describe(ids[0] ?? null);
        }
        const range = pane.model.ranges[id];
        if (range) {
            send({ type: 'reveal', range });
        }
    },
    open(pane, id) {
        const callee = pane.model.nodes.get(id)?.subgraphIds?.[0];
        if (callee && last?.answer.graph.graphs.some((g) => g.id === callee)) {
            graphId = callee;
            showGraph(last);
        }
    },
    hover(pane, id) {
        const there = other(pane);
        if (there && id) {
            const ids = mapped(pane, id);
            there.setHighlight('mapped', ids);
            if (ids.length) {
                there.reveal(ids[0]); // scrolls only when it is out of view
            }
        }
    },
    drawn(pane, visible, ms) {
        send({ type: 'drawn', nodes: pane.model.nodes.size, visible, ms });
        status.dataset[`${pane.side}Draw`] = ms.toFixed(0);
        status.title = `first draw: ${ms.toFixed(0)} ms for ${visible} visible nodes`;
    },
};

function fillPicker(passes: PassChoice[], chosen: number): void {
    picker.replaceChildren();
    passes.forEach((p, i) => {
        const last = i === passes.length - 1;
        const name = p.index === 0 ? 'input' : last ? `final (after ${p.name})` : `${p.index} · ${p.name}${p.changed ? '' : ' (no change)'}`;
        element('option', { value: String(p.index), textContent: name, selected: p.index === chosen }, picker);
    });
}

function showGraph(message: Extract<HostToView, { type: 'graph' }>): void {
    const { answer, passes } = message;
    last = message;
    const previous = new Map(shown.map((p) => [p.side, p]));
    state = message.state;
    vscode.setState(state);
    fillPicker(passes, answer.index);
    compare.checked = state.compare;
    panes.replaceChildren();
    shown = [];
    mapping = null;
    const ids = answer.graph.graphs.map((g) => g.id);
    graphId = graphId !== null && ids.includes(graphId) ? graphId : ids[0] ?? null;
    functions.replaceChildren(...ids.map((id) => element('option', { value: id, textContent: `@${id}`, selected: id === graphId })));
    functions.hidden = ids.length < 2;
    if (!graphId) {
        status.textContent = 'this module has no function to draw';
        return;
    }
    const sides: ['before' | 'after', typeof answer][] = [];
    if (state.compare && answer.before) {
        sides.push(['before', { ...answer, ...answer.before }]);
        const toAfter = new Map<string, string[]>();
        const toBefore = new Map<string, string[]>();
        for (const [left, right] of answer.mapping?.[graphId] ?? []) {
            left.forEach((id) => toAfter.set(id, right));
            right.forEach((id) => toBefore.set(id, left));
        }
        mapping = { toAfter, toBefore };
    }
    sides.push(['after', answer]);
    for (const [side, snap] of sides) {
        const graph = snap.graph.graphs.find((g) => g.id === graphId) ?? snap.graph.graphs[0];
        const layout = snap.layout?.[graph.id];
        if (!layout) {
            continue;
        }
        const title = `${side === 'before' && sides.length > 1 ? 'before: ' : sides.length > 1 ? 'after: ' : ''}`
            + `${snap.index === 0 ? 'input' : `${snap.index} · ${snap.passName}`} — @${graph.id}`;
        const pane = new Pane(panes, side, new Model(graph, layout, snap.ranges[graph.id] ?? {}), title,
            message.kernelColours, message.profile, events);
        const old = previous.get(side);
        if (old && old.model.nodes.size === pane.model.nodes.size) {
            old.collapsed.forEach((k) => pane.collapsed.add(k)); // a rebuild of the same graph keeps what was collapsed
        } else if (pane.model.nodes.size > LARGE) {
            pane.collapseTop();
        }
        shown.push(pane);
    }
    if (mapping && shown.length > 1) { // a node whose entry has nobody on the other side
        const [before, after] = shown;
        before.setHighlight('removed', [...before.model.nodes.keys()].filter((id) => mapping!.toAfter.get(id)?.length === 0));
        after.setHighlight('added', [...after.model.nodes.keys()].filter((id) => mapping!.toBefore.get(id)?.length === 0));
    }
    panes.classList.toggle('two', shown.length > 1);
    shown.forEach((p) => p.start()); // now, so that a reveal (the cursor's) that follows wins
    const nodes = shown[shown.length - 1]?.model.nodes.size ?? 0;
    status.textContent = `${nodes} nodes · v${answer.version}`;
    document.body.dataset.pass = answer.passName;
    document.body.dataset.index = String(answer.index);
}

function followCursor(line: number, character: number): void {
    const drawn = last?.answer;
    if (drawn && graphId && !Object.values(drawn.ranges[graphId] ?? {}).some((r) => r.start.line <= line && line <= r.end.line)) {
        const other = Object.keys(drawn.ranges).find((id) => Object.values(drawn.ranges[id]).some((r) => r.start.line <= line && line <= r.end.line));
        if (other && last) { // the cursor is in another function: draw that one
            graphId = other;
            showGraph(last);
        }
    }
    for (const pane of shown) {
        const ids = pane.model.nodesAtLine(line, character);
        pane.setHighlight('cursor', ids);
        if (ids.length) {
            pane.reveal(ids[0]);
            pane.describe(ids[0]);
        }
    }
}

window.addEventListener('message', (event: MessageEvent<HostToView>) => {
    const message = event.data;
    switch (message.type) {
        case 'loading':
            status.textContent = `loading ${message.what}…`;
            document.body.classList.add('loading');
            return;
        case 'graph':
            if (message.choice < chosen) {
                return; // the answer to the choice made since is on its way
            }
            document.body.classList.remove('loading');
            showGraph(message);
            return;
        case 'cursor':
            followCursor(message.line, message.character);
            return;
        case 'error':
            if (message.choice < chosen) {
                return;
            }
            document.body.classList.remove('loading');
            state = message.state;
            vscode.setState(state);
            panes.replaceChildren(element('p', { className: 'error', textContent: message.message }));
            shown = [];
            status.textContent = '';
            return;
    }
});

functions.addEventListener('change', () => {
    graphId = functions.value;
    if (last) {
        showGraph(last);
    }
});
picker.addEventListener('change', choose);
compare.addEventListener('change', choose);
buttons.fit.addEventListener('click', () => shown.forEach((p) => p.fitAll()));
buttons.zoomin.addEventListener('click', () => shown.forEach((p) => p.zoomBy(1.25)));
buttons.zoomout.addEventListener('click', () => shown.forEach((p) => p.zoomBy(0.8)));
buttons.collapse.addEventListener('click', () => shown.forEach((p) => p.collapseTop()));
buttons.expand.addEventListener('click', () => shown.forEach((p) => p.expandAll()));

send({ type: 'ready' });
