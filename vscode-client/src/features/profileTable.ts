/**
 * The profile's table: one webview panel per Relay document, beside its editor, with one
 * row per compiled kernel (display name and symbol, calls, ms with the spread of a run, %
 * of the run, GFLOP/s, % of peak, GB/s, the Relay lines and the ONNX layers compiled into
 * it, and onnxruntime's time and our ratio to it when the profile compared).  A click on a
 * column header sorts by it (again: the other way); a click on a row (or Enter on it)
 * reveals the kernel's first Relay lines in the editor that shows the document (the open
 * one is reused, placement.ts), the cursor at their start.
 *
 * The rows are written here, in the extension host, from the server's answer (every
 * string escaped); the page's own script only sorts and posts clicks.  The page runs under
 * a Content-Security-Policy that allows nothing but its own inline style and script (a
 * nonce per page): no network, no other resource.  A stale profile (the document changed
 * since the version profiled) says so above the table; its rows still lead to the lines,
 * followed through the edits (profileStore.ts), or say that an edit removed them.
 */

import * as crypto from 'crypto';
import * as vscode from 'vscode';
import { ProfileFunction, ProfileReport } from '../common/protocol';
import { showPlaced } from './placement';
import { ProfileStore } from './profileStore';

export const PROFILE_VIEW_TYPE = 'relaylens.profileTable';

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** "3-7, 12" from 0-based lines, 1-based as the editor numbers them. */
function lineList(lines: number[]): string {
    const sorted = [...new Set(lines)].sort((a, b) => a - b);
    const out: string[] = [];
    for (let i = 0; i < sorted.length;) {
        let j = i;
        while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) {
            j++;
        }
        out.push(i === j ? `${sorted[i] + 1}` : `${sorted[i] + 1}-${sorted[j] + 1}`);
        i = j + 1;
    }
    return out.join(', ');
}

/** The 0-based lines of a kernel's first call site: its anchor and the lines that follow it. */
export function firstSite(f: ProfileFunction): [number, number] | undefined {
    const lines = new Set(Object.keys(f.lines).map(Number));
    const start = f.anchors[0] ?? Math.min(...lines);
    if (!Number.isFinite(start)) {
        return undefined;
    }
    let end = start;
    while (lines.has(end + 1)) {
        end++;
    }
    return [start, end];
}

const COLUMNS: [key: string, title: string, numeric: boolean][] = [
    ['name', 'kernel', false], ['calls', 'calls', true], ['ms', 'ms', true], ['percent', '% run', true],
    ['gflops', 'GFLOP/s', true], ['peak', '% peak', true], ['gbs', 'GB/s', true], ['line', 'lines', true],
    ['layers', 'ONNX layers', false],
];
const COMPARE_COLUMNS: typeof COLUMNS = [['ort', 'onnxruntime ms', true], ['ratio', 'ours / ort', true]];

function row(f: ProfileFunction, index: number, compare: boolean): string {
    const layers = Object.entries(f.layers).sort((a, b) => b[1] - a[1]);
    const shown = layers.slice(0, 3).map(([name, ms]) => `${escape(name)} ${f.ms ? Math.round((100 * ms) / f.ms) : 0}%`);
    const more = layers.length > 3 ? ` and ${layers.length - 3} more` : '';
    const ratio = f.ort_ms ? f.ms / f.ort_ms : undefined;
    const cells = [
        `<td class="name"><span class="display">${escape(f.display_name)}</span><span class="symbol">${escape(f.name)}</span></td>`,
        `<td>${f.calls}</td>`,
        `<td>${f.ms.toFixed(4)}<span class="spread">[${f.min_ms.toPrecision(3)}–${f.max_ms.toPrecision(3)}]</span></td>`,
        `<td>${f.percent.toFixed(1)}</td>`, `<td>${f.gflops.toFixed(1)}</td>`, `<td>${f.percent_of_peak.toFixed(1)}</td>`,
        `<td>${f.gbytes_per_s.toFixed(2)}</td>`,
        `<td>${lineList(Object.keys(f.lines).map(Number))}</td>`,
        `<td class="layers" title="${escape(layers.map(([name]) => name).join('\n'))}">${shown.join(', ')}${more}</td>`,
        ...(compare ? [`<td>${f.ort_ms ? f.ort_ms.toFixed(4) : '—'}</td>`, `<td>${ratio ? ratio.toFixed(2) + 'x' : '—'}</td>`] : []),
    ];
    const data = {
        name: f.display_name, calls: f.calls, ms: f.ms, percent: f.percent, gflops: f.gflops, peak: f.percent_of_peak,
        gbs: f.gbytes_per_s, line: f.anchors[0] ?? 0, layers: layers[0]?.[0] ?? '', ort: f.ort_ms ?? -1, ratio: ratio ?? -1,
    };
    const attributes = Object.entries(data).map(([k, v]) => `data-${k}="${escape(String(v))}"`).join(' ');
    return `<tr tabindex="0" data-index="${index}" ${attributes}>${cells.join('')}</tr>`;
}

