/**
 * One drawn graph: an SVG that shows only what is in view (the model's grid), panned by
 * dragging or the wheel, zoomed with Ctrl+wheel or the toolbar, with groups that collapse
 * when their name is clicked.  The positions are the server's layout, so a group keeps its
 * place when it collapses: its box turns opaque and says how many nodes it holds, and
 * edges into it end at its border.
 *
 * Highlights are sets of node ids (`selected`: clicked; `cursor`: the Relay cursor's line;
 * `mapped`: what the other side of a comparison relates to the node under the pointer or
 * selected there; `added` / `removed`: in a comparison, nodes that the other side has no
 * node for), re-applied whenever the visible part is drawn again.
 */

import { ExplorerNode } from '../../src/common/graphMessages';
import { Edge, Model, attr, hashColour, shapeOf } from './model';

const SVG = 'http://www.w3.org/2000/svg';
const MAX_LABEL = 40;
const DETAIL_ZOOM = 0.45; // below this, nodes are drawn without text
const EDGE_LABEL_ZOOM = 0.8;
const MARGIN = 200; // layout pixels drawn beyond the viewport, so a short pan shows no gap
const MASS = 3000; // nodes and edges in view: above this (zoomed out), drawn as three paths

export type Highlight = 'selected' | 'cursor' | 'mapped' | 'added' | 'removed';

export interface PaneEvents {
    click(pane: Pane, id: string): void;
    open(pane: Pane, id: string): void; // a double click: a call's function
    hover(pane: Pane, id: string | null): void;
    drawn(pane: Pane, visible: number, ms: number): void;
}

function el<K extends keyof SVGElementTagNameMap>(name: K, attrs: Record<string, string | number>, parent?: Element): SVGElementTagNameMap[K] {
    const e = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) {
        e.setAttribute(k, String(v));
    }
    parent?.appendChild(e);
    return e;
}

function clip(text: string, width = MAX_LABEL): string {
    return text.length <= width ? text : text.slice(0, width - 1) + '…';
}

function path(route: number[]): string {
    let d = `M${route[0]},${route[1]}`;
    for (let i = 2; i + 1 < route.length; i += 2) {
        const [x1, y1, x2, y2] = [route[i - 2], route[i - 1], route[i], route[i + 1]];
        const mid = (y1 + y2) / 2;
        d += ` C${x1},${mid} ${x2},${mid} ${x2},${y2}`;
    }
    return d;
}

export class Pane {
    readonly root: HTMLDivElement;
    readonly svg: SVGSVGElement;
    private readonly info: HTMLDivElement;
    private readonly layers: { groups: SVGGElement; edges: SVGGElement; nodes: SVGGElement; closed: SVGGElement };
    readonly collapsed = new Set<string>();
    readonly highlights: Record<Highlight, Set<string>> = { selected: new Set(), cursor: new Set(), mapped: new Set(), added: new Set(), removed: new Set() };
    zoom = 1;
    private x = 0; // the view's top-left corner, in layout pixels
    private y = 0;
    private pending = false;
    private firstDraw = true;
    private mass = false; // the last draw was of the far-away kind: a click zooms in there
    private readonly slowest: number; // the largest share of the run among the kernels profiled

    constructor(
        parent: HTMLElement,
        readonly side: 'before' | 'after',
        readonly model: Model,
        title: string,
        private readonly colours: Record<string, number>,
        private readonly profile: Record<string, number> | null,
        private readonly events: PaneEvents,
    ) {
        this.slowest = Object.values(profile ?? {}).reduce((a, b) => Math.max(a, b), 1e-9);
        this.root = document.createElement('div');
        this.root.className = `pane ${side}`;
        const heading = document.createElement('div');
        heading.className = 'pane-title';
        heading.textContent = title;
        this.root.appendChild(heading);
        this.svg = el('svg', { class: 'graph', 'data-side': side });
        this.root.appendChild(this.svg);
        this.info = document.createElement('div');
        this.info.className = 'info';
        this.root.appendChild(this.info);
        parent.appendChild(this.root);
        this.layers = {
            groups: el('g', { class: 'groups' }, this.svg),
            edges: el('g', { class: 'edges' }, this.svg),
            nodes: el('g', { class: 'nodes' }, this.svg),
            closed: el('g', { class: 'closed-groups' }, this.svg),
        };
        this.listen();
        this.describe(null);
    }

    // ---- viewing ------------------------------------------------------------------------

    private size(): { w: number; h: number } {
        const r = this.svg.getBoundingClientRect();
        return { w: Math.max(r.width, 50), h: Math.max(r.height, 50) };
    }

