/**
 * BYOC partitioning (docs/byoc.md, "In the editor"): the lines of the calls each external
 * function took are coloured by target (theme colours `relaylens.byocTarget1..3`, by the
 * target's place in the target list, and in the overview ruler), and the command the
 * server's "matched N times" lenses run in a pattern table (`relaylens.showMatches`) lists
 * the matches in VS Code's references peek.
 *
 * The regions are the server's `relaylens/byocRegions`; this module only decorates.  They
 * are dropped as soon as the document is edited (their lines no longer match) and fetched
 * again when the next build of the document finishes.  The lenses and hovers are plain LSP.
 */

import * as vscode from 'vscode';
import { RequestType } from 'vscode-languageclient/node';
import { BuildEvents } from '../common/builds';
import { LANGUAGE_ID } from '../common/constants';
import { ServerManager } from '../common/server';

const TARGET_COLOURS = 3;
const SHOW_MATCHES = 'relaylens.showMatches';

interface ByocRegion {
    target: string;
    colour: number;
    function: string;
    title: string;
    lines: [number, number][]; // 0-based, inclusive
}

interface ByocRegions {
    uri: string;
    version: number;
    targets: string[];
    regions: ByocRegion[];
}

interface LspLocation {
    uri: string;
    range: { start: { line: number; character: number }; end: { line: number; character: number } };
}

const ByocRegionsRequest = new RequestType<{ uri: string }, ByocRegions | null, void>('relaylens/byocRegions');

function toRange(r: LspLocation['range']): vscode.Range {
    return new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character);
}

/** `relaylens.showMatches`: the references peek of a pattern's matches, at the lens. */
async function showMatches(uri: string, position: { line: number; character: number }, locations: LspLocation[]): Promise<void> {
    if (!locations || locations.length === 0) {
        void vscode.window.showInformationMessage('RelayLens: this pattern matched nothing in the open models built with this table.');
        return;
    }
    await vscode.commands.executeCommand('editor.action.showReferences', vscode.Uri.parse(uri),
        new vscode.Position(position.line, position.character),
        locations.map((l) => new vscode.Location(vscode.Uri.parse(l.uri), toRange(l.range))));
}

export class ByocColours implements vscode.Disposable {
    private readonly colours = Array.from({ length: TARGET_COLOURS }, (_, i) =>
        vscode.window.createTextEditorDecorationType({
            isWholeLine: true,
            backgroundColor: new vscode.ThemeColor(`relaylens.byocTarget${i + 1}`),
            overviewRulerColor: new vscode.ThemeColor(`relaylens.byocTarget${i + 1}`),
            overviewRulerLane: vscode.OverviewRulerLane.Left,
        }),
    );
    private readonly regions = new Map<string, ByocRegions | null>();
    private readonly pending = new Set<string>();
    private readonly subscriptions: vscode.Disposable[];

    constructor(private readonly server: ServerManager, builds: BuildEvents) {
        this.subscriptions = [
            vscode.commands.registerCommand(SHOW_MATCHES, showMatches),
            builds.onFinished((build) => {
                if (build.state === 'done' && build.current) {
                    this.regions.delete(vscode.Uri.parse(build.uri).toString());
                    this.refresh();
                }
            }),
            server.onDidStart(() => {
                this.regions.clear();
                this.refresh();
            }),
            vscode.window.onDidChangeVisibleTextEditors(() => this.refresh()),
            vscode.workspace.onDidChangeTextDocument((change) => {
                if (change.contentChanges.length > 0 && this.regions.delete(change.document.uri.toString())) {
                    this.draw();
                }
            }),
        ];
        this.refresh();
    }

    private refresh(): void {
        for (const editor of vscode.window.visibleTextEditors) {
            if (editor.document.languageId === LANGUAGE_ID) {
                void this.fetch(editor.document.uri);
            }
        }
        this.draw();
    }

    private async fetch(document: vscode.Uri): Promise<void> {
        const key = document.toString();
        const client = this.server.client;
        if (!client || this.regions.has(key) || this.pending.has(key)) {
            return;
        }
        this.pending.add(key);
        try {
            this.regions.set(key, await client.sendRequest(ByocRegionsRequest, { uri: key }));
            this.draw();
        } catch {
            // the server is restarting: the next build or start fetches again
        } finally {
            this.pending.delete(key);
        }
    }

    private draw(): void {
        for (const editor of vscode.window.visibleTextEditors) {
            const found = this.regions.get(editor.document.uri.toString());
            const current = found && found.version === editor.document.version ? found.regions : [];
            this.colours.forEach((decoration, colour) => {
                const lines = current.filter((r) => r.colour % TARGET_COLOURS === colour).flatMap((r) => r.lines);
                editor.setDecorations(decoration, lines.map(([first, last]) => new vscode.Range(first, 0, last, 0)));
            });
        }
    }

    dispose(): void {
        this.subscriptions.forEach((s) => s.dispose());
        this.colours.forEach((d) => d.dispose());
    }
}
