/**
 * One snapshot's graph made ready to draw: nodes by id, the groups (ONNX layers and fused
 * functions) with their boxes from the server's layout, each node's groups outermost
 * first, and a grid of everything's bounding box so that a draw touches only what is in
 * view (the graph may have 10,000+ nodes).
 */

import { Box, ExplorerGraph, ExplorerNode, GraphLayout, LINE_COLOURS, LspRange } from '../../src/common/graphMessages';

export interface Group {
    key: string; // the namespace text up to this group, as the JSON and the layout key it
    name: string; // its own name (the last part)
    depth: number; // 1 for a top-level group
    parent: string | null;
    box: Box; // x0, y0, x1, y1
    fused: string | null; // the kernel's full name, for a fused function's group
    members: number; // nodes inside, at any depth
}

export type Kind = 'op' | 'call' | 'input' | 'constant' | 'tuple' | 'other';

export interface Edge {
    source: string;
    target: string;
    route: number[];
}

const CELL = 400; // grid cell, in layout pixels
const LARGE_ITEM = 64; // cells: an item over more is tested on every query instead

/** The parts of a namespace (`a/b\/c` -> [a, b/c]) and the key of each prefix. */
export function namespaceKeys(namespace: string): { names: string[]; keys: string[] } {
    const names: string[] = [];
    const keys: string[] = [];
    let current = '';
    for (let i = 0; i < namespace.length; i++) {
        const c = namespace[i];
        if (c === '\\' && namespace[i + 1] === '/') {
            current += '/';
            i++;
        } else if (c === '/') {
            names.push(current);
            keys.push(namespace.slice(0, i));
            current = '';
        } else {
            current += c;
        }
    }
    if (namespace) {
        names.push(current);
        keys.push(namespace);
    }
    return { names, keys };
}

export function kindOf(node: ExplorerNode): Kind {
    const label = node.label;
    if (label.startsWith('%')) {
        return 'input';
    }
    if (label.startsWith('constant')) {
        return 'constant';
    }
    if (label === 'tuple') {
        return 'tuple';
    }
    if (label.startsWith('@') || label === 'call') {
        return 'call';
    }
    return /^[A-Za-z_][\w.]*$/.test(label) ? 'op' : 'other';
}

export function attr(node: ExplorerNode, key: string): string | undefined {
    return node.attrs.find((a) => a.key === key)?.value;
}

/** The shape of a node's first output, as the SVG export labels it. */
export function shapeOf(node: ExplorerNode): string {
    if (node.outputsMetadata.length > 1) {
        return `(${node.outputsMetadata.length} outputs)`;
    }
    return node.outputsMetadata[0]?.attrs.find((a) => a.key === 'tensor_shape')?.value ?? '';
}

/** A stable colour index (0..5) for a kernel the line map does not name. */
export function hashColour(name: string): number {
    let h = 0;
    for (let i = 0; i < name.length; i++) {
        h = (h * 31 + name.charCodeAt(i)) | 0;
    }
    return Math.abs(h) % LINE_COLOURS;
}

/**
 * Items by bounding box, in square cells.  An item that spans many cells (a group around
 * half the graph, an edge from a weight used everywhere) is kept aside in `large` and
 * tested on every query; a query over many cells (the whole graph in view) tests every
 * item once instead of walking the cells.
 */
class Grid<T> {
    private readonly cells = new Map<string, T[]>();
    private readonly boxes = new Map<T, [number, number, number, number]>();
    private readonly large: T[] = [];

    add(item: T, x0: number, y0: number, x1: number, y1: number): void {
        this.boxes.set(item, [x0, y0, x1, y1]);
        const [cx0, cy0, cx1, cy1] = [x0, y0, x1, y1].map((v) => Math.floor(v / CELL));
        if ((cx1 - cx0 + 1) * (cy1 - cy0 + 1) > LARGE_ITEM) {
            this.large.push(item);
            return;
        }
        for (let cx = cx0; cx <= cx1; cx++) {
            for (let cy = cy0; cy <= cy1; cy++) {
                const key = `${cx},${cy}`;
                const cell = this.cells.get(key);
                if (cell) {
                    cell.push(item);
                } else {
                    this.cells.set(key, [item]);
                }
            }
        }
    }

