# ONNX Inspector: `make run` opens the app on the sample export, `make test` runs the whole suite.
# Both install whatever is missing first (system packages via apt-get, a virtualenv in .venv).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SAMPLE := resources/samples/sample_export.onnx
# Graphviz with headers (pygraphviz builds against them), Qt's runtime libraries, a C compiler.
SYS_PKGS := graphviz libgraphviz-dev pkg-config gcc libegl1 libgl1 libxkbcommon0 libfontconfig1 \
	libdbus-1-3 libglib2.0-0
# Extra libraries Qt's xcb platform loads when a real window opens.
GUI_PKGS := libxcb-cursor0 libxkbcommon-x11-0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 \
	libxcb-randr0 libxcb-render-util0 libxcb-image0 libxcb-xinerama0 libxcb-xkb1
SHOT_PKGS := xvfb xauth chromium fonts-dejavu-core

.PHONY: run test lint pytest sysdeps venv screenshots bench bench-modules fuzz fixtures schemas zoo torchlib evidence \
	clean

run: venv
	@scripts/sysdeps.sh $(GUI_PKGS)
	$(VENV)/bin/onnx-inspector $(SAMPLE)

test: venv lint pytest

pytest: venv
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider

lint: venv
	$(VENV)/bin/ruff check inspector tests benchmarks scripts resources
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy benchmarks/bench.py benchmarks/replicate.py benchmarks/gen_large.py benchmarks/bench_modules.py
	$(VENV)/bin/lint-imports

sysdeps:
	@scripts/sysdeps.sh $(SYS_PKGS)
	@$(PYTHON) -c "import sysconfig,os,sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'],'Python.h')))" \
		|| scripts/sysdeps.sh python3-dev

venv: $(STAMP)

$(STAMP): pyproject.toml | sysdeps
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { scripts/sysdeps.sh python3-venv && rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q -e ".[gui,graph,runtime,dev]"
	@touch $(STAMP)

screenshots: venv
	@scripts/sysdeps.sh $(GUI_PKGS) $(SHOT_PKGS)
	$(PY) scripts/screenshots.py --out screenshots

REPEAT ?= 5
bench: venv
	$(PY) benchmarks/bench.py --repeat $(REPEAT) $(if $(SIZES),--sizes $(SIZES))

# fold --modules on the 100k replica: fold time / onnx.load, model size and onnxruntime session creation before/after
bench-modules: venv
	$(PY) benchmarks/bench_modules.py --repeat 3

# A long fuzz campaign (make test runs a few hundred cases of each): binary exports, then ONNX text syntax
FUZZ_CASES ?= 5000
fuzz: venv
	$(PY) scripts/fuzz.py --cases $(FUZZ_CASES)
	$(PY) scripts/fuzz.py --cases $(FUZZ_CASES) --text

fixtures: venv
	$(PY) tests/make_fixtures.py

schemas: venv
	$(PY) scripts/gen_aten_schemas.py

# The zoo of real exports under tests/zoo (see tests/zoo/README.md): needs torch and transformers, so it runs in
# its own virtualenv; `make test` never needs it.
ZOO_VENV := .venv-zoo
ZOO_PKGS := torch==2.13.0 onnxscript transformers onnx onnxruntime

$(ZOO_VENV)/.installed:
	@test -x $(ZOO_VENV)/bin/python || $(PYTHON) -m venv $(ZOO_VENV) || { scripts/sysdeps.sh python3-venv && rm -rf $(ZOO_VENV) && $(PYTHON) -m venv $(ZOO_VENV); }
	$(ZOO_VENV)/bin/pip install -q $(ZOO_PKGS)
	@touch $@

zoo: $(ZOO_VENV)/.installed
	$(ZOO_VENV)/bin/python scripts/gen_zoo.py

# resources/torchlib_functions.txt from onnxscript's torchlib registry (in .venv-zoo); `make test` never runs it.
torchlib: $(ZOO_VENV)/.installed
	$(ZOO_VENV)/bin/python scripts/gen_torchlib.py

# resources/aten_evidence.txt, evidence_coverage.md and aten_templates.txt, learned from one-op exports (in .venv-zoo; about
# 10 s per overload on 2 shared cores, resumable: results are kept in build/evidence); `make test` never runs it.
# EVIDENCE_ARGS="--budget 600" or "--only aten::roll --redo" or "--pairs" (the test pairs of tests/evidence).
EVIDENCE_ARGS ?= --budget 3600
evidence: $(ZOO_VENV)/.installed
	@# a segfault in torch ends the run: it resumes, and the overload that crashed is recorded as such
	for try in 1 2 3 4 5 6 7 8 9 10; do $(ZOO_VENV)/bin/python scripts/gen_evidence.py $(EVIDENCE_ARGS) && break; done
	@# the body template catalogue, from the same exports (no torch needed)
	$(ZOO_VENV)/bin/python scripts/gen_templates.py

clean:
	rm -rf $(VENV) $(ZOO_VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache benchmarks/_generated screenshots
