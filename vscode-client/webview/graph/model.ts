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

class Grid<T> {
    private readonly cells = new Map<string, T[]>();

    add(item: T, x0: number, y0: number, x1: number, y1: number): void {
        for (let cx = Math.floor(x0 / CELL); cx <= Math.floor(x1 / CELL); cx++) {
            for (let cy = Math.floor(y0 / CELL); cy <= Math.floor(y1 / CELL); cy++) {
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

    query(x0: number, y0: number, x1: number, y1: number): Set<T> {
        const found = new Set<T>();
        for (let cx = Math.floor(x0 / CELL); cx <= Math.floor(x1 / CELL); cx++) {
            for (let cy = Math.floor(y0 / CELL); cy <= Math.floor(y1 / CELL); cy++) {
                this.cells.get(`${cx},${cy}`)?.forEach((item) => found.add(item));
            }
        }
        return found;
    }
}

export class Model {
    readonly nodes = new Map<string, ExplorerNode>();
    readonly kinds = new Map<string, Kind>();
    readonly groupsOf = new Map<string, string[]>(); // node id -> its group keys, outermost first
    readonly groups = new Map<string, Group>();
    readonly edges: Edge[];
    readonly nodeGrid = new Grid<string>();
    readonly groupGrid = new Grid<string>();
    readonly edgeGrid = new Grid<number>();

    constructor(readonly graph: ExplorerGraph, readonly layout: GraphLayout, readonly ranges: Record<string, LspRange>) {
        for (const node of graph.nodes) {
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
            const xs = edge.route.filter((_, j) => j % 2 === 0);
            const ys = edge.route.filter((_, j) => j % 2 === 1);
            this.edgeGrid.add(i, Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys));
        });
    }

    /** The nodes whose Relay text covers `line`, the one at `character` (the innermost) first. */
    nodesAtLine(line: number, character: number): string[] {
        const hits: { id: string; exact: boolean; size: number }[] = [];
        for (const [id, r] of Object.entries(this.ranges)) {
            if (r.start.line <= line && line <= r.end.line && this.nodes.has(id)) {
                const after = line > r.start.line || character >= r.start.character;
                const before = line < r.end.line || character <= r.end.character;
                const size = (r.end.line - r.start.line) * 10000 + r.end.character - r.start.character;
                hits.push({ id, exact: after && before, size });
            }
        }
        const op = (id: string) => (this.kinds.get(id) === 'op' || this.kinds.get(id) === 'call' ? 0 : 1);
        hits.sort((a, b) => Number(b.exact) - Number(a.exact) || op(a.id) - op(b.id) || a.size - b.size);
        return hits.map((h) => h.id);
    }
}
