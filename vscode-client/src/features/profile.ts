/**
 * RelayLens: Profile — runs the model of a Relay document, every kernel timed, in the
 * server's build worker (`relaylens/profile`, docs/lsp.md), behind a cancellable progress
 * notification that follows the server's own progress ("run 3 of 10").  The server's lenses
 * above `def @main` run it ("▶ Profile", with the document's URI), cancel it while it runs
 * ("profiling… · cancel") and open the table of the last one ("12.3 ms · 2 threads").
 *
 * A finished profile is kept (profileStore.ts); the server adds its inlay hints
 * ("1.23 ms · 4.1% · 190 GFLOP/s") on each fused group's first line, the heat colours go on
 * the kernels' lines (heat.ts) and the table opens beside (profileTable.ts).  Figures
 * belong to the version profiled: after an edit they are marked stale.
 */

import * as vscode from 'vscode';
import { BuildEvents } from '../common/builds';
import { COMMANDS, LANGUAGE_ID } from '../common/constants';
import { ProfileRequest } from '../common/protocol';
import { ServerManager } from '../common/server';
import { HeatColours } from './heat';
import { ProfileStore } from './profileStore';
import { ProfileTables } from './profileTable';

const RUNS = 10;
const SERVER_PROGRESS = 'relaylens-profile-'; // the server's work-done progress tokens (server/slow/profiles.py)

/** The Relay document a command means: its URI argument (a lens), else the active editor's. */
function documentFor(uri?: string | vscode.Uri): vscode.TextDocument | undefined {
    const key = uri?.toString() ?? vscode.window.activeTextEditor?.document.uri.toString();
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
    return document?.languageId === LANGUAGE_ID ? document : undefined;
}

export class Profiler implements vscode.Disposable {
    readonly store: ProfileStore;
    readonly heat: HeatColours;
    private readonly tables: ProfileTables;
    private readonly running = new Map<string, vscode.CancellationTokenSource>();
    private readonly subscriptions: vscode.Disposable[];

    constructor(private readonly server: ServerManager, private readonly builds: BuildEvents) {
        this.store = new ProfileStore(server);
        this.heat = new HeatColours(server, this.store, builds);
        this.tables = new ProfileTables(this.store);
        this.subscriptions = [
            this.store, this.heat, this.tables,
            vscode.commands.registerCommand(COMMANDS.profile, (uri?: string) => this.profile(uri)),
            vscode.commands.registerCommand(COMMANDS.cancelProfile, (uri?: string) => this.cancel(uri)),
            vscode.commands.registerCommand(COMMANDS.showProfile, (uri?: string) => this.showTable(uri)),
        ];
    }

    async profile(uri?: string): Promise<void> {
        const document = documentFor(uri);
        if (!document) {
            void vscode.window.showWarningMessage('RelayLens: open a Relay file first.');
            return;
        }
        const client = this.server.client;
        if (!client) {
            void vscode.window.showErrorMessage('RelayLens: the language server is not running.');
            return;
        }
        const key = document.uri.toString();
        if (this.running.has(key)) {
            return; // one at a time per document: its lens says "profiling… · cancel"
        }
        const source = new vscode.CancellationTokenSource();
        this.running.set(key, source);
        this.store.asking(document);
        const name = document.uri.path.split('/').pop();
        const report = await Promise.resolve(vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: `RelayLens: profiling ${name}`, cancellable: true },
            (progress, token) => {
                token.onCancellationRequested(() => source.cancel());
                const following = this.builds.onProgress((p) => p.token.startsWith(SERVER_PROGRESS) && p.message
                    && progress.report({ message: p.message }));
                return client.sendRequest(ProfileRequest, { uri: key, runs: RUNS }, source.token).finally(() => following.dispose());
            },
        )).then((r) => r, (err: unknown) => {
            if (!source.token.isCancellationRequested) {
                void vscode.window.showErrorMessage(`RelayLens: profile failed: ${err instanceof Error ? err.message : String(err)}`);
            }
            return undefined;
        }).finally(() => {
            this.running.delete(key);
            source.dispose();
        });
        if (!report) {
            return;
        }
        if (report.error) {
            void vscode.window.showErrorMessage(`RelayLens: cannot profile: ${report.error}`);
            return;
        }
        this.store.set(report);
        this.heat.show();
        this.tables.show(document.uri, report);
    }

    private cancel(uri?: string): void {
        const document = documentFor(uri);
        this.running.get(document?.uri.toString() ?? '')?.cancel();
    }

    private async showTable(uri?: string): Promise<void> {
        const document = documentFor(uri);
        const report = document && (await this.store.get(document.uri));
        if (!document || !report) {
            void vscode.window.showInformationMessage('RelayLens: no profile of this document yet: run "RelayLens: Profile".');
            return;
        }
        this.tables.show(document.uri, report);
    }

    dispose(): void {
        this.running.forEach((source) => source.cancel());
        this.subscriptions.forEach((s) => s.dispose());
    }
}
