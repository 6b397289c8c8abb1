/**
 * Commands that open what the compiler made of the Relay document in the active editor:
 * Show LLVM IR, Show Optimised LLVM IR (O3), Show Assembly, Show Schedule, Show Pass
 * Pipeline, Explain; and Show/Hide Debug Information in an LLVM IR or assembly view.
 *
 * Which fused function the cursor is in comes from the server's `relaylens/lineMap`; the
 * documents are the server's virtual documents.  Show LLVM IR opens the whole module's IR
 * beside the Relay file (so the line colours apply) with the cursor's fused function
 * selected.  Show Pass Pipeline lists the passes that changed the module and opens VS Code's
 * diff editor between the snapshot before and after the chosen one (the after side numbered
 * as the before side, so the diff shows the pass's change and not the renumbering).
 * The O3 and assembly views open the cursor's fused function (else the module) without
 * debug information, as Compiler Explorer shows them; the toggle swaps a view for the same
 * text with it (`<name>.opt.ll` ↔ `<name>.opt.nodebug.ll`, `<name>.s` ↔ `<name>.nodebug.s`).  Explain shows the
 * server's hover at the cursor: the type and the provenance of the expression.
 */

import * as vscode from 'vscode';
import { COMMANDS, LANGUAGE_ID, VIRTUAL_SCHEME } from '../common/constants';
import { LineMap, LineMapFunction, LineMapRequest, SnapshotsRequest, virtualUri } from '../common/protocol';
import { ServerManager } from '../common/server';
import { columnFor } from './placement';
import { openVirtual } from './virtualDocuments';

type LanguageOf = { languageOf(uri: vscode.Uri): string | undefined };

const NOT_BUILT = 'RelayLens: this version of the document has no finished build yet (it may have errors, or still be building).';

function relayEditor(): vscode.TextEditor | undefined {
    const editor = vscode.window.activeTextEditor;
    if (editor?.document.languageId === LANGUAGE_ID) {
        return editor;
    }
    void vscode.window.showWarningMessage('RelayLens: open a Relay file first.');
    return undefined;
}

async function lineMap(server: ServerManager, document: vscode.TextDocument): Promise<LineMap | undefined> {
    const client = server.client;
    if (!client) {
        void vscode.window.showErrorMessage('RelayLens: the language server is not running.');
        return undefined;
    }
    const map = await client.sendRequest(LineMapRequest, { uri: document.uri.toString() });
    if (!map) {
        void vscode.window.showInformationMessage(NOT_BUILT);
    }
    return map ?? undefined;
}

function functionAt(map: LineMap, line: number): LineMapFunction | undefined {
    return map.functions.find((f) => f.relay.some(([first, last]) => first <= line && line <= last));
}

async function pickFunction(map: LineMap, placeHolder: string): Promise<LineMapFunction | undefined> {
    const picked = await vscode.window.showQuickPick(
        map.functions.map((f) => ({ label: f.name, description: f.relay.map(([a, b]) => (a === b ? `line ${a + 1}` : `lines ${a + 1}-${b + 1}`)).join(', '), f })),
        { placeHolder },
    );
    return picked?.f;
}

async function showLlvmIr(server: ServerManager, provider: LanguageOf): Promise<void> {
    const editor = relayEditor();
    const map = editor && (await lineMap(server, editor.document));
    if (!editor || !map) {
        return;
    }
    const fused = functionAt(map, editor.selection.active.line);
    const first = fused?.llvm[0];
    const selection = first && new vscode.Range(first[0], 0, first[0], 0);
    await openVirtual(provider, vscode.Uri.parse(map.module), selection);
}

async function showCodeView(server: ServerManager, provider: LanguageOf, suffix: string, what: string): Promise<void> {
    const editor = relayEditor();
    const map = editor && (await lineMap(server, editor.document));
    if (!editor || !map) {
        return;
    }
    const stem = functionAt(map, editor.selection.active.line)?.name ?? 'module';
    const uri = virtualUri('llvm', `${stem}${suffix}`, editor.document.uri, map.version);
    await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: `RelayLens: ${what} of ${stem}` },
        () => openVirtual(provider, uri),
    );
}

