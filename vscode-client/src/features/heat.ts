/**
 * The profile's heat colours: where the time goes, as a background on the Relay lines
 * compiled into each kernel and on that kernel's function in the module's LLVM IR
 * (`module.ll`).
 *
 * The intensity of a kernel's lines is its share of the run (`percent`), on a linear scale
 * whose full colour is the hottest kernel: `LEVELS` steps from faint to full.  A line
 * compiled into several kernels takes the hottest one's colour, and its hover names each.  The hover on
 * a coloured line names the kernel and its figures, and the status bar item is the legend:
 * the scale, the hottest kernels, and a click that hides or shows the colours
 * (`relaylens.toggleHeat`).  While they are shown for a document, they replace the line
 * groups of lineColours.ts on it and on its module.ll (`covers`): two backgrounds on one
 * line would read as neither.  The LLVM functions come from `relaylens/lineMap` (its
 * functions are named by their kernel's symbol); a module.ll of another version than the
 * one profiled gets its kernels' colours by name, as stale.
 *
 * After an edit the figures are stale: the colours stay on the lines they belong to
 * (profileStore.ts follows the edits), in grey at half the intensity, and the hover
 * and the legend say "stale".  The next profile replaces them.
 */

import * as vscode from 'vscode';
import { BuildEvents } from '../common/builds';
import { COMMANDS, LANGUAGE_ID } from '../common/constants';
import { LineMap, LineMapRequest, ProfileFunction, ProfileReport, parseVirtualUri } from '../common/protocol';
import { ServerManager } from '../common/server';
import { ProfileStore } from './profileStore';

const LEVELS = 8;

function heatColour(level: number, stale: boolean): string {
    const alpha = (0.08 + (0.4 * level) / (LEVELS - 1)) * (stale ? 0.5 : 1);
    return stale ? `rgba(150, 150, 150, ${alpha.toFixed(3)})` : `rgba(255, 96, 0, ${alpha.toFixed(3)})`;
}

function decorations(stale: boolean): vscode.TextEditorDecorationType[] {
    return Array.from({ length: LEVELS }, (_, level) => vscode.window.createTextEditorDecorationType({
        isWholeLine: true,
        backgroundColor: heatColour(level, stale),
        overviewRulerColor: level >= LEVELS / 2 ? heatColour(level, stale) : undefined,
        overviewRulerLane: vscode.OverviewRulerLane.Right,
    }));
}

/** A kernel's figures, as its hover and the table say them. */
export function figures(f: ProfileFunction): string {
    const ort = f.ort_ms ? ` · ${(f.ms / f.ort_ms).toFixed(2)}x onnxruntime (${f.ort_ms.toPrecision(3)} ms)` : '';
    return `${f.ms.toPrecision(3)} ms (${f.percent.toFixed(1)}% of the run) · ${f.gflops.toPrecision(3)} GFLOP/s `
        + `(${f.percent_of_peak.toFixed(1)}% of peak) · ${f.gbytes_per_s.toPrecision(3)} GB/s${ort}`;
}

export class HeatColours implements vscode.Disposable {
    private readonly fresh = decorations(false);
    private readonly stale = decorations(true);
    private readonly legend = vscode.window.createStatusBarItem('relaylens.heat', vscode.StatusBarAlignment.Right, 90);
    private readonly maps = new Map<string, LineMap>(); // document URI -> the latest line map of its module.ll
    private readonly tried = new Map<string, number>(); // document URI -> the version last asked for
    private readonly changed = new vscode.EventEmitter<void>();
    private readonly subscriptions: vscode.Disposable[];
    private enabled = true;

    /** Fires when the documents the heat covers change (lineColours.ts redraws). */
    readonly onDidChange = this.changed.event;

    constructor(private readonly server: ServerManager, private readonly store: ProfileStore, builds: BuildEvents) {
        this.legend.name = 'RelayLens profile heat';
        this.legend.command = COMMANDS.toggleHeat;
        this.subscriptions = [
            this.legend,
            this.changed,
            store.onDidChange(() => this.draw()),
            builds.onFinished((build) => { // a new module.ll: its map
                if (build.state === 'done') {
                    this.tried.delete(vscode.Uri.parse(build.uri).toString());
                    this.draw();
                }
            }),
            vscode.window.onDidChangeVisibleTextEditors(() => this.draw()),
            vscode.window.onDidChangeActiveTextEditor(() => this.draw()),
            vscode.commands.registerCommand(COMMANDS.toggleHeat, () => this.toggle()),
        ];
        this.draw();
    }

    /** Whether the heat is shown for the Relay document `uri` (and its module.ll). */
    covers(uri: string): boolean {
        return this.enabled && this.store.peek(uri) !== undefined;
    }

    toggle(): void {
        this.enabled = !this.enabled;
        this.draw();
        this.changed.fire();
    }

    /** Show the heat (after a new profile, even when it was hidden). */
    show(): void {
        if (!this.enabled) {
            this.toggle();
        } else {
            this.changed.fire();
        }
    }

