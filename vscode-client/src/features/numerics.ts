/**
 * RelayLens: Check Numerics — `relaylens run --check` on the active Relay document, in the
 * server's build worker (`relaylens/checkNumerics`, docs/lsp.md), with a cancellable
 * progress notification.  Compiled code is compared with the reference interpreter on
 * random inputs (seed 0); when they differ, the server names the first kernel whose
 * outputs differ on the same inputs, and when an output holds NaN, the expression that
 * made the first one.  The server publishes those findings as diagnostics (Problems view,
 * squiggles on the culprit's lines, gone after the next edit); this module shows the
 * summary as a notification and reveals the first finding.
 */

import * as vscode from 'vscode';
import { Diagnostic as LspDiagnostic, RequestType } from 'vscode-languageclient';
import { COMMANDS, LANGUAGE_ID } from '../common/constants';
import { ServerManager } from '../common/server';

const SEED = 0;

export interface NumericsReport {
    uri: string;
    version: number;
    current: boolean;
    error: string | null;
    seed: number;
    ok: boolean;
    summary: string;
    culprit: { name: string; display_name: string; lines: string; text: string } | null;
    diagnostics: LspDiagnostic[];
}

export const CheckNumericsRequest = new RequestType<{ uri: string; seed: number }, NumericsReport, void>('relaylens/checkNumerics');

function reveal(editor: vscode.TextEditor, finding: LspDiagnostic | undefined): void {
    if (!finding || vscode.window.activeTextEditor?.document !== editor.document) {
        return;
    }
    const at = new vscode.Position(finding.range.start.line, finding.range.start.character);
    editor.selection = new vscode.Selection(at, at);
    editor.revealRange(new vscode.Range(at, at), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}

async function checkNumerics(server: ServerManager): Promise<void> {
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
        { location: vscode.ProgressLocation.Notification, title: 'RelayLens: checking numerics (build, run, compare)…', cancellable: true },
        (_progress, token) => client.sendRequest(CheckNumericsRequest, { uri: editor.document.uri.toString(), seed: SEED }, token),
    ).then((r) => r, (err: unknown) => {
        void vscode.window.showErrorMessage(`RelayLens: check numerics failed: ${err instanceof Error ? err.message : String(err)}`);
        return undefined;
    });
    if (!report) {
        return;
    }
    if (report.error) {
        void vscode.window.showErrorMessage(`RelayLens: cannot check numerics: ${report.error}`);
        return;
    }
    const stale = report.current ? '' : ' (the document changed since: run it again to see where)';
    const message = `RelayLens numerics (seed ${report.seed}): ${report.summary}${stale}`;
    reveal(editor, report.diagnostics[0]);
    if (report.ok && report.diagnostics.length === 0) {
        void vscode.window.showInformationMessage(message);
    } else {
        void vscode.window.showWarningMessage(message);
    }
}

export function registerNumerics(context: vscode.ExtensionContext, server: ServerManager): void {
    context.subscriptions.push(vscode.commands.registerCommand(COMMANDS.checkNumerics, () => checkNumerics(server)));
}