    /**
     * The first view: the whole graph when it is readable so (1:2 or closer), else its top
     * (its first inputs) at 0.6:1 or closer, the whole width if that fits.
     */
    start(): void {
        const { w, h } = this.size();
        const layout = this.model.layout;
        if (Math.min(w / (layout.width + 20), h / (layout.height + 20)) >= 0.5) {
            this.fitAll(); // a small graph: all of it
            return;
        }
        this.zoom = Math.min(1, Math.max(0.6, w / (layout.width + 20)));
        let top: number[] | undefined;
        for (const box of Object.values(layout.nodes)) {
            if (!top || box[1] < top[1]) {
                top = box;
            }
        }
        const centre = w / this.zoom >= layout.width ? layout.width / 2 : top?.[0] ?? layout.width / 2;
        this.x = centre - w / 2 / this.zoom;
        this.y = -10;
        this.schedule();
    }

    fitAll(): void {
        const { w, h } = this.size();
        this.zoom = Math.min(1, w / (this.model.layout.width + 20), h / (this.model.layout.height + 20));
        this.x = (this.model.layout.width - w / this.zoom) / 2;
        this.y = (this.model.layout.height - h / this.zoom) / 2;
        this.schedule();
    }

    zoomBy(factor: number, cx?: number, cy?: number): void {
        const { w, h } = this.size();
        const px = cx ?? w / 2;
        const py = cy ?? h / 2;
        const lx = this.x + px / this.zoom;
        const ly = this.y + py / this.zoom;
        this.zoom = Math.min(4, Math.max(0.005, this.zoom * factor));
        this.x = lx - px / this.zoom;
        this.y = ly - py / this.zoom;
        this.schedule();
    }

    /** Bring node `id` into view (expanding its groups), centred unless it is in view already. */
    reveal(id: string, always = false): void {
        const placed = this.model.layout.nodes[id];
        if (!placed) {
            return;
        }
        for (const key of this.model.groupsOf.get(id) ?? []) {
            this.collapsed.delete(key);
        }
        const [x, y, bw, bh] = placed;
        const { w, h } = this.size();
        const inside = x - bw / 2 > this.x && x + bw / 2 < this.x + w / this.zoom
            && y - bh / 2 > this.y && y + bh / 2 < this.y + h / this.zoom;
        if (always || !inside) {
            if (this.zoom < DETAIL_ZOOM) {
                this.zoom = 1;
            }
            this.x = x - w / 2 / this.zoom;
            this.y = y - h / 2 / this.zoom;
        }
        this.schedule();
    }

    setHighlight(kind: Highlight, ids: Iterable<string>): void {
        this.highlights[kind] = new Set(ids);
        this.schedule();
    }

    collapseTop(): void {
        for (const g of this.model.groups.values()) {
            if (g.depth === 1) {
                this.collapsed.add(g.key);
            }
        }
        this.schedule();
    }

    expandAll(): void {
        this.collapsed.clear();
        this.schedule();
    }

    schedule(): void {
        if (!this.pending) {
            this.pending = true;
            requestAnimationFrame(() => {
                this.pending = false;
                this.draw();
            });
        }
    }

    // ---- drawing ------------------------------------------------------------------------

    /** The outermost collapsed group that hides node `id`, if any. */
    private hiddenBy(id: string): string | null {
        for (const key of this.model.groupsOf.get(id) ?? []) {
            if (this.collapsed.has(key)) {
                return key;
            }
        }
        return null;
    }

    private groupHidden(key: string): boolean {
        for (let p = this.model.groups.get(key)?.parent; p; p = this.model.groups.get(p)?.parent ?? null) {
            if (this.collapsed.has(p)) {
                return true;
            }
        }
        return false;
    }

    draw(): void {
        const started = performance.now();
        const { w, h } = this.size();
        this.svg.setAttribute('viewBox', `${this.x} ${this.y} ${w / this.zoom} ${h / this.zoom}`);
        this.svg.classList.toggle('far', this.zoom < DETAIL_ZOOM);
        const m = MARGIN / Math.max(this.zoom, 0.05);
        const [x0, y0, x1, y1] = [this.x - m, this.y - m, this.x + w / this.zoom + m, this.y + h / this.zoom + m];
        Object.values(this.layers).forEach((layer) => layer.replaceChildren());
        const model = this.model;
        const detail = this.zoom >= DETAIL_ZOOM;
        const nodes = model.nodeGrid.query(x0, y0, x1, y1).filter((id) => this.hiddenBy(id) === null);
        const groups = model.groupGrid.query(x0, y0, x1, y1).filter((k) => !this.groupHidden(k))
            .sort((a, b) => model.groups.get(a)!.depth - model.groups.get(b)!.depth);
        const edges = model.edgeGrid.query(x0, y0, x1, y1).map((i) => model.edges[i]).filter((edge) => {
            const a = this.hiddenBy(edge.source);
            return a === null || a !== this.hiddenBy(edge.target);
        });
        this.mass = !detail && nodes.length + edges.length > MASS;
        if (this.mass) { // far away and many: one path each for edges and nodes, boxes without names
            this.drawMass(nodes, edges, groups);
        } else {
            groups.forEach((key) => this.drawGroup(key));
            edges.forEach((edge) => this.drawEdge(edge, detail));
            nodes.forEach((id) => this.drawNode(model.nodes.get(id)!, detail));
        }
        const ms = performance.now() - started;
        if (this.firstDraw) {
            this.firstDraw = false;
            this.events.drawn(this, nodes.length, ms);
        }
    }

