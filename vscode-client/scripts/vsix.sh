#!/usr/bin/env bash
# Build the extension and package it offline:  scripts/vsix.sh  ->  dist/relaylens.vsix
#
# Installs the npm packages of the lock first when needed (scripts/npm-ci.sh), then
# type-checks (tsc), bundles (esbuild) and packages (vsce, no network).  Prints the path of the .vsix on stdout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/npm-ci.sh
npm run --silent package >&2
echo "$PWD/dist/relaylens.vsix"
