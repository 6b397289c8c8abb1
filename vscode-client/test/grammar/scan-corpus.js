#!/usr/bin/env node
/**
 * Tokenise real Relay files with the extension's grammar and report what would look wrong
 * in an editor.  Usage: node test/grammar/scan-corpus.js FILE...
 *
 * Prints one JSON object per file on stdout: {file, problems: [{line, column, text, problem}]}.
 * Problems:
 *   - "invalid"      a token scoped invalid.* (the file must be one TVM accepts);
 *   - "sigil"        a %name or @name outside comments and strings that is not a variable
 *                    or function scope;
 *   - "annotation"   a printer comment `/* ty=` or `/* span=` not scoped as an annotation;
 *   - "leak"         the last line ends inside a block comment or string that began earlier
 *                    (an unterminated nested comment swallowing the rest of the file).
 * Uses vscode-tmgrammar-test's own registry and tokeniser (the same code as its unit tests).
 */
const fs = require('fs');
const path = require('path');
const { createRegistry } = require('vscode-tmgrammar-test/dist/common/index');
const { getVSCodeTokens } = require('vscode-tmgrammar-test/dist/snapshot/index');

const root = path.resolve(__dirname, '..', '..');
const registry = createRegistry([
    { scopeName: 'source.relay', path: path.join(root, 'syntaxes', 'relay.tmLanguage.json') },
]);

function problemsOf(lines) {
    const problems = [];
    const report = (line, token, problem) =>
        problems.push({ line: line + 1, column: token.startIndex + 1, text: lines[line].src.slice(token.startIndex, token.endIndex), problem });
    lines.forEach(({ src, tokens }, line) => {
        for (const token of tokens) {
            const scopes = token.scopes.join(' ');
            const inert = /comment|string/.test(scopes);
            if (/\binvalid\./.test(scopes)) {
                report(line, token, 'invalid');
            } else if (!inert && /^[%@]/.test(token.text) && !/variable|entity\.name\.function/.test(scopes)) {
                report(line, token, 'sigil');
            }
        }
        for (const match of src.matchAll(/\/\*\s*(?:ty|span)=/g)) {
            const token = tokens.find((t) => t.startIndex <= match.index && match.index < t.endIndex);
            const outer = token && token.scopes.slice(0, 2).join(' ');
            if (token && !/comment|string/.test(outer) && !token.scopes.includes('comment.block.annotation.relay')) {
                report(line, token, 'annotation');
            }
        }
    });
    const last = lines[lines.length - 1];
    const tail = last && last.tokens[last.tokens.length - 1];
    if (tail && /comment\.block|string\.quoted/.test(tail.scopes.join(' ')) && !/\*\/\s*$|"\s*$/.test(last.src)) {
        report(lines.length - 1, tail, 'leak');
    }
    return problems;
}

async function main(files) {
    for (const file of files) {
        const text = fs.readFileSync(file, 'utf8').replace(/\r\n/g, '\n');
        const metadata = text.search(/^\s*#\[metadata\]/m); // JSON after it: not Relay
        const source = metadata >= 0 ? text.slice(0, metadata) : text;
        const lines = await getVSCodeTokens(registry, 'source.relay', source);
        console.log(JSON.stringify({ file, problems: problemsOf(lines) }));
    }
}

main(process.argv.slice(2)).catch((error) => {
    console.error(error);
    process.exit(1);
});
