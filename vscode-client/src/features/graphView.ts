/**
 * RelayLens: Show Graph — the dataflow graph of the active Relay document at a chosen pass,
 * in a webview beside the editor (the drawing: webview/graph/).
 *
 * The graph is the server's `relaylens/graph` answer with its layout (the one the SVG and
 * HTML export draw) and, when the view compares, the snapshot before with the mapping of
 * its nodes; this module fetches it, adds the editor's line colour of each fused function
 * (`relaylens/lineMap`, the order features/lineColours.ts paints) and the last profile's
 * share of each (`relaylens/lastProfile`), and passes messages (common/graphMessages.ts):
 *
 *   - a click on a node selects its Relay text in the editor that shows the document
 *     (never a second copy), focused;
 *   - the Relay editor's cursor goes to the view, which highlights the nodes of that line;
 *   - the pass picker and the compare toggle ask for another snapshot;
 *   - a finished build of the document redraws the snapshot shown (the last one when it
 *     is gone).
 *
 * One panel per document; the command on a document that has one reveals it, and on one
 * whose view was closed opens it as it was (same snapshot and comparison).  A panel
 * survives a window reload (its state: document, snapshot, comparison; kept in the
 * workspace state as soon as it changes, and in the webview's).  The webview runs
 * under a Content-Security-Policy with a nonce and no network.
 */

import * as crypto from 'crypto';
import * as vscode from 'vscode';
import { BuildEvents } from '../common/builds';
import { COMMANDS, LANGUAGE_ID } from '../common/constants';
import { GRAPH_VIEW_TYPE, HostToView, LINE_COLOURS, LspRange, PassChoice, ViewState, ViewToHost } from '../common/graphMessages';
import { GraphRequest, LineMapRequest, ProfileReport, SnapshotsRequest } from '../common/protocol';
import { ServerManager } from '../common/server';

const SCRIPT = ['dist', 'graph-view.js'];
const STYLE = ['dist', 'graph-view.css']; // esbuild writes it beside the script

