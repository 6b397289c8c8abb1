# Every target sets up .venv from pyproject.toml first; nothing is installed globally.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: venv test demo bench clean vsix

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

demo: $(STAMP)
	$(VENV)/bin/relaylens check examples/mnist.relay
	$(VENV)/bin/relaylens print --spans --types examples/mnist.relay

bench: $(STAMP)
	$(PY) bench/parse.py
	$(PY) bench/typecheck.py
	$(PY) bench/passes.py

# The VS Code extension, packaged offline: vscode-client/dist/relaylens.vsix (npm ci first
# when vscode-client/node_modules is missing or older than its package-lock.json).
vsix:
	vscode-client/scripts/vsix.sh

clean:
	rm -rf $(VENV) build *.egg-info
