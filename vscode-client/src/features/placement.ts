/**
 * Where documents open, so a Relay file and what it became stay one pair of editors.
 *
 * A Relay file and its virtual documents (module.ll, schedules, snapshots) sit side by side:
 * the Relay file in one editor group, the compiler's views in another.  Opening either kind
 * reuses an editor that already shows the document, else the group that holds its own kind,
 * else opens beside.  `relaylens.goToSource` (F12 in a virtual document) asks the server for
 * the definition and opens it by the same rule, so jumping back from LLVM IR focuses the
 * Relay editor that is already open instead of a second copy in the LLVM group.
 */

import * as vscode from 'vscode';
import { DefinitionRequest } from 'vscode-languageclient/node';
import { VIRTUAL_SCHEME } from '../common/constants';
import { ServerManager } from '../common/server';

const isVirtual = (uri: vscode.Uri) => uri.scheme === VIRTUAL_SCHEME;

/** The group for `uri`: where it is visible, else where its kind is, else beside the active one. */
export function columnFor(uri: vscode.Uri): vscode.ViewColumn {
    const visible = vscode.window.visibleTextEditors;
    const showing = visible.find((e) => e.document.uri.toString() === uri.toString());
    if (showing?.viewColumn) {
        return showing.viewColumn;
    }
    const active = vscode.window.activeTextEditor;
    const sameKind = visible.filter((e) => isVirtual(e.document.uri) === isVirtual(uri) && e.viewColumn);
    const preferred = sameKind.find((e) => e === active) ?? sameKind[0];
    if (preferred?.viewColumn) {
        return preferred.viewColumn;
    }
    return active && isVirtual(active.document.uri) === isVirtual(uri) ? vscode.ViewColumn.Active : vscode.ViewColumn.Beside;
}

/**
 * Show `document` in the group `columnFor` picks, the cursor at the start of `range` and the
 * range's first line at the top: selecting a whole fused function would hide the line
 * colours the jump is meant to show.
 */
export async function showPlaced(document: vscode.TextDocument, range?: vscode.Range): Promise<vscode.TextEditor> {
    const start = range?.start;
    const editor = await vscode.window.showTextDocument(document, {
        viewColumn: columnFor(document.uri),
        preview: false,
        selection: start && new vscode.Selection(start, start),
    });
    if (start) {
        editor.revealRange(new vscode.Range(start, start), vscode.TextEditorRevealType.AtTop);
    }
    return editor;
}

export interface LspRange {
    start: { line: number; character: number };
    end: { line: number; character: number };
}

export function toRange(range: LspRange | undefined): vscode.Range | undefined {
    return range && new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
}

type LspLocation = { uri: string; range: LspRange } | { targetUri: string; targetSelectionRange: LspRange };

/** F12 in a virtual document: the server's definition, opened beside rather than over the view. */
export async function goToSource(server: ServerManager): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const client = server.client;
    if (!editor || !client) {
        return;
    }
    const answer = await client.sendRequest(DefinitionRequest.type, {
        textDocument: { uri: editor.document.uri.toString() },
        position: { line: editor.selection.active.line, character: editor.selection.active.character },
    });
    const first = (Array.isArray(answer) ? answer[0] : answer) as LspLocation | null | undefined;
    if (!first) {
        void vscode.window.setStatusBarMessage('RelayLens: this line has no Relay location', 4000);
        return;
    }
    const [uri, range] = 'targetUri' in first ? [first.targetUri, first.targetSelectionRange] : [first.uri, first.range];
    const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
    const target = toRange(range);
    const shown = await showPlaced(document, target);
    if (target) {
        shown.revealRange(new vscode.Range(target.start, target.start), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    }
}