function html(webview: vscode.Webview, extension: vscode.Uri): string {
    const nonce = crypto.randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(extension, ...SCRIPT));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(extension, ...STYLE));
    const csp = [`default-src 'none'`, `style-src ${webview.cspSource}`, `script-src 'nonce-${nonce}'`].join('; ');
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${style}">
<title>RelayLens graph</title></head>
<body><div id="app"></div>
<script nonce="${nonce}" src="${script}"></script></body></html>`;
}

function isRange(value: unknown): value is LspRange {
    const r = value as LspRange | undefined;
    const ok = (p: unknown) => typeof p === 'object' && p !== null
        && Number.isInteger((p as { line: number }).line) && Number.isInteger((p as { character: number }).character);
    return !!r && ok(r.start) && ok(r.end);
}

class GraphPanel implements vscode.Disposable {
    private state: ViewState;
    private choice = 0; // the view's last choice (echoed with each answer)
    private readonly subscriptions: vscode.Disposable[] = [];
    private loading = 0; // the latest load; an older answer is dropped

    constructor(
        readonly panel: vscode.WebviewPanel,
        state: ViewState,
        private readonly server: ServerManager,
        builds: BuildEvents,
        extension: vscode.Uri,
        private readonly output: (line: string) => void,
        private readonly remember: (state: ViewState) => void,
        onDispose: () => void,
    ) {
        this.state = state;
        panel.webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extension, 'dist')] };
        panel.webview.html = html(panel.webview, extension);
        panel.title = `Graph: ${vscode.Uri.parse(state.uri).path.split('/').pop()}`;
        this.subscriptions.push(
            panel.webview.onDidReceiveMessage((message: ViewToHost) => this.receive(message)),
            panel.onDidDispose(() => {
                this.dispose();
                onDispose();
            }),
            builds.onFinished((build) => {
                if (build.state === 'done' && build.current && vscode.Uri.parse(build.uri).toString() === this.state.uri) {
                    void this.load();
                }
            }),
            vscode.window.onDidChangeTextEditorSelection((event) => {
                if (event.textEditor.document.uri.toString() === this.state.uri) {
                    this.sendCursor(event.textEditor);
                }
            }),
        );
    }

    get uri(): string {
        return this.state.uri;
    }

    private post(message: HostToView): void {
        void this.panel.webview.postMessage(message);
    }

    private receive(message: ViewToHost): void {
        switch (message.type) {
            case 'ready': // (re)loaded: the host's state is the latest (the page's may be older)
                void this.load();
                return;
            case 'choose':
                this.state = { ...this.state, after: message.after, compare: message.compare };
                this.choice = message.choice;
                this.remember(this.state);
                void this.load();
                return;
            case 'reveal':
                if (isRange(message.range)) {
                    void this.reveal(message.range);
                }
                return;
            case 'drawn':
                this.output(`graph view: drew ${message.visible} of ${message.nodes} nodes in ${message.ms.toFixed(0)} ms`);
                return;
        }
    }

    /** Fetch the snapshot the state names (with the pass list, line colours, profile) and send it. */
    private async load(): Promise<void> {
        const client = this.server.client;
        const attempt = ++this.loading;
        const state = this.state;
        const choice = this.choice;
        if (!client) {
            this.post({ type: 'error', message: 'The RelayLens language server is not running.', state, choice });
            return;
        }
        this.post({ type: 'loading', what: state.after === null ? 'the final module' : `snapshot ${state.after}` });
        const uri = state.uri;
        try {
            const snapshots = await client.sendRequest(SnapshotsRequest, { uri });
            const passes: PassChoice[] = (snapshots?.passes ?? []).map((p) => ({ index: p.index, name: p.name, changed: p.changed }));
            const after = state.after !== null && state.after < passes.length ? state.after : null;
            const started = Date.now();
            const [answer, map, profile] = await Promise.all([
                client.sendRequest(GraphRequest, { uri, after: after ?? undefined, layout: true, compare: state.compare }),
                client.sendRequest(LineMapRequest, { uri }).catch(() => null),
                client.sendRequest<ProfileReport | null>('relaylens/lastProfile', { uri }).catch(() => null),
            ]);
            if (attempt !== this.loading) {
                return;
            }
            const kernelColours: Record<string, number> = {};
            map?.functions.forEach((f, i) => (kernelColours[f.name] = i % LINE_COLOURS));
            const shares = profile && !profile.error && profile.current
                ? Object.fromEntries(profile.functions.map((f) => [f.name, f.percent / 100]))
                : null;
            const nodes = answer.graph.graphs.reduce((n, g) => n + g.nodes.length, 0);
            const laid = Object.values(answer.layout ?? {}).reduce((s, l) => s + l.seconds, 0);
            this.output(`graph view: ${answer.passName} (${nodes} nodes) in ${Date.now() - started} ms, of which layout ${(laid * 1000).toFixed(0)} ms in the server`);
            this.state = { ...state, after };
            this.post({ type: 'graph', state: this.state, choice, answer, passes, kernelColours, profile: shares });
            const editor = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === uri);
            if (editor) {
                this.sendCursor(editor);
            }
        } catch (err) {
            if (attempt === this.loading) {
                this.post({ type: 'error', message: err instanceof Error ? err.message : String(err), state, choice });
            }
        }
    }

    private sendCursor(editor: vscode.TextEditor): void {
        const at = editor.selection.active;
        this.post({ type: 'cursor', line: at.line, character: at.character });
    }

    /** Select the node's Relay text in the editor that shows the document (or open it once). */
    private async reveal(range: LspRange): Promise<void> {
        const uri = vscode.Uri.parse(this.state.uri);
        const shown = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === this.state.uri);
        const document = shown?.document ?? (await vscode.workspace.openTextDocument(uri));
        const target = new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
        const column = shown?.viewColumn
            ?? (this.panel.viewColumn === vscode.ViewColumn.One ? vscode.ViewColumn.Two : vscode.ViewColumn.One);
        const editor = await vscode.window.showTextDocument(document, { viewColumn: column, preview: false });
        editor.selection = new vscode.Selection(target.end, target.start); // selected, the cursor at its start
        editor.revealRange(target, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    }

    show(): void {
        this.panel.reveal(undefined, false);
    }

    dispose(): void {
        this.subscriptions.forEach((s) => s.dispose());
        this.subscriptions.length = 0;
    }
}

export function registerGraphView(context: vscode.ExtensionContext, server: ServerManager, builds: BuildEvents,
    output: vscode.LogOutputChannel): void {
    const panels = new Map<string, GraphPanel>();
    // The view's state is also kept in the workspace state, written at once: a browser (code-server)
    // may not save the webview's own state when the page reloads.
    const key = (uri: string) => `${GRAPH_VIEW_TYPE}:${uri}`;
    const LAST = `${GRAPH_VIEW_TYPE}:last`; // the document of the view changed last
    const remember = (state: ViewState) => {
        void context.workspaceState.update(key(state.uri), state);
        void context.workspaceState.update(LAST, state.uri);
    };
    const adopt = (panel: vscode.WebviewPanel, state: ViewState) => {
        const made = new GraphPanel(panel, state, server, builds, context.extensionUri, (line) => output.info(line),
            remember, () => panels.delete(state.uri));
        panels.set(state.uri, made);
    };
    const show = (resource?: vscode.Uri) => {
        const editor = vscode.window.activeTextEditor;
        const document = resource
            ? vscode.workspace.textDocuments.find((d) => d.uri.toString() === resource.toString())
            : editor?.document;
        if (!resource && document?.languageId !== LANGUAGE_ID) {
            void vscode.window.showWarningMessage('RelayLens: open a Relay file first.');
            return;
        }
        const uri = (resource ?? document!.uri).toString();
        const open = panels.get(uri);
        if (open) {
            open.show();
            return;
        }
        const panel = vscode.window.createWebviewPanel(GRAPH_VIEW_TYPE, 'Graph', { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true });
        const state: ViewState = context.workspaceState.get<ViewState>(key(uri)) ?? { uri, after: null, compare: false };
        adopt(panel, state);
        remember(state);
    };
    context.subscriptions.push(
        vscode.commands.registerCommand(COMMANDS.showGraph, (resource?: vscode.Uri) =>
            show(resource instanceof vscode.Uri ? resource : undefined)),
        vscode.window.registerWebviewPanelSerializer(GRAPH_VIEW_TYPE, {
            async deserializeWebviewPanel(panel: vscode.WebviewPanel, state: unknown) {
                const given = state as ViewState | undefined; // undefined when the page's state was not saved
                const uri = typeof given?.uri === 'string' ? given.uri : context.workspaceState.get<string>(LAST);
                const saved = uri ? context.workspaceState.get<ViewState>(key(uri)) ?? given : undefined;
                if (saved && typeof saved.uri === 'string' && !panels.has(saved.uri)) {
                    adopt(panel, { uri: saved.uri, after: typeof saved.after === 'number' ? saved.after : null, compare: !!saved.compare });
                } else {
                    panel.dispose(); // nothing to show (or shown already)
                }
            },
        }),
        { dispose: () => panels.forEach((p) => p.panel.dispose()) },
    );
}
