#!/usr/bin/env bash
# Build the extension and package it offline:  scripts/vsix.sh  ->  dist/relaylens.vsix
#
# Installs the npm packages of the lock first when needed (scripts/npm-ci.sh), builds the
# relaylens wheel into python/ (the .vsix carries it: src/common/privateEnv.ts installs it
# when no Python has relaylens; $PYTHON, else the project's .venv, else python3 builds it),
# then type-checks (tsc), bundles (esbuild) and packages (vsce, no network).  Prints the
# path of the .vsix on stdout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# one packaging at a time (two test workers may both want the .vsix): python/ and dist/
# are rewritten below
if command -v flock >/dev/null; then exec 9>.vsix.lock && flock 9; fi

scripts/npm-ci.sh
python="${PYTHON:-}"
if [ -z "$python" ]; then
    if [ -x ../.venv/bin/python ]; then python=../.venv/bin/python; else python=python3; fi
fi
rm -rf python
"$python" -m pip wheel --quiet --no-deps --disable-pip-version-check -w python .. >&2
rm -rf ../build/lib ../build/bdist.* # setuptools' leftovers; build/demo (make demo's) stays
npm run --silent package >&2
echo "$PWD/dist/relaylens.vsix"
