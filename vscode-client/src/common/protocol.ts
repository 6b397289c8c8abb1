/**
 * The server's extensions to LSP, as docs/lsp.md fixes them: the `relaylens:` URIs, the
 * custom requests and the build notification.  Only types and URI spelling live here; the
 * client never interprets Relay.
 */

import * as vscode from 'vscode';
import { NotificationType, RequestType } from 'vscode-languageclient/node';
import { VIRTUAL_SCHEME } from './constants';
import { GraphAnswer, GraphParams } from './graphMessages';

export type LineRange = [number, number]; // 0-based, inclusive

export interface VirtualDocument {
    uri: string;
    text: string;
    languageId: string;
    version: number;
}

export interface LineMapFunction {
    name: string;
    relay: LineRange[];
    llvm: LineRange[];
}

export interface LineMap {
    uri: string;
    version: number;
    module: string;
    functions: LineMapFunction[];
    lines: [number, number][]; // [module.ll line, Relay line]
}

export interface Snapshot {
    index: number;
    name: string;
    changed: boolean;
    uri: string;
    aligned?: string; // the same module numbered as the snapshot before (absent for the input)
}

export interface Snapshots {
    uri: string;
    version: number;
    passes: Snapshot[];
}

export interface BuildFinished {
    uri: string;
    version: number;
    state: 'done' | 'cancelled' | 'crashed';
    current: boolean;
    seconds: number;
    functions: number;
    weights?: string | null; // the .npz beside the model whose arrays the build bound
}

export interface ProfileFunction {
    name: string;
    display_name: string;
    calls: number;
    ms: number;
    min_ms: number;
    max_ms: number;
    percent: number;
    gflops: number;
    percent_of_peak: number;
    mbytes: number;
    gbytes_per_s: number;
    anchors: number[]; // 0-based lines
    lines: Record<string, number>; // 0-based line -> ms
    layers: Record<string, number>;
    ort_ms?: number | null; // onnxruntime's time for its layers (with `compare` only)
}

export interface ProfileComparison {
    model: string; // the ONNX file beside the document
    version: string; // onnxruntime's
    run_ms: number; // optimisations off, profiling on
    optimized_run_ms: number; // every optimisation on (ORT_ENABLE_ALL)
    ratio: number | null; // our run_ms / optimized_run_ms
    layers: Record<string, number>; // ONNX layer -> onnxruntime's ms
}

export interface ProfileReport {
    uri: string;
    version: number;
    current: boolean;
    error: string | null;
    mode: string;
    runs: number;
    threads: number;
    run_ms: number;
    kernels_ms: number;
    peak: string;
    attribution: string;
    notes: string[];
    functions: ProfileFunction[];
    lines: Record<string, number>;
    layers: Record<string, number>;
    compare?: ProfileComparison | null;
}

export const VirtualDocumentRequest = new RequestType<{ uri: string }, VirtualDocument, void>('relaylens/virtualDocument');
export const LineMapRequest = new RequestType<{ uri: string }, LineMap | null, void>('relaylens/lineMap');
export const SnapshotsRequest = new RequestType<{ uri: string }, Snapshots | null, void>('relaylens/snapshots');
export const ProfileRequest = new RequestType<{ uri: string; runs: number; compare?: boolean }, ProfileReport, void>('relaylens/profile');
export const LastProfileRequest = new RequestType<{ uri: string }, ProfileReport | null, void>('relaylens/lastProfile');
export const GraphRequest = new RequestType<GraphParams, GraphAnswer, void>('relaylens/graph');
export const BuildFinishedNotification = new NotificationType<BuildFinished>('relaylens/buildFinished');

/**
 * A `relaylens:` URI, spelt as docs/lsp.md shows it
 * (`relaylens:/<kind>/<name>?uri=<encodeURIComponent(doc)>&version=<N>`).
 */
export function virtualUri(kind: 'llvm' | 'schedule' | 'pass', name: string, document: vscode.Uri, version?: number): vscode.Uri {
    const query = `uri=${encodeURIComponent(document.toString())}` + (version === undefined ? '' : `&version=${version}`);
    return vscode.Uri.parse(`${VIRTUAL_SCHEME}:/${kind}/${name}?${query}`);
}

/** Which document and version a `relaylens:` URI shows, and what (kind and name). */
export interface VirtualUriParts {
    kind: string;
    name: string;
    document: vscode.Uri;
    version?: number;
}

export function parseVirtualUri(uri: vscode.Uri): VirtualUriParts | undefined {
    if (uri.scheme !== VIRTUAL_SCHEME) {
        return undefined;
    }
    const [, kind, ...rest] = uri.path.split('/');
    const params = new URLSearchParams(uri.query);
    const document = params.get('uri');
    if (!kind || !document) {
        return undefined;
    }
    const version = params.get('version');
    return { kind, name: rest.join('/'), document: vscode.Uri.parse(document), version: version === null ? undefined : Number(version) };
}
