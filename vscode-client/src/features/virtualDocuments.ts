/**
 * The server's virtual documents (`relaylens:` URIs: LLVM IR, schedules, pass snapshots)
 * the client command `relaylens.open(uri, selection?)` that code lenses invoke, and
 * `relaylens.goToSource` (F12 inside them; placement.ts).
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
import { goToSource, LspRange, showPlaced, toRange } from './placement';

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

/** Open a virtual document read-only in the compiler views' group (placement.ts), at `selection`. */
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
    return showPlaced(document, selection);
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
        vscode.commands.registerCommand(COMMANDS.goToSource, () => goToSource(server)),
    );
    return provider;
}