/** The page's script: sort by a header, post a row's index when it is clicked. */
const SCRIPT = `
const vscode = acquireVsCodeApi();
const body = document.querySelector('tbody');
const headers = [...document.querySelectorAll('th')];
let state = vscode.getState() || { key: 'ms', descending: true };
function sort(key, descending) {
    const numeric = headers.find((h) => h.dataset.key === key)?.dataset.numeric === 'true';
    const value = (tr) => numeric ? Number(tr.dataset[key]) : tr.dataset[key].toLowerCase();
    const rows = [...body.rows].sort((a, b) => {
        const x = value(a), y = value(b);
        return (x < y ? -1 : x > y ? 1 : 0) * (descending ? -1 : 1);
    });
    rows.forEach((tr) => body.appendChild(tr));
    headers.forEach((h) => h.setAttribute('aria-sort', h.dataset.key === key ? (descending ? 'descending' : 'ascending') : 'none'));
    state = { key, descending };
    vscode.setState(state);
}
headers.forEach((h) => h.addEventListener('click', () =>
    sort(h.dataset.key, state.key === h.dataset.key ? !state.descending : h.dataset.numeric === 'true')));
function reveal(tr) {
    [...body.rows].forEach((r) => r.classList.toggle('selected', r === tr));
    vscode.postMessage({ type: 'reveal', index: Number(tr.dataset.index) });
}
body.addEventListener('click', (e) => { const tr = e.target.closest('tr'); if (tr) reveal(tr); });
body.addEventListener('keydown', (e) => { if (e.key === 'Enter' && e.target.closest('tr')) reveal(e.target.closest('tr')); });
sort(state.key, state.descending);
`;

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 12px; }
.summary { margin: 10px 0; }
.stale { color: var(--vscode-editorWarning-foreground); font-weight: bold; }
table { border-collapse: collapse; width: 100%; }
th { text-align: right; cursor: pointer; user-select: none; padding: 4px 6px; border-bottom: 1px solid var(--vscode-panel-border); white-space: nowrap; }
th[data-key="name"], th[data-key="layers"] { text-align: left; }
th[aria-sort="ascending"]::after { content: " ▲"; }
th[aria-sort="descending"]::after { content: " ▼"; }
td { text-align: right; padding: 3px 6px; vertical-align: top; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name, td.layers { text-align: left; white-space: normal; }
td.name { min-width: 12em; }
td.layers { min-width: 10em; }
.symbol, .spread { display: block; opacity: 0.7; font-size: 0.8em; }
.symbol { overflow-wrap: anywhere; }
tbody tr { cursor: pointer; }
tbody tr:hover { background: var(--vscode-list-hoverBackground); }
tbody tr.selected, tbody tr:focus { background: var(--vscode-list-activeSelectionBackground); color: var(--vscode-list-activeSelectionForeground); outline: none; }
.notes { opacity: 0.8; margin-top: 12px; }
`;

function page(report: ProfileReport, stale: boolean, name: string): string {
    const nonce = crypto.randomBytes(16).toString('base64');
    const csp = [`default-src 'none'`, `style-src 'nonce-${nonce}'`, `script-src 'nonce-${nonce}'`].join('; ');
    const compare = report.compare ? report.functions.some((f) => f.ort_ms) : false;
    const columns = [...COLUMNS, ...(compare ? COMPARE_COLUMNS : [])];
    const header = columns.map(([key, title, numeric]) =>
        `<th data-key="${key}" data-numeric="${numeric}" aria-sort="none">${escape(title)}</th>`).join('');
    const vs = report.compare?.ratio
        ? ` · ${report.compare.ratio.toFixed(2)}x onnxruntime ${escape(report.compare.version)} (${report.compare.optimized_run_ms.toPrecision(4)} ms, every optimisation on; ${escape(report.compare.model)})`
        : '';
    const notes = [report.attribution, report.peak, ...report.notes].map((n) => `<div>${escape(n)}</div>`).join('');
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<title>RelayLens profile</title>
<style nonce="${nonce}">${STYLE}</style></head>
<body>
<div class="summary"><b>${escape(name)}</b>, version ${report.version}${stale ? ' <span class="stale">· stale: the document changed since</span>' : ''}:
${report.run_ms.toPrecision(4)} ms per run (median of ${report.runs}), kernels ${report.kernels_ms.toPrecision(4)} ms,
${report.threads} thread${report.threads === 1 ? '' : 's'}, ${report.mode === 'aot' ? 'AOT entry' : 'interpreter'}${vs}</div>
<table id="kernels"><thead><tr>${header}</tr></thead>
<tbody>${report.functions.map((f, i) => row(f, i, compare)).join('\n')}</tbody></table>
<div class="notes">${notes}</div>
<script nonce="${nonce}">${SCRIPT}</script>
</body></html>`;
}

