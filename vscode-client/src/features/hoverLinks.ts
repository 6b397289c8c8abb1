/**
 * Clickable links to the compiler's views in the server's hovers.
 *
 * The hover middleware rewrites every `relaylens:` link of a hover into a `command:` link
 * of `relaylens.open` (common/commandLinks.ts) and marks the Markdown trusted for that
 * command alone: clicking "LLVM IR" in a hover opens module.ll at the fused function in
 * the editor pair, as the `ƒ` lens does.  The server's hover stays plain Markdown with
 * `relaylens:` URIs for every other client.
 */

import * as vscode from 'vscode';
import { Middleware } from 'vscode-languageclient/node';
import { commandLinks } from '../common/commandLinks';
import { COMMANDS } from '../common/constants';

/** The only commands a hover's links may run. */
const TRUSTED = { enabledCommands: [COMMANDS.open] };

function withCommandLinks(content: vscode.MarkdownString | vscode.MarkedString): vscode.MarkdownString | vscode.MarkedString {
    if (!(content instanceof vscode.MarkdownString)) {
        return content;
    }
    const rewritten = new vscode.MarkdownString(commandLinks(content.value, COMMANDS.open), content.supportThemeIcons);
    rewritten.supportHtml = content.supportHtml;
    rewritten.baseUri = content.baseUri;
    rewritten.isTrusted = TRUSTED;
    return rewritten;
}

export const hoverLinks: Middleware = {
    async provideHover(document, position, token, next) {
        const hover = await next(document, position, token);
        return hover ? new vscode.Hover(hover.contents.map(withCommandLinks), hover.range) : hover;
    },
};
