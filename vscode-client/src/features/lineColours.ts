/**
 * Line colouring both ways between a Relay document and its module's LLVM IR, as Compiler
 * Explorer does for assembly.
 *
 * When a Relay editor and the editor of its `module.ll` are visible together, each fused
 * function's Relay lines and the LLVM lines it became share one of six background colours
 * (theme colours `relaylens.lineGroup1..6`).  The cursor's line on either side highlights
 * its partner lines on the other side (`relaylens.partnerLine`) and scrolls them into view.
 * The mapping is the server's `relaylens/lineMap`; this module only decorates.  A map is
 * dropped as soon as its Relay document is edited (its lines no longer match) and fetched
 * again when the next build of the document finishes.  While the profile's heat colours are
 * shown for a document (heat.ts), they replace its line groups.
 */

import * as vscode from 'vscode';
import { BuildEvents } from '../common/builds';
import { LANGUAGE_ID } from '../common/constants';
import { LineMap, LineMapRequest, LineRange, parseVirtualUri } from '../common/protocol';
import { ServerManager } from '../common/server';
import type { HeatColours } from './heat';

const GROUP_COLOURS = 6;

interface Pair {
    relay: vscode.TextEditor;
    llvm: vscode.TextEditor;
    map: LineMap;
}

function toRanges(ranges: LineRange[]): vscode.Range[] {
    return ranges.map(([first, last]) => new vscode.Range(first, 0, last, 0));
}

function lineRanges(lines: number[]): vscode.Range[] {
    return lines.map((line) => new vscode.Range(line, 0, line, 0));
}

export class LineColours implements vscode.Disposable {
    private readonly groups = Array.from({ length: GROUP_COLOURS }, (_, i) =>
        vscode.window.createTextEditorDecorationType({
            isWholeLine: true,
            backgroundColor: new vscode.ThemeColor(`relaylens.lineGroup${i + 1}`),
        }),
    );
    private readonly partner = vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        backgroundColor: new vscode.ThemeColor('relaylens.partnerLine'),
        overviewRulerColor: new vscode.ThemeColor('relaylens.partnerLine'),
        overviewRulerLane: vscode.OverviewRulerLane.Full,
    });
    private readonly maps = new Map<string, LineMap>();
    private readonly pending = new Set<string>();
    private readonly subscriptions: vscode.Disposable[];

    constructor(private readonly server: ServerManager, builds: BuildEvents, private readonly heat?: HeatColours) {
        this.subscriptions = [
            ...(heat ? [heat.onDidChange(() => this.draw())] : []),
            builds.onFinished((build) => {
                if (build.state === 'done' && build.current) {
                    this.maps.delete(vscode.Uri.parse(build.uri).toString());
                    this.refresh();
                }
            }),
            server.onDidStart(() => this.refresh()),
            vscode.window.onDidChangeVisibleTextEditors(() => this.refresh()),
            vscode.workspace.onDidChangeTextDocument((change) => {
                if (change.contentChanges.length > 0 && this.maps.delete(change.document.uri.toString())) {
                    this.refresh();
                }
            }),
            vscode.window.onDidChangeTextEditorSelection((event) => this.followCursor(event.textEditor)),
        ];
        this.refresh();
    }

    /** The visible Relay/LLVM pairs whose line map is known. */
    private pairs(): Pair[] {
        const found: Pair[] = [];
        const editors = vscode.window.visibleTextEditors;
        for (const llvm of editors) {
            const parts = parseVirtualUri(llvm.document.uri);
            if (parts?.kind !== 'llvm' || parts.name !== 'module.ll') {
                continue;
            }
            const key = parts.document.toString();
            const relay = editors.find((e) => e.document.uri.toString() === key && e.document.languageId === LANGUAGE_ID);
            const map = this.maps.get(key);
            if (relay && map && (parts.version === undefined || parts.version === map.version)) {
                found.push({ relay, llvm, map });
            }
        }
        return found;
    }

    /** Fetch missing maps for visible pairs, then redraw every visible editor. */
    private refresh(): void {
        for (const editor of vscode.window.visibleTextEditors) {
            const parts = parseVirtualUri(editor.document.uri);
            if (parts?.kind === 'llvm' && parts.name === 'module.ll') {
                void this.fetch(parts.document);
            }
        }
        this.draw();
    }

    private async fetch(document: vscode.Uri): Promise<void> {
        const key = document.toString();
        const client = this.server.client;
        if (!client || this.maps.has(key) || this.pending.has(key)) {
            return;
        }
        this.pending.add(key);
        try {
            const map = await client.sendRequest(LineMapRequest, { uri: key });
            if (map) {
                this.maps.set(key, map);
                this.draw();
            }
        } finally {
            this.pending.delete(key);
        }
    }

    private draw(): void {
        const pairs = this.pairs();
        const painted = new Set<vscode.TextEditor>();
        for (const { relay, llvm, map } of pairs) {
            if (this.heat?.covers(relay.document.uri.toString())) {
                continue; // the heat colours instead: cleared below
            }
            this.groups.forEach((decoration, colour) => {
                const functions = map.functions.filter((_, i) => i % GROUP_COLOURS === colour);
                relay.setDecorations(decoration, functions.flatMap((f) => toRanges(f.relay)));
                llvm.setDecorations(decoration, functions.flatMap((f) => toRanges(f.llvm)));
            });
            painted.add(relay).add(llvm);
        }
        for (const editor of vscode.window.visibleTextEditors) {
            if (!painted.has(editor)) {
                [...this.groups, this.partner].forEach((decoration) => editor.setDecorations(decoration, []));
            }
        }
        const active = vscode.window.activeTextEditor;
        if (active) {
            this.followCursor(active);
        }
    }

    /** Highlight, on the other side, the lines that correspond to `editor`'s cursor line. */
    private followCursor(editor: vscode.TextEditor): void {
        const line = editor.selection.active.line;
        for (const pair of this.pairs()) {
            let other: vscode.TextEditor;
            let partners: number[];
            if (editor === pair.relay) {
                other = pair.llvm;
                partners = pair.map.lines.filter(([, relay]) => relay === line).map(([llvm]) => llvm);
            } else if (editor === pair.llvm) {
                other = pair.relay;
                partners = [...new Set(pair.map.lines.filter(([llvm]) => llvm === line).map(([, relay]) => relay))];
            } else {
                continue;
            }
            editor.setDecorations(this.partner, []);
            other.setDecorations(this.partner, lineRanges(partners));
            // scroll only when no partner is in view: F12 from module.ll line 400 to its Relay
            // line must not throw module.ll back to that line's first partner at line 25
            const inView = partners.some((p) => other.visibleRanges.some((r) => r.start.line <= p && p <= r.end.line));
            if (partners.length > 0 && !inView) {
                other.revealRange(new vscode.Range(partners[0], 0, partners[0], 0), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
            }
        }
    }

    dispose(): void {
        this.subscriptions.forEach((s) => s.dispose());
        [...this.groups, this.partner].forEach((d) => d.dispose());
    }
}
