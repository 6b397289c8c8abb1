/**
 * Zero configuration: a private Python environment, in the extension's global storage, with
 * the relaylens wheel that the .vsix carries (`python/relaylens-*.whl`, put there by
 * scripts/vsix.sh).
 *
 * When no interpreter the extension can find has relaylens, server.ts offers (one message,
 * one click) to create it: a Python 3.11 or newer from the PATH makes a venv, pip installs
 * the wheel and its dependencies into it (from the package index pip is configured with),
 * with progress and pip's output in the RelayLens output channel.  A marker file names the
 * wheel installed; an environment made from another wheel (the extension was updated) is
 * not used and is made again on the next offer.  Highlighting and the grammar need none of
 * this: they work with no server at all.
 */

import { execFile } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';

const MARKER = 'relaylens-wheel.txt';
const BASE_PYTHONS = ['python3', 'python3.13', 'python3.12', 'python3.11', 'python'];
const VERSION_PROBE = 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)';

function run(command: string, args: string[], output: vscode.LogOutputChannel, timeout = 900_000): Promise<void> {
    return new Promise((resolve, reject) => {
        output.info(`$ ${command} ${args.join(' ')}`);
        execFile(command, args, { timeout, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
            for (const line of `${stdout}${stderr}`.split('\n').filter((l) => l.trim())) {
                output.info(line);
            }
            if (error) {
                reject(new Error(`${path.basename(command)} ${args[0] ?? ''} failed: ${stderr.trim().split('\n').pop() ?? error.message}`));
            } else {
                resolve();
            }
        });
    });
}

export class PrivateEnvironment {
    constructor(private readonly context: vscode.ExtensionContext, private readonly output: vscode.LogOutputChannel) {}

    get directory(): string {
        return path.join(this.context.globalStorageUri.fsPath, 'python-env');
    }

    get python(): string {
        return process.platform === 'win32'
            ? path.join(this.directory, 'Scripts', 'python.exe')
            : path.join(this.directory, 'bin', 'python');
    }

    /** The wheel this .vsix carries, if it carries one. */
    get wheel(): string | undefined {
        const folder = path.join(this.context.extensionPath, 'python');
        const found = fs.existsSync(folder) ? fs.readdirSync(folder).filter((f) => /^relaylens-.*\.whl$/.test(f)) : [];
        return found.length > 0 ? path.join(folder, found.sort().pop()!) : undefined;
    }

    /** The interpreter of an environment made from this extension's wheel, if there is one. */
    ready(): string | undefined {
        const wheel = this.wheel;
        const marker = path.join(this.directory, MARKER);
        if (!wheel || !fs.existsSync(this.python) || !fs.existsSync(marker)) {
            return undefined;
        }
        return fs.readFileSync(marker, 'utf8').trim() === path.basename(wheel) ? this.python : undefined;
    }

    /** Make the environment, with progress; the interpreter, or an error message. */
    async create(): Promise<{ python?: string; error?: string }> {
        const wheel = this.wheel;
        if (!wheel) {
            return { error: 'this build of the extension carries no relaylens wheel' };
        }
        return vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: 'RelayLens: creating a Python environment', cancellable: false },
            async (progress) => {
                try {
                    progress.report({ message: 'looking for Python 3.11 or newer' });
                    const base = await this.basePython();
                    fs.rmSync(this.directory, { recursive: true, force: true });
                    fs.mkdirSync(path.dirname(this.directory), { recursive: true });
                    progress.report({ message: `python -m venv (${base})` });
                    await run(base, ['-m', 'venv', this.directory], this.output);
                    progress.report({ message: 'pip install relaylens and its dependencies (a minute or two)' });
                    await run(this.python, ['-m', 'pip', 'install', '--disable-pip-version-check', wheel], this.output);
                    fs.writeFileSync(path.join(this.directory, MARKER), path.basename(wheel));
                    return { python: this.python };
                } catch (error) {
                    return { error: String(error instanceof Error ? error.message : error) };
                }
            },
        );
    }

    private async basePython(): Promise<string> {
        for (const candidate of BASE_PYTHONS) {
            try {
                await new Promise<void>((resolve, reject) =>
                    execFile(candidate, ['-c', VERSION_PROBE], { timeout: 30_000 }, (error) => (error ? reject(error) : resolve())),
                );
                return candidate;
            } catch {
                // try the next one
            }
        }
        throw new Error(`no Python 3.11 or newer on the PATH (tried ${BASE_PYTHONS.join(', ')})`);
    }
}
