# mlpl_lab: two commands.  `make test` and `make report` set everything up themselves.
# (`make test` is the fast tier; `make test-all`, what CI runs, is the whole suite)
PYTHON ?= python3.11
VENV ?= .venv
# The torch pair is configurable: on our machines this exact pair comes from local wheels.
TORCH_SPEC ?= torch==2.14.1 torchvision==0.29.1
# A machine without an NVIDIA driver needs no CUDA libraries. TORCH=auto (the default) takes the CPU
# build of the pinned torch (<version>+cpu) when there is no nvidia-smi and the configured index
# (plus TORCH_INDEX, e.g. https://download.pytorch.org/whl/cpu) offers it; TORCH=cpu takes
# TORCH_CPU_SPEC from there. This machine's registry has no CPU build of the pinned pair: its one CPU
# torch (2.13.0+cpu) has no CPU torchvision beside it, and with 0.28.0 torchvision does not import
# (benchmarks/records/setup_env_cpu.json), so TORCH=auto keeps the pinned pair here.
TORCH ?= auto
TORCH_INDEX ?=
TORCH_CPU_SPEC ?= torch==2.14.1+cpu torchvision==0.29.1+cpu
PIP_INDEX := $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
PROFILE ?= cpu
REPORT_DIR ?= reports
# the instructor's report (solutions run, every check states its reference answer) and its book
INSTRUCTOR_DIR ?= $(REPORT_DIR)/instructor
# the copies JupyterLab opens: $(LAB_DIR)/student (make lab), $(LAB_DIR)/instructor (make lab-instructor)
LAB_DIR ?= lab
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test test-all test-durations test-browser test-gpu test-gpu-shape bench-gpu-shape report report-instructor setup clean clean-runs benchmark bench-workers bench-series student book gpu-kit gpu-rehearse test-compat lab lab-instructor

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	@spec='$(TORCH_SPEC)'; pt=$$(echo "$$spec" | sed -n 's/.*torch==\([^ ]*\).*/\1/p'); \
	pv=$$(echo "$$spec" | sed -n 's/.*torchvision==\([^ ]*\).*/\1/p'); \
	if [ '$(TORCH)' = cpu ]; then spec='$(TORCH_CPU_SPEC)'; \
	elif [ '$(TORCH)' = auto ] && ! command -v nvidia-smi >/dev/null 2>&1 && \
	     $(BIN)/python -m pip index versions torch $(PIP_INDEX) 2>/dev/null | grep -qF "$$pt+cpu" && \
	     $(BIN)/python -m pip index versions torchvision $(PIP_INDEX) 2>/dev/null | grep -qF "$$pv+cpu"; then \
	  spec="torch==$$pt+cpu torchvision==$$pv+cpu"; fi; \
	echo "torch: $$spec"; echo "$$spec" > $(VENV)/.torch-spec; \
	$(BIN)/python -m pip install -q $(PIP_INDEX) $$spec && \
	$(BIN)/python -m pip install -q $(PIP_INDEX) -e '.[dev]' $$spec
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (mlpl_lab)" >/dev/null
	touch $(STAMP)

setup: $(STAMP)

# the fast tier (<= 10 min on 2 cores): every test but the smoke notebooks, the slow ones (marker
# slow), the browser and the GPU, plus one smoke notebook (01, marker smoke); 2 single-thread workers
FAST_MARKERS := (not notebook or smoke) and not slow and not browser and not gpu and not compat
FAST_TIER := -m '$(FAST_MARKERS)'
XDIST := -n 2 --dist loadfile

test: $(STAMP)
	$(BIN)/python -m pytest -q $(XDIST) $(FAST_TIER) $(PYTEST_ARGS)

# the whole suite (every smoke notebook included; what CI runs): the notebooks on one worker
test-all: $(STAMP)
	$(BIN)/python -m pytest -q $(XDIST) $(PYTEST_ARGS)

# a full run's per-test durations (pytest --durations=0), recorded in benchmarks/records/test_durations.json
# (TIER=fast: make test's, in test_durations_fast.json, which the tree does not keep: the whole
# suite's record marks each fast-tier test and sums their seconds)
test-durations: $(STAMP)
	$(BIN)/python benchmarks/test_durations.py --tier $(or $(TIER),all) $(PYTEST_ARGS)

# JupyterLab + Debian's Chromium (apt-get install -y chromium; never `playwright install`)
test-browser: $(STAMP)
	$(BIN)/python -m pytest -q -s -m browser tests/browser $(PYTEST_ARGS)

