/**
 * What the server says about its builds, as events: progress (begin / report / end of the
 * work-done progress of each build, docs/lsp.md "Progress") and `relaylens/buildFinished`.
 *
 * The server creates one progress token per build.  This module answers
 * `window/workDoneProgress/create` itself and follows the token, so the build state shows in
 * the status bar (buildStatus.ts) rather than as a notification for every keystroke.
 */

import * as vscode from 'vscode';
import { LanguageClient, WorkDoneProgress, WorkDoneProgressCreateRequest } from 'vscode-languageclient/node';
import { BuildFinished, BuildFinishedNotification } from './protocol';
import { ServerManager } from './server';

export interface BuildProgress {
    token: string;
    kind: 'begin' | 'report' | 'end';
    message?: string;
    percentage?: number;
}

export class BuildEvents implements vscode.Disposable {
    private readonly progressEmitter = new vscode.EventEmitter<BuildProgress>();
    private readonly finishedEmitter = new vscode.EventEmitter<BuildFinished>();
    private readonly subscription: vscode.Disposable;

    readonly onProgress = this.progressEmitter.event;
    readonly onFinished = this.finishedEmitter.event;

    constructor(server: ServerManager) {
        this.subscription = server.onDidStart((client) => this.follow(client));
    }

    private follow(client: LanguageClient): void {
        client.onNotification(BuildFinishedNotification, (params) => this.finishedEmitter.fire(params));
        client.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
            const key = String(token);
            const listener = client.onProgress(WorkDoneProgress.type, token, (value) => {
                this.progressEmitter.fire({ token: key, kind: value.kind, message: value.message, percentage: 'percentage' in value ? value.percentage : undefined });
                if (value.kind === 'end') {
                    listener.dispose();
                }
            });
            return null;
        });
    }

    dispose(): void {
        this.subscription.dispose();
        this.progressEmitter.dispose();
        this.finishedEmitter.dispose();
    }
}
