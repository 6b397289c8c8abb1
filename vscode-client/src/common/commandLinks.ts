/**
 * The server's hovers link to its virtual documents with `relaylens:` URIs (docs/lsp.md),
 * plain Markdown that any LSP client shows.  VS Code's Markdown follows links of a few
 * schemes only and shows the others as plain text, so the hover middleware
 * (features/hoverLinks.ts) rewrites each `relaylens:` link into a `command:` link of
 * `relaylens.open`, the command the code lenses run: the document opens in the editor pair
 * (features/placement.ts), reusing an open module.ll.  A `#L<line>` fragment (1-based)
 * becomes the command's range, the start of that line.
 *
 * No `vscode` import here: the rewrite is a pure function of the text (tested under Node).
 */

export interface LinkRange {
    start: { line: number; character: number };
    end: { line: number; character: number };
}

const RELAYLENS_LINK = /\]\((relaylens:[^\s)#]+)(?:#L(\d+))?\)/g;

/** The `command:` URI that runs `command` with `args` (VS Code spreads a JSON array). */
export function commandUri(command: string, args: unknown[]): string {
    const query = encodeURIComponent(JSON.stringify(args)).replace(/[()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
    return `command:${command}?${query}`;
}

/**
 * `markdown` with every `[text](relaylens:...)` link made `[text](command:<open>?[uri, range] "name")`,
 * the title naming the document (`module.ll`, `36-FuseOps.relay`).  Other links stay.
 */
export function commandLinks(markdown: string, open: string): string {
    return markdown.replace(RELAYLENS_LINK, (_whole, uri: string, line?: string) => {
        const name = decodeURIComponent(uri.split('?', 1)[0].split('/').pop() ?? uri);
        const at = line === undefined ? undefined : Math.max(Number(line) - 1, 0);
        const range: LinkRange | undefined = at === undefined ? undefined
            : { start: { line: at, character: 0 }, end: { line: at, character: 0 } };
        return `](${commandUri(open, range ? [uri, range] : [uri])} "${name.replace(/"/g, '')}")`;
    });
}