# every notebook under the gpu profile, asserting on the records; refuses to start without CUDA
test-gpu: $(STAMP)
	@$(BIN)/python tests/gpu/require_cuda.py
	$(BIN)/python -m pytest -q -m gpu tests/gpu $(PYTEST_ARGS)

# the GPU check's offline kit (.gpu-kit/: py3.12 wheels the GPU image lacks + the lab's
# wheel; says its size, fails past 64 MiB with the tree), and benchmarks/gpu/check.sh rehearsed on
# the CPU in a stand-in image (.gpu-image-venv/: Python 3.12, torch 2.11, from the registry).
# On a GPU machine with the tree and .gpu-kit/: `bash benchmarks/gpu/check.sh` (offline, <= 9 min)
gpu-kit:
	benchmarks/gpu/build_kit.sh

# (the rehearsal carries nothing to a GPU machine: the kit's 64 MiB budget is reported, not enforced)
gpu-rehearse:
	KIT_BUDGET=warn benchmarks/gpu/build_kit.sh
	benchmarks/gpu/check.sh --rehearse

# the fast tier (make test's selection) and the shipped cpu pack served with 0 trainings
# (marker compat), in a second environment: Python 3.12 with torch 2.11 (the GPU image's pair);
# COMPAT_TORCH picks another pair, COMPAT_VENV another folder. Not in CI (time): run it by hand
COMPAT_VENV ?= .venv-compat
COMPAT_TORCH ?= torch==2.11.0 torchvision==0.26.0
COMPAT_PYTHON ?= $(shell benchmarks/gpu/python312.sh)

$(COMPAT_VENV)/.installed: pyproject.toml
	rm -rf $(COMPAT_VENV)
	$(COMPAT_PYTHON) -m venv $(COMPAT_VENV)
	$(COMPAT_VENV)/bin/python -m pip install -q $(COMPAT_TORCH)
	$(COMPAT_VENV)/bin/python -m pip install -q '.[dev]' $(COMPAT_TORCH)
	$(COMPAT_VENV)/bin/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

test-compat: $(COMPAT_VENV)/.installed
	cd $(COMPAT_VENV) && bin/python -c 'import sys, torch; print("compat:", sys.version.split()[0], "torch", torch.__version__)'
	PYTHONPATH=$(CURDIR) $(COMPAT_VENV)/bin/python -m pytest -q -p no:cacheprovider $(XDIST) $(FAST_TIER) $(PYTEST_ARGS)
	PYTHONPATH=$(CURDIR) $(COMPAT_VENV)/bin/python -m pytest -q -p no:cacheprovider -s -m compat tests/test_compat_pack.py

# every notebook under the gpu_shape profile, on the CPU: the gpu profile's code paths (ResNet-18
# at 64 px, bfloat16 autocast, NHWC, every chapter's gpu design) at small sizes, asserting on the
# records; the executed notebooks (with their papermill durations) go to $(REPORT_DIR)/gpu_shape
test-gpu-shape: $(STAMP)
	MLPL_LAB_GPU_SHAPE=all MLPL_LAB_GPU_SHAPE_OUT=$(REPORT_DIR)/gpu_shape $(BIN)/python -m pytest -q tests/test_gpu_shape.py $(PYTEST_ARGS)

# the wall time of test-gpu-shape, recorded in benchmarks/records/gpu_shape_cpu.json (the README's figure)
bench-gpu-shape: $(STAMP)
	$(BIN)/python benchmarks/bench_gpu_shape.py

# the student's report: the student copies executed (solutions as stubs), so no exercise's reference
# answer is in its HTML. An empty store starts from the shipped course pack (data/packs/); COLD=1
# retrains every run
report: $(STAMP)
	$(BIN)/mlpl-lab report --profile $(PROFILE) --out $(REPORT_DIR) $(if $(COLD),--cold)

# the instructor's report in $(INSTRUCTOR_DIR): the notebooks with their solutions, every check
# stating its reference answer (it reads the runs the student's report served or trained)
report-instructor: $(STAMP)
	$(BIN)/mlpl-lab report --instructor --profile $(PROFILE) --out $(INSTRUCTOR_DIR)

