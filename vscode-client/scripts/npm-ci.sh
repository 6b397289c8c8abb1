#!/usr/bin/env bash
# Install the npm packages of package-lock.json into vscode-client/node_modules (`npm ci`),
# unless they are there already and newer than the lock.  Needs npm and the npm registry
# (or npm's cache).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# one install at a time: a second waits, then finds node_modules there
if command -v flock >/dev/null; then exec 9>.npm-ci.lock && flock 9; fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund >&2
fi