    private draw(): void {
        for (const editor of vscode.window.visibleTextEditors) {
            const relay = this.relayOf(editor);
            const report = relay && this.enabled ? this.store.peek(relay) : undefined;
            if (!report) {
                [...this.fresh, ...this.stale].forEach((d) => editor.setDecorations(d, []));
                continue;
            }
            const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === relay);
            const stale = document !== undefined && document.version !== report.version;
            const ranges = editor.document.languageId === LANGUAGE_ID
                ? this.relayRanges(relay!, report, stale)
                : this.llvmRanges(relay!, report, stale);
            if (!ranges) {
                continue; // waiting for the line map
            }
            (stale ? this.fresh : this.stale).forEach((d) => editor.setDecorations(d, []));
            (stale ? this.stale : this.fresh).forEach((d, level) => editor.setDecorations(d, ranges[level]));
        }
        this.drawLegend();
    }

    /** The Relay document an editor shows, or whose module.ll it shows. */
    private relayOf(editor: vscode.TextEditor): string | undefined {
        if (editor.document.languageId === LANGUAGE_ID) {
            return editor.document.uri.toString();
        }
        const parts = parseVirtualUri(editor.document.uri);
        return parts?.kind === 'llvm' && parts.name === 'module.ll' ? parts.document.toString() : undefined;
    }

    private level(f: ProfileFunction, report: ProfileReport): number {
        const hottest = Math.max(...report.functions.map((g) => g.percent), 1e-9);
        return Math.min(LEVELS - 1, Math.max(0, Math.ceil((f.percent / hottest) * LEVELS) - 1));
    }

    private hover(f: ProfileFunction, report: ProfileReport, stale: boolean): vscode.MarkdownString {
        const text = new vscode.MarkdownString();
        text.appendMarkdown('**').appendText(f.display_name).appendMarkdown('** — ').appendText(figures(f)).appendMarkdown('  \n');
        text.appendText(`${f.name} · ${f.calls} call${f.calls === 1 ? '' : 's'} per run · heat: its share of the run, full colour = the hottest kernel`)
            .appendMarkdown('  \n');
        text.appendMarkdown(stale
            ? `*stale: profiled at version ${report.version}, the document has changed since*`
            : `profile of version ${report.version}: ${report.runs} runs, ${report.threads} thread${report.threads === 1 ? '' : 's'}`);
        return text;
    }

    /** One colour per line, the hottest of the kernels it went into; the hover names them all. */
    private relayRanges(uri: string, report: ProfileReport, stale: boolean): vscode.DecorationOptions[][] {
        const kernels = new Map<number, ProfileFunction[]>(); // line now -> its kernels, hottest first
        for (const f of report.functions) {
            for (const key of Object.keys(f.lines)) {
                const line = this.store.lineNow(uri, Number(key));
                if (line !== undefined) {
                    kernels.set(line, [...(kernels.get(line) ?? []), f]);
                }
            }
        }
        const out: vscode.DecorationOptions[][] = Array.from({ length: LEVELS }, () => []);
        for (const [line, fs] of kernels) {
            fs.sort((a, b) => b.percent - a.percent);
            const hoverMessage = fs.map((f) => this.hover(f, report, stale));
            out[this.level(fs[0], report)].push({ range: new vscode.Range(line, 0, line, 0), hoverMessage });
        }
        return out;
    }

    private llvmRanges(uri: string, report: ProfileReport, stale: boolean): vscode.DecorationOptions[][] | undefined {
        const version = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri)?.version;
        const map = this.maps.get(uri);
        if (version !== undefined && map?.version !== version && this.tried.get(uri) !== version) {
            this.tried.set(uri, version);
            void this.fetch(uri);
        }
        if (!map) {
            return undefined;
        }
        stale ||= map.version !== report.version; // the module of another version: kernels by name
        const out: vscode.DecorationOptions[][] = Array.from({ length: LEVELS }, () => []);
        for (const f of report.functions) {
            const entry = map.functions.find((g) => g.name === f.name);
            const hoverMessage = this.hover(f, report, stale);
            for (const [first, last] of entry?.llvm ?? []) {
                out[this.level(f, report)].push({ range: new vscode.Range(first, 0, last, 0), hoverMessage });
            }
        }
        return out;
    }

    private async fetch(uri: string): Promise<void> {
        const map = await this.server.client?.sendRequest(LineMapRequest, { uri });
        if (map && map.version !== this.maps.get(uri)?.version) {
            this.maps.set(uri, map);
            this.draw();
        }
    }

    private drawLegend(): void {
        const editor = vscode.window.activeTextEditor;
        const relay = editor && this.relayOf(editor);
        const report = relay ? this.store.peek(relay) : undefined;
        if (!report) {
            this.legend.hide();
            return;
        }
        const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === relay);
        const stale = document !== undefined && document.version !== report.version;
        const hottest = report.functions[0];
        this.legend.text = this.enabled
            ? `$(flame) heat: ${hottest ? hottest.percent.toFixed(1) : '0'}% = full${stale ? ' (stale)' : ''}`
            : '$(flame) heat off';
        const tooltip = new vscode.MarkdownString();
        const scale = Array.from({ length: LEVELS }, (_, level) =>
            `${Math.round(((level + 1) / LEVELS) * (hottest?.percent ?? 0) * 10) / 10}%`).join(' · ');
        tooltip.appendMarkdown(`**Profile heat** (version ${report.version}${stale ? ', stale: the document changed since' : ''}): `
            + `a kernel's lines are coloured by its share of the run, ${LEVELS} steps up to ${scale.split(' · ').pop()}  \n`);
        tooltip.appendMarkdown(`steps: ${scale}  \n`);
        for (const f of report.functions.slice(0, 5)) {
            tooltip.appendMarkdown('- ').appendText(`${f.display_name}: ${figures(f)}`).appendMarkdown('\n');
        }
        tooltip.appendMarkdown(`\nClick to ${this.enabled ? 'hide the heat (the line groups come back)' : 'show the heat'}.`);
        this.legend.tooltip = tooltip;
        this.legend.show();
    }

    dispose(): void {
        this.subscriptions.forEach((s) => s.dispose());
        [...this.fresh, ...this.stale].forEach((d) => d.dispose());
    }
}