# JupyterLab with the lab's kernel ("Python 3 (mlpl_lab)", the one make setup installs) on the
# student copies (make lab: solutions as stubs, no check states its reference answer) or the
# instructor's (make lab-instructor), generated first from notebooks/ into $(LAB_DIR)/; a copy changed
# since it was generated (a student's answers) is kept, never overwritten. As root (many course
# images run so) it adds --allow-root, which Jupyter asks for there. LAB_ARGS passes more options,
# e.g. LAB_ARGS='--no-browser --port 8890'
LAB_UID ?= $(shell id -u)
JUPYTER_LAB = $(BIN)/jupyter lab --MappingKernelManager.default_kernel_name=python3 $(if $(filter 0,$(LAB_UID)),--allow-root) $(LAB_ARGS)
lab: $(STAMP)
	$(BIN)/mlpl-lab course lab --variant student --out $(LAB_DIR)
	MLPL_LAB_ANSWERS=student $(JUPYTER_LAB) --notebook-dir=$(LAB_DIR)/student

lab-instructor: $(STAMP)
	$(BIN)/mlpl-lab course lab --variant instructor --out $(LAB_DIR)
	MLPL_LAB_ANSWERS=instructor $(JUPYTER_LAB) --notebook-dir=$(LAB_DIR)/instructor

# course material: student and instructor copies of the notebooks in dist/
student: $(STAMP)
	$(BIN)/mlpl-lab course sync --check
	$(BIN)/mlpl-lab course export --out dist

# the book under $(REPORT_DIR)/book: the student variant (book/student) from the student's report,
# the instructor variant (book/instructor, with the instructor guide) from the instructor's report
# (each report runs first when it is missing; the notebooks are never executed a second time)
book: $(STAMP)
	@test -f $(REPORT_DIR)/07_benchmark.ipynb || $(BIN)/mlpl-lab report --no-cold --profile $(PROFILE) --out $(REPORT_DIR)
	@test -f $(INSTRUCTOR_DIR)/07_benchmark.ipynb || $(BIN)/mlpl-lab report --instructor --no-cold --profile $(PROFILE) --out $(INSTRUCTOR_DIR)
	$(BIN)/mlpl-lab course book --executed $(REPORT_DIR) --instructor-executed $(INSTRUCTOR_DIR) --out $(REPORT_DIR)/book $(BOOK_ARGS)

benchmark: $(STAMP)
	$(BIN)/python benchmarks/bench_scenes.py
	$(BIN)/python benchmarks/bench_design.py  # design memory and time per profile (add --grid-data for the gpu grid's data path)
	$(BIN)/python benchmarks/bench_training.py
	$(BIN)/python benchmarks/bench_loop.py
	$(BIN)/python benchmarks/bench_heads.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_data_path.py  # fit's steps/s, cpu profile, one thread (records/data_path_cpu.json: "now"; before/after of issue 34 kept)
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_methods.py  # steps/s per method family (AN, LAC, PU-MLC + LgConv, CLS) and evaluation's share, one thread (records/methods_cpu.json: "now"; issue 51's before/after kept)
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_amp_cpu.py  # a ResNet-18 step in float32 vs bfloat16 autocast on this CPU, one thread (records/amp_cpu.json: why an AMP spec trains in float32 on a CPU without native bf16)
	$(BIN)/python benchmarks/bench_gpu.py  # the GPU targets; says so and skips without CUDA
	$(BIN)/python benchmarks/bench_report.py  # a warm smoke series: next kernel started ahead vs one by one
	$(BIN)/python benchmarks/bench_live.py  # each chapter's live exercise on 2 threads, <= 180 s (records/live_exercises_cpu.json)
	$(BIN)/python benchmarks/bench_setup_size.py  # the size of .venv (records/setup_env.json; the README line)
	$(BIN)/python benchmarks/bench_pack_serve.py --notebooks 02 03  # a notebook run outside make report on an empty store: the shipped pack, <= 3 min (records/pack_serve_cpu.json)
	$(BIN)/python -m pytest -q -s -m browser tests/browser/test_panels.py  # prints the panels' update latency

# 2 single-thread Dask workers vs 1 two-thread process on the smoke grid and 4 cpu runs (README)
bench-workers: $(STAMP)
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 MLPL_LAB_PROGRESS=0 $(BIN)/python benchmarks/bench_workers.py

# a series' plan on single-thread worker processes vs one process (smoke; records/bench_series_smoke.json);
# after a series: bench_series.py --breakdown --profile cpu (where its time went)
bench-series: $(STAMP)
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 MLPL_LAB_PROGRESS=0 $(BIN)/python benchmarks/bench_series.py --threads 1 2

clean-runs: $(STAMP)
	$(BIN)/mlpl-lab store --clear

# (not $(LAB_DIR): the copies students work in)
clean:
	rm -rf $(VENV) $(REPORT_DIR) dist data/cache data/runs