    query(x0: number, y0: number, x1: number, y1: number): T[] {
        const meets = (item: T) => {
            const b = this.boxes.get(item)!;
            return b[0] <= x1 && x0 <= b[2] && b[1] <= y1 && y0 <= b[3];
        };
        const [cx0, cy0, cx1, cy1] = [x0, y0, x1, y1].map((v) => Math.floor(v / CELL));
        if ((cx1 - cx0 + 1) * (cy1 - cy0 + 1) > this.cells.size) {
            return [...this.boxes.keys()].filter(meets);
        }
        const found = new Set<T>();
        for (let cx = cx0; cx <= cx1; cx++) {
            for (let cy = cy0; cy <= cy1; cy++) {
                this.cells.get(`${cx},${cy}`)?.forEach((item) => found.add(item));
            }
        }
        return [...found, ...this.large].filter(meets);
    }
}

export class Model {
    readonly nodes = new Map<string, ExplorerNode>();
    readonly order = new Map<string, number>(); // a node's place in the JSON: operands before their users
    readonly kinds = new Map<string, Kind>();
    readonly groupsOf = new Map<string, string[]>(); // node id -> its group keys, outermost first
    readonly groups = new Map<string, Group>();
    readonly edges: Edge[];
    readonly nodeGrid = new Grid<string>();
    readonly groupGrid = new Grid<string>();
    readonly edgeGrid = new Grid<number>();

    constructor(readonly graph: ExplorerGraph, readonly layout: GraphLayout, readonly ranges: Record<string, LspRange>) {
        for (const node of graph.nodes) {
            this.order.set(node.id, this.order.size);
            this.nodes.set(node.id, node);
            this.kinds.set(node.id, kindOf(node));
            const { names, keys } = namespaceKeys(node.namespace);
            this.groupsOf.set(node.id, keys);
            keys.forEach((key, d) => {
                let group = this.groups.get(key);
                if (!group) {
                    const box = layout.groups[key] ?? [0, 0, 0, 0];
                    const fused = graph.groupNodeAttributes[key]?.function ?? null;
                    group = { key, name: names[d], depth: d + 1, parent: d ? keys[d - 1] : null, box, fused, members: 0 };
                    this.groups.set(key, group);
                    this.groupGrid.add(key, ...box);
                }
                group.members++;
            });
            const placed = layout.nodes[node.id];
            if (placed) {
                const [x, y, w, h] = placed;
                this.nodeGrid.add(node.id, x - w / 2, y - h / 2, x + w / 2, y + h / 2);
            }
        }
        this.edges = layout.edges.map(([source, target, route]) => ({ source, target, route }));
        this.edges.forEach((edge, i) => {
            let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
            for (let j = 0; j + 1 < edge.route.length; j += 2) {
                [x0, x1] = [Math.min(x0, edge.route[j]), Math.max(x1, edge.route[j])];
                [y0, y1] = [Math.min(y0, edge.route[j + 1]), Math.max(y1, edge.route[j + 1])];
            }
            this.edgeGrid.add(i, x0, y0, x1, y1);
        });
    }

    /** The nodes whose Relay text covers `line`, the one at `character` (the innermost) first. */
    nodesAtLine(line: number, character: number): string[] {
        const hits: { id: string; exact: boolean; size: number; order: number }[] = [];
        for (const [id, r] of Object.entries(this.ranges)) {
            const order = this.order.get(id);
            if (r.start.line <= line && line <= r.end.line && order !== undefined) {
                const after = line > r.start.line || character >= r.start.character;
                const before = line < r.end.line || character <= r.end.character;
                const size = (r.end.line - r.start.line) * 10000 + r.end.character - r.start.character;
                hits.push({ id, exact: after && before, size, order });
            }
        }
        // nodes made from one expression (a weight's layout_transform and its convolution)
        // share its range: the last of them, the consumer, is the expression itself
        const op = (id: string) => (this.kinds.get(id) === 'op' || this.kinds.get(id) === 'call' ? 0 : 1);
        hits.sort((a, b) => Number(b.exact) - Number(a.exact) || op(a.id) - op(b.id) || a.size - b.size || b.order - a.order);
        return hits.map((h) => h.id);
    }
}
