# Every target sets up .venv from pyproject.toml first; nothing is installed globally.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: venv test fuzz demo bench clean vsix

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# Two pytest-xdist workers (a file to a worker: module fixtures and the files' shared
# scratch directories stay in one process), in the order tests/conftest.py gives (slow
# files first); TEST_WORKERS=0 runs in this one process.
TEST_WORKERS ?= 2

test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The long fuzzing runs (tests/fuzz/, docs/reliability.md): each target for FUZZ_SECONDS,
# out of process; `make test` runs the same fuzzers for 12 s each.
FUZZ_SECONDS ?= 600

fuzz: $(STAMP)
	RELAYLENS_FUZZ_SECONDS=$(FUZZ_SECONDS) $(PY) -m pytest -m fuzz tests/test_fuzz.py -q -s

# The demo: a small CNN (examples/small_cnn.onnx, written by examples/make_model.py) is
# imported with every expression naming its ONNX node (weights in small_cnn.npz), built with
# those weights bound as constants as relay.build(mod, params) binds them (the .npz beside
# the .relay is found; artefacts in $(DEMO)), run compiled and checked against the
# interpreter and onnxruntime, and one layer is followed from its ONNX node to its LLVM
# function in $(DEMO)/module.ll.
DEMO ?= build/demo

demo: $(STAMP)
	@mkdir -p $(DEMO)
	$(VENV)/bin/relaylens import examples/small_cnn.onnx --shape input=1,1,28,28 -o $(DEMO)/small_cnn.relay --force
	$(VENV)/bin/relaylens build $(DEMO)/small_cnn.relay -o $(DEMO)
	$(VENV)/bin/relaylens run $(DEMO)/small_cnn.relay --params $(DEMO)/small_cnn.npz \
	    --input input=examples/digit.npy --check -o $(DEMO)/logits.npz --force
	$(PY) examples/demo.py compare examples/small_cnn.onnx examples/digit.npy $(DEMO)/logits.npz
	$(VENV)/bin/relaylens explain $$($(PY) examples/demo.py where $(DEMO)/small_cnn.relay /conv2/Conv)

bench: $(STAMP)
	$(PY) bench/parse.py
	$(PY) bench/typecheck.py
	$(PY) bench/passes.py
	$(PY) bench/build.py
	$(PY) bench/run.py

# The VS Code extension, packaged offline: vscode-client/dist/relaylens.vsix (npm ci first
# when vscode-client/node_modules is missing or older than its package-lock.json).
vsix:
	vscode-client/scripts/vsix.sh

clean:
	rm -rf $(VENV) build *.egg-info
