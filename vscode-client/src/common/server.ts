/**
 * Starting, stopping and restarting the language server (`<python> -m relaylens.server`).
 *
 * One `ServerManager` owns the current `LanguageClient`.  A start tries the interpreters
 * python.ts lists until one can import the server, and only then spawns it; when none can,
 * the error message says what to set and, when the .vsix carries the relaylens wheel and
 * no interpreter was configured, offers to create a private environment (privateEnv.ts);
 * every failure is also a line in the output channel.  Features that talk to
 * the server subscribe to `onDidStart` and read `client`, so they survive restarts.
 */

import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, RevealOutputChannelOn, ServerOptions, State } from 'vscode-languageclient/node';
import { CLIENT_ID, CLIENT_NAME, COMMANDS, LANGUAGE_ID, SERVER_MODULE, SETTINGS, VIRTUAL_SCHEME } from './constants';
import { PrivateEnvironment } from './privateEnv';
import { PythonChoice, candidatePythons, checkPython } from './python';
import { hoverLinks } from '../features/hoverLinks';

/** The settings the server reads at `initialize` (docs/lsp.md, "Settings"). */
function initializationOptions(): {
    inlayHints: { types: boolean }; files: { maxBytes: number }; params: { bind: boolean }; cache: { enabled: boolean };
    worker: { idleExitSeconds: number };
    byoc: { patterns: string; target: string; targetOps: string };
} {
    const config = vscode.workspace.getConfiguration(SETTINGS.section);
    return {
        inlayHints: { types: config.get<boolean>(SETTINGS.inlayTypes, true) },
        files: { maxBytes: config.get<number>(SETTINGS.maxBytes, 64 << 20) },
        params: { bind: config.get<boolean>(SETTINGS.bindParams, true) },
        cache: { enabled: config.get<boolean>(SETTINGS.cacheEnabled, true) },
        worker: { idleExitSeconds: config.get<number>(SETTINGS.idleExitSeconds, 60) },
        byoc: { patterns: config.get<string>('byoc.patterns', ''), target: config.get<string>('byoc.target', ''), targetOps: config.get<string>('byoc.targetOps', '') },
    };
}

export class ServerManager implements vscode.Disposable {
    private current: LanguageClient | undefined;
    private starting: Promise<void> | undefined;
    private failed = false;
    private readonly started = new vscode.EventEmitter<LanguageClient>();
    private readonly stopped = new vscode.EventEmitter<void>();

    /** Fires with the new client once it is running. */
    readonly onDidStart = this.started.event;
    /** Fires when the client stops (restart, failure, shutdown). */
    readonly onDidStop = this.stopped.event;

    constructor(private readonly output: vscode.LogOutputChannel, private readonly privateEnv: PrivateEnvironment) {}

    /** The running client, if any. */
    get client(): LanguageClient | undefined {
        return this.current?.state === State.Running ? this.current : undefined;
    }

    /**
     * Start the server unless it is running or starting: every caller (activation, each
     * virtual document, each command) shares the one client of this window.  A client that
     * stopped for good is replaced; after a start that failed (no usable Python), nothing
     * is retried until `restart()`, so opening documents does not repeat the error.
     */
    start(): Promise<void> {
        if (this.starting) {
            return this.starting;
        }
        if (this.failed || (this.current && this.current.state !== State.Stopped)) {
            return Promise.resolve();
        }
        this.starting = this.replaceStopped()
            .then(() => this.doStart())
            .finally(() => (this.starting = undefined));
        return this.starting;
    }

    async restart(): Promise<void> {
        await this.starting;
        await this.stop();
        this.failed = false;
        await this.start();
    }

    async stop(): Promise<void> {
        const client = this.current;
        this.current = undefined;
        if (client) {
            try {
                await client.stop();
            } catch (error) {
                this.output.warn(`stopping the server: ${error}`);
            }
            await client.dispose();
            this.stopped.fire();
        }
    }

