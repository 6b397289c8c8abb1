#!/usr/bin/env bash
# Install the npm packages of package-lock.json into vscode-client/node_modules (`npm ci`),
# unless they are there already and newer than the lock.  Needs npm and the npm registry
# (or npm's cache).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund >&2
fi
