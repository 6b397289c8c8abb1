/**
 * The Graph view's data and messages, typed in one place for both of its sides: the
 * extension host (features/graphView.ts) and the webview (webview/graph/).  No import of
 * `vscode` here: the webview bundle includes this file.
 *
 * The graph is the server's `relaylens/graph` answer (docs/lsp.md) as it comes: Model
 * Explorer's graph JSON, the nodes' document ranges, the layout (the SVG export's), and,
 * for a comparison, the snapshot before and which nodes became which.
 */

export interface LspPosition {
    line: number; // 0-based
    character: number; // UTF-16
}

export interface LspRange {
    start: LspPosition;
    end: LspPosition;
}

export interface ExplorerAttr {
    key: string;
    value: string;
}

export interface ExplorerNode {
    id: string;
    label: string;
    namespace: string; // groups joined by `/`, a `/` inside a name written `\/`
    attrs: ExplorerAttr[];
    incomingEdges: { sourceNodeId: string; sourceNodeOutputId: string; targetNodeInputId: string }[];
    outputsMetadata: { id: string; attrs: ExplorerAttr[] }[];
    subgraphIds?: string[];
}

export interface ExplorerGraph {
    id: string;
    nodes: ExplorerNode[];
    groupNodeAttributes: Record<string, Record<string, string>>; // namespace -> {kind, function}
}

export type Box = [number, number, number, number];

export interface GraphLayout {
    width: number;
    height: number;
    seconds: number; // the server's layout time
    nodes: Record<string, Box>; // centre x, centre y, width, height
    groups: Record<string, Box>; // x0, y0, x1, y1
    edges: [string, string, number[]][]; // source, target, route x0, y0, x1, y1, ...
}

export interface GraphSnapshot {
    index: number;
    passName: string;
    graph: { label: string; graphs: ExplorerGraph[] };
    ranges: Record<string, Record<string, LspRange>>; // graph id -> node id -> its Relay text
    layout?: Record<string, GraphLayout>; // graph id -> layout
}

export interface GraphAnswer extends GraphSnapshot {
    uri: string;
    version: number;
    before?: GraphSnapshot | null; // with `compare`: the snapshot before (null for the input)
    mapping?: Record<string, [string[], string[]][]>; // with `compare`: [before ids, after ids] entries
}

export interface GraphParams {
    uri: string;
    after?: string | number;
    version?: number;
    layout?: boolean;
    compare?: boolean;
}

/** One entry of the pass picker: a snapshot of the build (0 is the input). */
export interface PassChoice {
    index: number;
    name: string;
    changed: boolean;
}

/** What the view shows, kept across reloads (in the webview's state and the workspace state). */
export interface ViewState {
    uri: string; // the Relay document
    after: number | null; // the snapshot shown; null: the last (after the whole pipeline)
    compare: boolean; // the snapshot before beside it
}

/** extension host -> webview */
export type HostToView =
    | { type: 'loading'; what: string }
    | {
          type: 'graph';
          state: ViewState;
          choice: number; // the view's last choice the host had when it fetched this (see 'choose')
          answer: GraphAnswer;
          passes: PassChoice[];
          kernelColours: Record<string, number>; // fused function -> its line colour (0..5), as the editor's
          profile: Record<string, number> | null; // fused function -> share of the run time (0..1)
      }
    | { type: 'cursor'; line: number; character: number } // the Relay editor's cursor moved
    | { type: 'error'; message: string; state: ViewState; choice: number };

/** webview -> extension host */
export type ViewToHost =
    | { type: 'ready' } // the page loaded (or reloaded): send the graph
    // the pass picker or the compare toggle; `choice` grows with every choice, so the view can
    // drop an answer to an older one that arrives after the user chose again
    | { type: 'choose'; after: number | null; compare: boolean; choice: number }
    | { type: 'reveal'; range: LspRange } // a node was clicked: select its Relay text
    | { type: 'drawn'; nodes: number; visible: number; ms: number }; // a draw's time, for the log

/** The view type of the panel (and of its serializer). */
export const GRAPH_VIEW_TYPE = 'relaylens.graph';

/** The line colours the editor paints fused groups with (features/lineColours.ts). */
export const LINE_COLOURS = 6;