class TablePanel {
    private shown?: { report: ProfileReport; stale: boolean };

    constructor(readonly panel: vscode.WebviewPanel, private readonly uri: vscode.Uri, private readonly store: ProfileStore) {
        panel.webview.onDidReceiveMessage((message: { type?: string; index?: unknown }) => {
            if (message?.type === 'reveal' && Number.isInteger(message.index)) {
                void this.reveal(message.index as number);
            }
        });
    }

    /** Write the page again when the report or its staleness changed (not on every edit). */
    update(report: ProfileReport, stale: boolean): void {
        if (this.shown?.report === report && this.shown.stale === stale) {
            return;
        }
        this.shown = { report, stale };
        const stem = (this.uri.path.split('/').pop() ?? '').replace(/\.[^.]*$/, ''); // not the file's name: its tab is the file's
        this.panel.title = `Profile: ${stem}${stale ? ' (stale)' : ''}`;
        this.panel.webview.html = page(report, stale, this.uri.path.split('/').pop() ?? '');
    }

    private async reveal(index: number): Promise<void> {
        const f = this.shown?.report.functions[index];
        const site = f && firstSite(f);
        if (!site) {
            return;
        }
        const [start, end] = site.map((line) => this.store.lineNow(this.uri, line));
        if (start === undefined) {
            void vscode.window.showInformationMessage(`RelayLens: an edit since the profile removed the lines of ${f.display_name}.`);
            return;
        }
        const document = await vscode.workspace.openTextDocument(this.uri);
        const editor = await showPlaced(document, new vscode.Range(start, 0, end ?? start, 0));
        editor.revealRange(new vscode.Range(start, 0, end ?? start, 0), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    }
}

export class ProfileTables implements vscode.Disposable {
    private readonly panels = new Map<string, TablePanel>();
    private readonly subscription: vscode.Disposable;

    constructor(private readonly store: ProfileStore) {
        this.subscription = store.onDidChange((uri) => this.refresh(uri));
    }

    /** Show the table of `uri`'s last profile beside its editor (the panel it has, if any). */
    show(uri: vscode.Uri, report: ProfileReport): void {
        const key = uri.toString();
        let table = this.panels.get(key);
        if (!table) {
            const panel = vscode.window.createWebviewPanel(PROFILE_VIEW_TYPE, 'Profile', { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
                { enableScripts: true, localResourceRoots: [], enableFindWidget: true });
            table = new TablePanel(panel, uri, this.store);
            this.panels.set(key, table);
            panel.onDidDispose(() => this.panels.delete(key));
        } else {
            table.panel.reveal(undefined, true);
        }
        table.update(report, this.isStale(uri, report));
    }

    private isStale(uri: vscode.Uri, report: ProfileReport): boolean {
        const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
        return document ? document.version !== report.version : !report.current;
    }

    private refresh(key: string): void {
        const table = this.panels.get(key);
        const report = this.store.peek(key);
        if (table && report) {
            table.update(report, this.isStale(vscode.Uri.parse(key), report));
        }
    }

    dispose(): void {
        this.subscription.dispose();
        this.panels.forEach((t) => t.panel.dispose());
    }
}