    private drawMass(nodes: string[], edges: Edge[], groups: string[]): void {
        const boxes = groups.map((key) => {
            const [x0, y0, x1, y1] = this.model.groups.get(key)!.box;
            return `M${x0},${y0}H${x1}V${y1}H${x0}Z`;
        });
        el('path', { class: 'mass-groups', d: boxes.join('') }, this.layers.groups);
        const lines = edges.map((edge) => {
            let d = `M${edge.route[0]},${edge.route[1]}`;
            for (let j = 2; j + 1 < edge.route.length; j += 2) {
                d += `L${edge.route[j]},${edge.route[j + 1]}`;
            }
            return d;
        });
        el('path', { class: 'mass-edges', d: lines.join('') }, this.layers.edges);
        const rects = nodes.map((id) => {
            const [x, y, w, h] = this.model.layout.nodes[id];
            return `M${x - w / 2},${y - h / 2}h${w}v${h}h${-w}Z`;
        });
        el('path', { class: 'mass-nodes', d: rects.join('') }, this.layers.nodes);
        const marked = [...this.highlights.selected, ...this.highlights.cursor, ...this.highlights.mapped];
        for (const id of marked) {
            if (this.model.layout.nodes[id] && this.hiddenBy(id) === null) {
                this.drawNode(this.model.nodes.get(id)!, false);
            }
        }
    }

    private drawEdge(edge: Edge, detail: boolean): void {
        const p = el('path', { class: 'edge', d: path(edge.route), 'data-src': edge.source, 'data-dst': edge.target }, this.layers.edges);
        if (this.highlights.selected.has(edge.source) || this.highlights.selected.has(edge.target)) {
            p.classList.add('near');
        }
        if (detail && this.zoom >= EDGE_LABEL_ZOOM && edge.route.length >= 4) {
            const source = this.model.nodes.get(edge.source);
            const t = el('text', { class: 'edge-label', x: (edge.route[0] + edge.route[2]) / 2 + 3, y: (edge.route[1] + edge.route[3]) / 2 }, this.layers.edges);
            t.textContent = clip(source ? shapeOf(source) : '', 28);
        }
    }

    private drawGroup(key: string): void {
        const group = this.model.groups.get(key)!;
        const closed = this.collapsed.has(key);
        const [x0, y0, x1, y1] = group.box;
        const g = el('g', { class: 'group', 'data-ns': key }, closed ? this.layers.closed : this.layers.groups);
        if (group.fused) {
            g.classList.add('fused', `k${this.colours[group.fused] ?? hashColour(group.fused)}`);
        }
        if (closed) {
            g.classList.add('collapsed');
            el('rect', { class: 'under', x: x0, y: y0, width: x1 - x0, height: y1 - y0, rx: 6 }, g);
        }
        el('rect', { class: 'box', x: x0, y: y0, width: x1 - x0, height: y1 - y0, rx: 6 }, g);
        const label = el('text', { class: 'group-label', x: x0 + 5, y: y0 + 12 }, g);
        label.textContent = closed ? `▸ ${clip(group.name, 60)} (${group.members} nodes)` : `▾ ${clip(group.name, 60)}`;
        el('title', {}, g).textContent = group.fused ?? key.split('/').join(' ▸ ');
    }

    private drawNode(node: ExplorerNode, detail: boolean): void {
        const [x, y, w, h] = this.model.layout.nodes[node.id] ?? [0, 0, 0, 0];
        const range = this.model.ranges[node.id];
        const g = el('g', {
            class: `node ${this.model.kinds.get(node.id)}`, 'data-id': node.id,
            transform: `translate(${x - w / 2},${y - h / 2})`,
        }, this.layers.nodes);
        if (range) {
            g.setAttribute('data-line', String(range.start.line + 1));
        }
        for (const kind of ['selected', 'cursor', 'mapped', 'added', 'removed'] as const) {
            if (this.highlights[kind].has(node.id)) {
                g.classList.add(kind);
            }
        }
        const rect = el('rect', { width: w, height: h, rx: 4 }, g);
        const share = this.profileShare(node);
        if (share !== undefined) {
            rect.style.fill = `hsl(${Math.round(50 - 50 * share)}, 90%, ${Math.round(88 - 38 * share)}%)`;
        }
        if (detail) {
            el('text', { x: 8, y: 14 }, g).textContent = clip(node.label);
            el('text', { class: 'shape', x: 8, y: 27 }, g).textContent = clip(shapeOf(node));
        }
    }

