/**
 * The RelayLens extension: wires VS Code to the RelayLens language server.
 *
 * Everything about Relay lives in the server (docs/lsp.md); the modules here start it
 * (common/python.ts, common/server.ts) and present what it answers: virtual documents,
 * compiler views, the build status and the line colours (features/).
 */

import * as vscode from 'vscode';
import { BuildEvents } from './common/builds';
import { CLIENT_NAME, COMMANDS, SETTINGS } from './common/constants';
import { PrivateEnvironment } from './common/privateEnv';
import { onDidChangePython } from './common/python';
import { ServerManager } from './common/server';
import { BuildStatus } from './features/buildStatus';
import { ByocColours } from './features/byoc';
import { registerCompilerViews } from './features/compilerViews';
import { registerGraphView } from './features/graphView';
import { LineColours } from './features/lineColours';
import { registerNumerics } from './features/numerics';
import { Profiler } from './features/profile';
import { registerVirtualDocuments } from './features/virtualDocuments';

let server: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    const output = vscode.window.createOutputChannel(CLIENT_NAME, { log: true });
    server = new ServerManager(output, new PrivateEnvironment(context, output));
    const builds = new BuildEvents(server);
    const provider = registerVirtualDocuments(context, server, builds);
    registerCompilerViews(context, server, provider);
    const profiler = new Profiler(server, builds);
    registerNumerics(context, server);
    registerGraphView(context, server, builds, output);
    const restart = () => server?.restart();
    context.subscriptions.push(
        output,
        builds,
        new BuildStatus(builds),
        profiler,
        new LineColours(server, builds, profiler.heat),
        new ByocColours(server, builds),
        vscode.commands.registerCommand(COMMANDS.restart, restart),
        vscode.commands.registerCommand(COMMANDS.showOutput, () => output.show()),
        vscode.workspace.onDidChangeConfiguration((e) => [SETTINGS.pythonPath, SETTINGS.maxBytes, SETTINGS.cacheEnabled].some((key) => e.affectsConfiguration(`${SETTINGS.section}.${key}`)) && restart()),
        await onDidChangePython(restart),
    );
    await server.start();
}

export async function deactivate(): Promise<void> {
    await server?.dispose();
    server = undefined;
}