    async dispose(): Promise<void> {
        await this.stop();
        this.started.dispose();
        this.stopped.dispose();
    }

    /** Dispose of a client that stopped by itself (it crashed past its restarts). */
    private async replaceStopped(): Promise<void> {
        if (this.current?.state === State.Stopped) {
            await this.stop();
        }
    }

    /** The first interpreter that can run the server; else the first one's problem. */
    private async choosePython(): Promise<{ python?: PythonChoice; problem?: string; configured: boolean }> {
        const candidates = await candidatePythons(vscode.window.activeTextEditor?.document.uri, this.privateEnv.ready());
        let problem: string | undefined;
        for (const python of candidates) {
            const why = await checkPython(python);
            this.output.info(`Python: ${python.command} (${python.source})${why ? `: ${why}` : ''}`);
            if (!why) {
                return { python, configured: false };
            }
            problem ??= why;
        }
        return { problem, configured: candidates[0].source === 'setting' };
    }

    /** One message, one click: make the private environment, then start again. */
    private async offerPrivateEnvironment(problem: string): Promise<void> {
        const create = 'Create Environment';
        const choice = await vscode.window.showErrorMessage(
            `${problem} RelayLens can create a private Python environment with relaylens in it (in the extension's storage).`,
            create, 'Open Settings');
        if (choice === 'Open Settings') {
            await vscode.commands.executeCommand('workbench.action.openSettings', 'relaylens.server.pythonPath');
        } else if (choice === create) {
            const made = await this.privateEnv.create();
            if (made.python) {
                this.output.info(`private environment ready: ${made.python}`);
                await this.restart();
            } else {
                const message = `RelayLens: could not create the Python environment (${made.error}). See the RelayLens output.`;
                this.output.error(message);
                void showProblem(message);
            }
        }
    }

    private async doStart(): Promise<void> {
        const { python, problem, configured } = await this.choosePython();
        if (!python) {
            this.failed = true;
            this.output.error(problem ?? 'no Python');
            if (!configured && this.privateEnv.wheel) {
                void this.offerPrivateEnvironment(problem ?? 'RelayLens: no Python can run the server.');
            } else {
                void showProblem(problem ?? 'RelayLens: no Python can run the server.');
            }
            return;
        }
        const serverOptions: ServerOptions = {
            command: python.command,
            args: ['-m', SERVER_MODULE],
            options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
        };
        const clientOptions: LanguageClientOptions = {
            documentSelector: [
                { scheme: 'file', language: LANGUAGE_ID },
                { scheme: 'untitled', language: LANGUAGE_ID },
                { scheme: VIRTUAL_SCHEME },
            ],
            initializationOptions: initializationOptions(),
            // every change in the section reaches the server as workspace/didChangeConfiguration
            synchronize: { configurationSection: SETTINGS.section },
            outputChannel: this.output,
            traceOutputChannel: this.output,
            revealOutputChannelOn: RevealOutputChannelOn.Never,
            middleware: hoverLinks, // relaylens: links in hovers become command links (features/hoverLinks.ts)
        };
        const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
        this.current = client;
        try {
            await client.start();
        } catch (error) {
            this.current = undefined;
            this.failed = true;
            await client.dispose().catch(() => undefined);
            const message = `RelayLens: the language server did not start (${error}). See the RelayLens output for its log.`;
            this.output.error(message);
            void showProblem(message);
            return;
        }
        this.output.info(`server started: ${python.command} -m ${SERVER_MODULE}`);
        this.started.fire(client);
    }
}

async function showProblem(message: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(message, 'Open Settings', 'Show Output', 'Restart');
    if (choice === 'Open Settings') {
        await vscode.commands.executeCommand('workbench.action.openSettings', 'relaylens.server.pythonPath');
    } else if (choice === 'Show Output') {
        await vscode.commands.executeCommand(COMMANDS.showOutput);
    } else if (choice === 'Restart') {
        await vscode.commands.executeCommand(COMMANDS.restart);
    }
}
