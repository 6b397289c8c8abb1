/**
 * Which Python runs the server, and whether it can.
 *
 * `candidatePythons` lists them in order: the `relaylens.server.pythonPath` setting alone
 * when it is set; else the active interpreter of the Python extension when it is installed,
 * the private environment (privateEnv.ts) when one was made, and `python3` on the PATH.
 * `checkPython` runs an interpreter once and turns every way it can fail (not found, not
 * runnable, relaylens not importable) into a sentence that says what to set.
 */

import { execFile } from 'child_process';
import * as os from 'os';
import * as vscode from 'vscode';
import { FALLBACK_PYTHON, PYTHON_EXTENSION_ID, SERVER_MODULE, SETTINGS } from './constants';

export interface PythonChoice {
    /** The interpreter: an absolute path or a command looked up on the PATH. */
    command: string;
    /** Where it came from, for messages. */
    source: 'setting' | 'python extension' | 'private environment' | 'default';
}

/** The part of the Python extension's API we use (`environments`, stable since 2023). */
interface PythonExtensionApi {
    environments?: {
        getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
        resolveEnvironment(path: string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
        onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
    };
}

function expand(setting: string, resource?: vscode.Uri): string {
    const folder = resource ? vscode.workspace.getWorkspaceFolder(resource) : vscode.workspace.workspaceFolders?.[0];
    let value = setting.trim();
    if (value.startsWith('~')) {
        value = os.homedir() + value.slice(1);
    }
    if (folder) {
        value = value.replace(/\$\{workspaceFolder\}/g, folder.uri.fsPath);
    }
    return value;
}

async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
    const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
    if (!extension) {
        return undefined;
    }
    try {
        return extension.isActive ? extension.exports : await extension.activate();
    } catch {
        return undefined;
    }
}

/** The interpreters to try for `resource` (or the first workspace folder), in order. */
export async function candidatePythons(resource?: vscode.Uri, privatePython?: string): Promise<PythonChoice[]> {
    const configured = vscode.workspace.getConfiguration(SETTINGS.section, resource).get<string>(SETTINGS.pythonPath, '');
    if (configured.trim()) {
        return [{ command: expand(configured, resource), source: 'setting' }];
    }
    const found: PythonChoice[] = [];
    const environments = (await pythonExtensionApi())?.environments;
    if (environments) {
        try {
            const active = environments.getActiveEnvironmentPath(resource);
            const executable = (await environments.resolveEnvironment(active.path))?.executable.uri?.fsPath;
            if (executable) {
                found.push({ command: executable, source: 'python extension' });
            }
        } catch {
            // the next candidates
        }
    }
    if (privatePython) {
        found.push({ command: privatePython, source: 'private environment' });
    }
    found.push({ command: FALLBACK_PYTHON, source: 'default' });
    return found;
}

/** Fires when the Python extension's active interpreter changes (never without it). */
export async function onDidChangePython(listener: () => void): Promise<vscode.Disposable> {
    const environments = (await pythonExtensionApi())?.environments;
    return environments ? environments.onDidChangeActiveEnvironmentPath(listener) : new vscode.Disposable(() => undefined);
}

/** Exit status of the probe when the interpreter runs but cannot import the server. */
const NOT_IMPORTABLE = 3;
const PROBE = [
    'import importlib.util, sys',
    'try:',
    `    found = importlib.util.find_spec(${JSON.stringify(SERVER_MODULE)})`,
    'except ModuleNotFoundError:  # its package is missing: find_spec raises for a dotted name',
    '    found = None',
    `sys.exit(0 if found else ${NOT_IMPORTABLE})`,
].join('\n');

/** Why `python` cannot run the server, as a message for the user; undefined when it can. */
export function checkPython(python: PythonChoice): Promise<string | undefined> {
    const hint =
        python.source === 'setting'
            ? 'Fix the setting "relaylens.server.pythonPath".'
            : 'Set "relaylens.server.pythonPath" to a Python that has relaylens installed (pip install relaylens).';
    const where = python.source === 'default' ? `"${python.command}" (the default)` : `"${python.command}" (from the ${python.source})`;
    return new Promise((resolve) => {
        execFile(python.command, ['-c', PROBE], { timeout: 60_000 }, (error, _stdout, stderr) => {
            if (!error) {
                resolve(undefined);
            } else if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
                resolve(`RelayLens: Python interpreter ${where} was not found. ${hint}`);
            } else if (error.code === NOT_IMPORTABLE) {
                resolve(`RelayLens: ${where} cannot import ${SERVER_MODULE}. ${hint}`);
            } else {
                const detail = stderr.trim().split('\n').pop() ?? error.message;
                resolve(`RelayLens: ${where} failed to run (${detail}). ${hint}`);
            }
        });
    });
}
