/**
 * The status bar item with the build state of the active Relay document:
 * `building…` (with the pass or function being worked on), `built in N ms`, or the number
 * of errors in its diagnostics.  A document with errors is not built (docs/lsp.md), so
 * errors win over an older build result.  With one of the compiler's views focused (a pass
 * snapshot, a diff of two, LLVM IR, assembly) it shows the state of the Relay document that
 * view was made from.
 */

import * as vscode from 'vscode';
import { BuildEvents, BuildProgress } from '../common/builds';
import { COMMANDS, LANGUAGE_ID, VIRTUAL_SCHEME } from '../common/constants';
import { BuildFinished, parseVirtualUri } from '../common/protocol';

export class BuildStatus implements vscode.Disposable {
    private readonly item = vscode.window.createStatusBarItem('relaylens.build', vscode.StatusBarAlignment.Left, 10);
    private readonly running = new Map<string, BuildProgress>();
    private readonly finished = new Map<string, BuildFinished>();
    private readonly subscriptions: vscode.Disposable[];

    constructor(builds: BuildEvents) {
        this.item.name = 'RelayLens build';
        this.item.command = COMMANDS.showOutput;
        this.subscriptions = [
            builds.onProgress((progress) => {
                if (progress.kind === 'end') {
                    this.running.delete(progress.token);
                } else {
                    this.running.set(progress.token, progress);
                }
                this.update();
            }),
            builds.onFinished((build) => {
                if (build.current) {
                    this.finished.set(vscode.Uri.parse(build.uri).toString(), build);
                }
                this.update();
            }),
            vscode.workspace.onDidChangeTextDocument((change) => {
                if (change.contentChanges.length > 0 && this.finished.delete(change.document.uri.toString())) {
                    this.update(); // the last build is of an older version now
                }
            }),
            vscode.window.onDidChangeActiveTextEditor(() => this.update()),
            vscode.languages.onDidChangeDiagnostics(() => this.update()),
        ];
        this.update();
    }

    /** The Relay document whose state to show: the active one, or the one a view is of. */
    private relayDocument(): vscode.Uri | undefined {
        const document = vscode.window.activeTextEditor?.document;
        if (document?.uri.scheme === VIRTUAL_SCHEME) {
            return parseVirtualUri(document.uri)?.document;
        }
        return document?.languageId === LANGUAGE_ID ? document.uri : undefined;
    }

    private update(): void {
        const uri = this.relayDocument();
        if (!uri) {
            this.item.hide();
            return;
        }
        const errors = vscode.languages.getDiagnostics(uri).filter((d) => d.severity === vscode.DiagnosticSeverity.Error).length;
        const build = this.finished.get(uri.toString());
        const progress = [...this.running.values()].pop();
        if (progress) {
            const detail = progress.message ? `: ${progress.message}` : '';
            this.item.text = `$(sync~spin) Relay: building${detail}`;
            this.item.tooltip = 'RelayLens is building this module (passes, lowering, LLVM)';
        } else if (errors > 0) {
            this.item.text = `$(error) Relay: ${errors} error${errors === 1 ? '' : 's'}`;
            this.item.tooltip = 'The module has errors (see Problems); it is built again once they are fixed';
        } else if (build?.state === 'crashed') {
            this.item.text = '$(warning) Relay: build crashed';
            this.item.tooltip = 'The build worker stopped and was restarted; edit or save to build again';
        } else if (build?.state === 'done') {
            const weights = build.weights ? ` · weights ${build.weights}` : '';
            this.item.text = `$(check) Relay: built in ${Math.round(build.seconds * 1000)} ms${weights}`;
            this.item.tooltip = `Version ${build.version}: ${build.functions} fused function${build.functions === 1 ? '' : 's'} lowered`
                + (build.weights ? `; @main's parameters bound to the arrays of ${build.weights} (the setting relaylens.params.bind turns this off)` : '');
        } else {
            this.item.text = '$(circle-outline) Relay: not built';
            this.item.tooltip = 'No build of this version yet';
        }
        this.item.show();
    }

    dispose(): void {
        this.subscriptions.forEach((s) => s.dispose());
        this.item.dispose();
    }
}
