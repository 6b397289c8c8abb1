/**
 * The last profile of each Relay document, and where its lines are now.
 *
 * A profile (`relaylens/profile`, docs/lsp.md) names the version it ran and gives 0-based
 * lines of that version's text.  The store follows the document's edits from the moment
 * the profile was asked for, so that after an edit the figures still stand on the lines
 * they belong to (`lineNow`), marked stale (`isStale`): the heat colours dim and the table
 * says so, until the next profile.  A line an edit deleted has no place (undefined).
 * After a reload or a restart, `get` asks the server for its `relaylens/lastProfile`
 * (figures only: lines whose edits the store did not see are not placed when stale).
 */

import * as vscode from 'vscode';
import { LANGUAGE_ID } from '../common/constants';
import { LastProfileRequest, ProfileReport } from '../common/protocol';
import { ServerManager } from '../common/server';

/** The line shifts of edits, applied in order to lines of the profiled text. */
class LineTracker {
    private readonly edits: { start: number; end: number; added: number }[] = [];

    constructor(readonly version: number) {}

    note(change: vscode.TextDocumentContentChangeEvent): void {
        const added = (change.text.match(/\n/g) ?? []).length;
        this.edits.push({ start: change.range.start.line, end: change.range.end.line, added });
    }

    /** Where `line` of the text at `version` is now; undefined when an edit removed it. */
    map(line: number): number | undefined {
        let at = line;
        for (const { start, end, added } of this.edits) {
            if (at > end) {
                at += added - (end - start);
            } else if (at > start) {
                return undefined; // inside a replaced range
            }
        }
        return at;
    }
}

interface Entry {
    report: ProfileReport;
    lines?: LineTracker; // undefined: the edits since the profiled version were not seen
}

export class ProfileStore implements vscode.Disposable {
    private readonly entries = new Map<string, Entry>();
    private readonly trackers = new Map<string, LineTracker>(); // from each request, by URI
    private readonly changed = new vscode.EventEmitter<string>();
    private readonly subscriptions: vscode.Disposable[];

    /** Fires with a document's URI when its profile or its staleness changes. */
    readonly onDidChange = this.changed.event;

    constructor(private readonly server: ServerManager) {
        this.subscriptions = [
            this.changed,
            vscode.workspace.onDidChangeTextDocument((event) => this.edited(event)),
            vscode.workspace.onDidCloseTextDocument((doc) => {
                this.trackers.delete(doc.uri.toString());
                if (this.entries.delete(doc.uri.toString())) {
                    this.changed.fire(doc.uri.toString());
                }
            }),
        ];
    }

    /** A profile of `document` is being asked for: follow its edits from now on. */
    asking(document: vscode.TextDocument): void {
        this.trackers.set(document.uri.toString(), new LineTracker(document.version));
    }

    /** Keep the server's answer (its lines placed when the store saw every edit since). */
    set(report: ProfileReport): void {
        const key = vscode.Uri.parse(report.uri).toString();
        const tracker = this.trackers.get(key);
        this.trackers.delete(key);
        this.entries.set(key, { report, lines: tracker?.version === report.version ? tracker : undefined });
        this.changed.fire(key);
    }

    /** The last profile kept here, else the server's (`relaylens/lastProfile`). */
    async get(uri: vscode.Uri): Promise<ProfileReport | undefined> {
        const key = uri.toString();
        const kept = this.entries.get(key);
        if (kept) {
            return kept.report;
        }
        const report = await this.server.client?.sendRequest(LastProfileRequest, { uri: key });
        if (!report) {
            return undefined;
        }
        const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
        this.entries.set(key, { report, lines: report.current && document ? new LineTracker(report.version) : undefined });
        this.changed.fire(key);
        return report;
    }

    /** The kept profile, without asking the server. */
    peek(uri: vscode.Uri | string): ProfileReport | undefined {
        return this.entries.get(uri.toString())?.report;
    }

    isStale(document: vscode.TextDocument): boolean {
        const report = this.peek(document.uri);
        return report !== undefined && document.version !== report.version;
    }

    /** Where a 0-based line of the profiled text is in `uri`'s text now (undefined: unknown). */
    lineNow(uri: vscode.Uri | string, line: number): number | undefined {
        return this.entries.get(uri.toString())?.lines?.map(line);
    }

    private edited(event: vscode.TextDocumentChangeEvent): void {
        if (event.document.languageId !== LANGUAGE_ID || event.contentChanges.length === 0) {
            return;
        }
        const key = event.document.uri.toString();
        const entry = this.entries.get(key);
        for (const tracker of new Set([this.trackers.get(key), entry?.lines])) {
            event.contentChanges.forEach((change) => tracker?.note(change));
        }
        if (entry) {
            this.changed.fire(key);
        }
    }

    dispose(): void {
        this.subscriptions.forEach((s) => s.dispose());
    }
}