    /** The node's kernel's share of the run time, scaled to the largest share (0..1). */
    private profileShare(node: ExplorerNode): number | undefined {
        const fused = attr(node, 'fused');
        const share = fused && this.profile ? this.profile[fused] : undefined;
        if (share === undefined || !this.profile) {
            return undefined;
        }
        return Math.min(1, share / this.slowest);
    }

    /** The info line: a node's operator, type, place and groups (or a summary). */
    describe(id: string | null): void {
        const node = id ? this.model.nodes.get(id) : undefined;
        this.info.replaceChildren();
        if (!node) {
            const fused = [...this.model.groups.values()].filter((g) => g.fused).length;
            this.info.textContent = `${this.model.nodes.size} nodes, ${this.model.groups.size} groups (${fused} fused functions); `
                + `layout ${(this.model.layout.seconds * 1000).toFixed(0)} ms in the server. Click a node to select its Relay text.`;
            return;
        }
        const strong = document.createElement('b');
        strong.textContent = node.label;
        this.info.appendChild(strong);
        const parts = [` ${node.id}`];
        const type = attr(node, 'type');
        if (type) {
            parts.push(type);
        }
        const span = attr(node, 'span');
        if (span) {
            parts.push(`line ${span.split(':')[0]}`);
        }
        const layer = attr(node, 'layer');
        if (layer) {
            parts.push(`layer ${layer}`);
        }
        const fused = attr(node, 'fused');
        if (fused) {
            parts.push(`in ${fused}`);
            const share = this.profile?.[fused];
            if (share !== undefined) {
                parts.push(`${(share * 100).toFixed(1)}% of the run`);
            }
        }
        this.info.appendChild(document.createTextNode(parts.join(' · ')));
    }

    // ---- input --------------------------------------------------------------------------

    private listen(): void {
        let drag: { x: number; y: number; moved: boolean } | null = null;
        this.svg.addEventListener('pointerdown', (ev) => {
            drag = { x: ev.clientX, y: ev.clientY, moved: false };
        });
        this.svg.addEventListener('pointermove', (ev) => {
            if (drag && (ev.buttons & 1)) {
                const dx = ev.clientX - drag.x;
                const dy = ev.clientY - drag.y;
                if (drag.moved || Math.abs(dx) + Math.abs(dy) > 4) {
                    drag.moved = true;
                    this.x -= dx / this.zoom;
                    this.y -= dy / this.zoom;
                    drag.x = ev.clientX;
                    drag.y = ev.clientY;
                    this.schedule();
                }
            }
        });
        this.svg.addEventListener('pointerup', () => setTimeout(() => (drag = null)));
        this.svg.addEventListener('click', (ev) => {
            if (drag?.moved) {
                return;
            }
            const target = ev.target as Element;
            if (this.mass && !target.closest('.node')) {
                const r = this.svg.getBoundingClientRect();
                this.zoomBy(1 / this.zoom, ev.clientX - r.left, ev.clientY - r.top);
                return;
            }
            const node = target.closest('.node') as SVGGElement | null;
            if (node?.dataset.id) {
                this.events.click(this, node.dataset.id);
                return;
            }
            const group = target.closest('.group') as SVGGElement | null;
            if (group?.dataset.ns && target.classList.contains('group-label')) {
                const key = group.dataset.ns;
                if (!this.collapsed.delete(key)) {
                    this.collapsed.add(key);
                }
                this.schedule();
            }
        });
        this.svg.addEventListener('dblclick', (ev) => {
            const node = (ev.target as Element).closest('.node') as SVGGElement | null;
            if (node?.dataset.id) {
                this.events.open(this, node.dataset.id);
            }
        });
        this.svg.addEventListener('pointerover', (ev) => {
            const node = (ev.target as Element).closest('.node') as SVGGElement | null;
            this.events.hover(this, node?.dataset.id ?? null);
        });
        this.svg.addEventListener('wheel', (ev) => {
            ev.preventDefault();
            if (ev.ctrlKey || ev.metaKey) {
                const r = this.svg.getBoundingClientRect();
                this.zoomBy(Math.exp(-ev.deltaY / 300), ev.clientX - r.left, ev.clientY - r.top);
            } else {
                this.x += (ev.shiftKey ? ev.deltaY : ev.deltaX) / this.zoom;
                this.y += (ev.shiftKey ? 0 : ev.deltaY) / this.zoom;
                this.schedule();
            }
        }, { passive: false });
        new ResizeObserver(() => this.schedule()).observe(this.svg);
    }
}
