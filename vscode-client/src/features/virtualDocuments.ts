/**
 * The server's virtual documents (`relaylens:` URIs: LLVM IR, schedules, pass snapshots)
 * and the client command `relaylens.open(uri, selection?)` that code lenses invoke.
 *
 * The content provider asks `relaylens/virtualDocument` for the text and sets the language
 * the server names.  A URI without `version=` means "the latest build": such documents are
 * refreshed when a build of their Relay document finishes.  The answer of a failed request
 * (nothing built yet, a syntax error, an old version) becomes the document's text, so the
 * user sees why instead of an empty tab.
 */

import * as vscode from 'vscode';
import { BuildEvents } from '../common/builds';
import { COMMANDS, VIRTUAL_SCHEME } from '../common/constants';
import { parseVirtualUri, VirtualDocumentRequest } from '../common/protocol';
import { ServerManager } from '../common/server';

class VirtualDocumentProvider implements vscode.TextDocumentContentProvider {
    private readonly changed = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.changed.event;
    private readonly languages = new Map<string, string>();

    constructor(private readonly server: ServerManager) {}

    async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
        await this.server.start();
        const client = this.server.client;
        if (!client) {
            return '// The RelayLens language server is not running (see the RelayLens output).\n';
        }
        try {
            const answer = await client.sendRequest(VirtualDocumentRequest, { uri: uri.toString() }, token);
            this.languages.set(uri.toString(), answer.languageId);
            return answer.text;
        } catch (error) {
            return `// ${uri.path}: ${error instanceof Error ? error.message : String(error)}\n`;
        }
    }

    /** The language the server gave for `uri`, once its text has been provided. */
    languageOf(uri: vscode.Uri): string | undefined {
        return this.languages.get(uri.toString());
    }

    /** Refresh the open documents that follow the latest build of `document`. */
    refreshLatest(document: string): void {
        for (const open of vscode.workspace.textDocuments) {
            const parts = parseVirtualUri(open.uri);
            if (parts && parts.version === undefined && parts.document.toString() === vscode.Uri.parse(document).toString()) {
                this.changed.fire(open.uri);
            }
        }
    }

    dispose(): void {
        this.changed.dispose();
    }
}

/** Open a virtual document read-only, beside a Relay editor, selecting `selection`. */
export async function openVirtual(
    provider: { languageOf(uri: vscode.Uri): string | undefined },
    uri: vscode.Uri,
    selection?: vscode.Range,
): Promise<vscode.TextEditor> {
    let document = await vscode.workspace.openTextDocument(uri);
    const languageId = provider.languageOf(uri);
    if (languageId && languageId !== document.languageId) {
        document = await vscode.languages.setTextDocumentLanguage(document, languageId);
    }
    const beside = vscode.window.activeTextEditor?.document.uri.scheme !== VIRTUAL_SCHEME;
    const editor = await vscode.window.showTextDocument(document, {
        viewColumn: beside ? vscode.ViewColumn.Beside : vscode.ViewColumn.Active,
        preview: false,
        selection,
    });
    if (selection) {
        editor.revealRange(selection, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    }
    return editor;
}

interface LspRange {
    start: { line: number; character: number };
    end: { line: number; character: number };
}

function toRange(range: LspRange | undefined): vscode.Range | undefined {
    return range && new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
}

/** Register the provider and `relaylens.open`; returns the provider for the other features. */
export function registerVirtualDocuments(context: vscode.ExtensionContext, server: ServerManager, builds: BuildEvents) {
    const provider = new VirtualDocumentProvider(server);
    context.subscriptions.push(
        provider,
        vscode.workspace.registerTextDocumentContentProvider(VIRTUAL_SCHEME, provider),
        builds.onFinished((build) => build.state === 'done' && provider.refreshLatest(build.uri)),
        vscode.commands.registerCommand(COMMANDS.open, (uri: string | vscode.Uri, selection?: LspRange) =>
            openVirtual(provider, typeof uri === 'string' ? vscode.Uri.parse(uri) : uri, toRange(selection)),
        ),
    );
    return provider;
}
