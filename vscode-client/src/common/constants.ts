/** Names shared by the extension's modules: ids, settings, commands, the virtual-document scheme. */

export const EXTENSION_ID = 'relaylens.relaylens';
export const CLIENT_ID = 'relaylens'; // also the prefix of the `relaylens.trace.server` setting
export const CLIENT_NAME = 'RelayLens';
export const LANGUAGE_ID = 'relay';
export const LLVM_LANGUAGE_ID = 'llvm';

/** URI scheme of the documents the server serves (pass snapshots, LLVM IR, schedules). */
export const VIRTUAL_SCHEME = 'relaylens';

/** The Python module that runs the language server on stdio. */
export const SERVER_MODULE = 'relaylens.server';

export const SETTINGS = {
    section: 'relaylens',
    pythonPath: 'server.pythonPath',
    inlayTypes: 'inlayHints.types', // sent to the server (docs/lsp.md, "Settings")
    maxBytes: 'files.maxBytes', // sent to the server at start (docs/lsp.md, "Initialization options")
    bindParams: 'params.bind', // sent to the server (docs/lsp.md, "Settings")
    cacheEnabled: 'cache.enabled', // sent to the server at start (docs/lsp.md, "Initialization options")
    idleExitSeconds: 'worker.idleExitSeconds', // sent to the server (docs/lsp.md, "Settings")
} as const;

export const COMMANDS = {
    restart: 'relaylens.restartServer',
    showLlvmIr: 'relaylens.showLlvmIr',
    showOptimizedIr: 'relaylens.showOptimizedIr',
    showAssembly: 'relaylens.showAssembly',
    toggleDebugInfo: 'relaylens.toggleDebugInfo',
    showPassPipeline: 'relaylens.showPassPipeline',
    showSchedule: 'relaylens.showSchedule',
    explain: 'relaylens.explain',
    showOutput: 'relaylens.showOutput',
    open: 'relaylens.open', // invoked by the server's code lenses (docs/lsp.md)
    goToSource: 'relaylens.goToSource', // F12 in a virtual document
    showGraph: 'relaylens.showGraph', // the Graph view (features/graphView.ts)
    profile: 'relaylens.profile', // runs generated code: only on this command (docs/lsp.md, relaylens/profile)
    checkNumerics: 'relaylens.checkNumerics', // runs generated code too (docs/lsp.md, relaylens/checkNumerics)
    cancelProfile: 'relaylens.cancelProfile', // the lens above @main while a profile runs
    showProfile: 'relaylens.showProfile', // the table of the last profile (a webview)
    toggleHeat: 'relaylens.toggleHeat', // the profile's heat colours instead of the line groups
} as const;

/** The Python extension, asked for its active interpreter when installed. */
export const PYTHON_EXTENSION_ID = 'ms-python.python';
export const FALLBACK_PYTHON = 'python3';