async function toggleDebugInfo(provider: LanguageOf): Promise<void> {
    const uri = vscode.window.activeTextEditor?.document.uri;
    if (!uri || uri.scheme !== VIRTUAL_SCHEME || !uri.path.startsWith('/llvm/')) {
        return;
    }
    const path = uri.path.includes('.nodebug.')
        ? uri.path.replace('.nodebug.', '.')
        : uri.path.replace(/(\.ll|\.s)$/, '.nodebug$1');
    await openVirtual(provider, uri.with({ path }));
}

async function showSchedule(server: ServerManager, provider: LanguageOf): Promise<void> {
    const editor = relayEditor();
    const map = editor && (await lineMap(server, editor.document));
    if (!editor || !map) {
        return;
    }
    const fused = functionAt(map, editor.selection.active.line) ?? (await pickFunction(map, 'Schedule of which fused function?'));
    if (fused) {
        await openVirtual(provider, virtualUri('schedule', `${fused.name}.txt`, editor.document.uri, map.version));
    }
}

async function showPassPipeline(server: ServerManager): Promise<void> {
    const editor = relayEditor();
    const client = server.client;
    if (!editor || !client) {
        return;
    }
    const snapshots = await client.sendRequest(SnapshotsRequest, { uri: editor.document.uri.toString() });
    if (!snapshots) {
        void vscode.window.showInformationMessage(NOT_BUILT);
        return;
    }
    const passes = snapshots.passes;
    const items = passes
        .filter((pass) => pass.changed && pass.index > 0)
        .map((pass) => ({ label: pass.name, description: `pass ${pass.index}`, pass }));
    if (items.length === 0) {
        void vscode.window.showInformationMessage('RelayLens: no pass changed this module.');
        return;
    }
    const picked = await vscode.window.showQuickPick(items, { placeHolder: 'Compare the module before and after which pass?' });
    if (!picked) {
        return;
    }
    const position = passes.indexOf(picked.pass);
    const before = passes[position - 1];
    await vscode.commands.executeCommand(
        'vscode.diff',
        vscode.Uri.parse(before.uri),
        vscode.Uri.parse(picked.pass.aligned ?? picked.pass.uri), // renumbering aside
        `${before.name} ↔ ${picked.pass.name} (${editor.document.uri.path.split('/').pop()})`,
        { preview: false, viewColumn: columnFor(vscode.Uri.parse(picked.pass.uri)) }, // beside the Relay file, as the other views
    );
}

async function explain(): Promise<void> {
    if (relayEditor()) {
        await vscode.commands.executeCommand('editor.action.showHover');
    }
}

export function registerCompilerViews(context: vscode.ExtensionContext, server: ServerManager, provider: LanguageOf): void {
    context.subscriptions.push(
        vscode.commands.registerCommand(COMMANDS.showLlvmIr, () => showLlvmIr(server, provider)),
        vscode.commands.registerCommand(COMMANDS.showOptimizedIr, () =>
            showCodeView(server, provider, '.opt.nodebug.ll', 'optimised LLVM IR')),
        vscode.commands.registerCommand(COMMANDS.showAssembly, () =>
            showCodeView(server, provider, '.nodebug.s', 'assembly')),
        vscode.commands.registerCommand(COMMANDS.toggleDebugInfo, () => toggleDebugInfo(provider)),
        vscode.commands.registerCommand(COMMANDS.showSchedule, () => showSchedule(server, provider)),
        vscode.commands.registerCommand(COMMANDS.showPassPipeline, () => showPassPipeline(server)),
        vscode.commands.registerCommand(COMMANDS.explain, explain),
    );
}
