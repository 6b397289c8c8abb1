/**
 * RelayLens: Profile — runs the model of the active Relay document, every kernel timed, in
 * the server's build worker (`relaylens/profile`, docs/lsp.md), with a cancellable progress
 * notification.  The server then adds its inlay hints ("1.23 ms · 4.1% · 190 GFLOP/s") on
 * each fused group's first line and asks VS Code to refresh them; this module shows the
 * kernels as a quick pick, slowest first (or by name, or by GFLOP/s), and reveals the
 * chosen one's first line.  Figures belong to the version profiled: after an edit the
 * hints disappear and the list says the figures are stale.
 */

import * as vscode from 'vscode';
import { COMMANDS, LANGUAGE_ID } from '../common/constants';
import { ProfileFunction, ProfileReport, ProfileRequest } from '../common/protocol';
import { ServerManager } from '../common/server';

const RUNS = 10;
type Order = 'time' | 'GFLOP/s' | 'name';

function describe(f: ProfileFunction): string {
    const calls = f.calls > 1 ? ` · ${f.calls} calls` : '';
    return `${f.ms.toPrecision(3)} ms · ${f.percent.toFixed(1)}% · ${f.gflops.toPrecision(3)} GFLOP/s${calls}`;
}

function sorted(functions: ProfileFunction[], order: Order): ProfileFunction[] {
    const copy = [...functions];
    if (order === 'GFLOP/s') {
        return copy.sort((a, b) => a.gflops - b.gflops);
    }
    if (order === 'name') {
        return copy.sort((a, b) => a.display_name.localeCompare(b.display_name));
    }
    return copy.sort((a, b) => b.ms - a.ms);
}

async function showTable(editor: vscode.TextEditor, report: ProfileReport, order: Order = 'time'): Promise<void> {
    const stale = editor.document.version !== report.version ? ' (stale: the document changed since)' : '';
    type Item = vscode.QuickPickItem & { f?: ProfileFunction; order?: Order };
    const orders: Item[] = (['time', 'GFLOP/s', 'name'] as Order[])
        .filter((o) => o !== order)
        .map((o) => ({ label: `$(list-ordered) sort by ${o}`, order: o }));
    const rows: Item[] = sorted(report.functions, order).map((f) => ({
        label: f.display_name,
        description: describe(f),
        detail: `${f.name} · ${f.percent_of_peak.toFixed(1)}% of peak · ${f.mbytes.toPrecision(3)} MB at ${f.gbytes_per_s.toPrecision(3)} GB/s · `
            + Object.entries(f.layers).sort((a, b) => b[1] - a[1]).slice(0, 4).map(([layer, ms]) => `${layer} ${ms.toPrecision(3)} ms`).join(', '),
        f,
    }));
    const picked = await vscode.window.showQuickPick([...rows, { label: '', kind: vscode.QuickPickItemKind.Separator }, ...orders], {
        title: `RelayLens profile: ${report.run_ms.toPrecision(4)} ms per run, kernels ${report.kernels_ms.toPrecision(4)} ms, ${report.runs} runs, ${report.threads} threads${stale}`,
        placeHolder: 'a fused function to go to (time shared among its lines and layers by FLOPs)',
        matchOnDescription: true,
        matchOnDetail: true,
    });
    if (picked?.order) {
        return showTable(editor, report, picked.order);
    }
    const line = picked?.f?.anchors[0];
    if (line !== undefined && !stale) {
        const at = new vscode.Position(line, 0);
        editor.selection = new vscode.Selection(at, at);
        editor.revealRange(new vscode.Range(at, at), vscode.TextEditorRevealType.InCenter);
    }
}

async function profile(server: ServerManager): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (editor?.document.languageId !== LANGUAGE_ID) {
        void vscode.window.showWarningMessage('RelayLens: open a Relay file first.');
        return;
    }
    const client = server.client;
    if (!client) {
        void vscode.window.showErrorMessage('RelayLens: the language server is not running.');
        return;
    }
    const report = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'RelayLens: profiling (build, then run)…', cancellable: true },
        (_progress, token) => client.sendRequest(ProfileRequest, { uri: editor.document.uri.toString(), runs: RUNS }, token),
    ).then((r) => r, (err: unknown) => {
        void vscode.window.showErrorMessage(`RelayLens: profile failed: ${err instanceof Error ? err.message : String(err)}`);
        return undefined;
    });
    if (!report) {
        return;
    }
    if (report.error) {
        void vscode.window.showErrorMessage(`RelayLens: cannot profile: ${report.error}`);
        return;
    }
    await showTable(editor, report);
}

export function registerProfile(context: vscode.ExtensionContext, server: ServerManager): void {
    context.subscriptions.push(vscode.commands.registerCommand(COMMANDS.profile, () => profile(server)));
}
