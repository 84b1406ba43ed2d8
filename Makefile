# tiny-mlp-bench: the targets (`make` or `make help` prints this list). They run the project's one
# program, `tiny-mlp-bench` in .venv (`python -m tiny_mlp_bench --help` lists its commands).
#   make run              set up .venv and run the study with config/config.yaml -> results/report.md
#   make quick            the whole pipeline on a few epochs (config/quick.yaml) in quick/ -> quick/results/report.md
#   make busy             the question's loops idle and beside one busy core (config/busy.yaml) in busy/
#   make era              the question's CPU loops on every software stack, today's to 2021's (config/era.yaml) in era/
#   make era-sweep        Keras 2 on each TensorFlow release, 2.5 to 2.20, and the cause rungs (config/era-sweep.yaml)
#   make test             set up .venv with the test tools; run the lints and the whole test suite
#   make test-fast        the lints and the fast tests (no real workflow, cluster, container or network)
#   make lint             the lints alone: ruff, snakefmt, snakemake --lint, hadolint
#   make compare ARCHIVE=results/archive/<name>   this study's records against an archived study's
#   make archive          pack the finished study into results/archive/ (ARCHIVE_ARGS="--name NAME")
#   make verify           check every archive (ARCHIVE=<one> for one)
#   make docs             every generated passage below but the kit table, from its source
#   make rung-table       the README's table of rungs, from the catalogue
#   make config-table     config/config.yaml and docs/running.md's table of keys, from the config schema
#   make method-numbers   docs/method.md's A/A control and intervals, from the archive it names
#   make findings         the README's answer, claims across the studies and era answers, from the archives
#   make images           the container images (docker/) with Podman or Docker (ENGINE=, FLAVOR=cpu);
#                         image-torch, image-keras one of them; torch-cpu-wheel the CPU torch they use
#   make stack-images     the era study's stack images (docker/stack.Dockerfile), on debootstrapped Debian bases;
#                         era-images those and today's CPU images on Debian 12's base, as make era builds them
#                         release-images the release sweep's TensorFlow images, as make era-sweep builds them
#   make gpu-kit          what scripts/gpu_study.py installs on a GPU machine without a registry
#   make kit-table        docs/gpu-kit.md's table of that kit, from it
#   make lock, lock-cuda, lock-gpu-kit   resolve the locks in requirements/ again
#   make clean            remove the study's outputs (results/archive/ stays), quick/, busy/, era/ and era-sweep/
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Rules call `python` and tests call `snakemake`: both must be the environment's.
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: help run quick busy era era-sweep era-images release-images test test-fast docs rung-table config-table method-numbers findings lint lock lock-cuda lock-gpu-kit gpu-kit kit-table clean images image-torch image-keras stack-images torch-cpu-wheel compare archive verify

# A bare `make` prints the targets: starting a study is `make run`.
.DEFAULT_GOAL := help
help:
	@sed -n '1,/^[^#]/s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

run: $(BIN)/.runtime-installed
	snakemake --cores all

# The quick study in a folder of its own: its results, logs and Snakemake state never touch the
# default study's, and it quotes no archive (quick/ has none). Its numbers answer nothing.
quick: $(BIN)/.runtime-installed
	snakemake --cores all --directory quick --configfile config/quick.yaml

# The era study (config/era.yaml) in era/: first the images of its stacks and today's CPU images (built once, timed
# apart from the study), then the study. Archive it with: make archive ARCHIVE_ARGS="--study era"
era: $(BIN)/.runtime-installed
	/usr/bin/time -f "era images: %e s" $(MAKE) --no-print-directory era-images
	mkdir -p era/results && ln -sfn ../../results/archive era/results/archive
	snakemake --cores all --directory era --configfile config/era.yaml

# The release sweep (config/era-sweep.yaml) in era-sweep/: Keras 2 on each TensorFlow release's image and the cause rungs
# on today's stack. Archive it with: make archive ARCHIVE_ARGS="--study era-sweep"
era-sweep: $(BIN)/.runtime-installed
	/usr/bin/time -f "release images: %e s" $(MAKE) --no-print-directory release-images
	mkdir -p era-sweep/results && ln -sfn ../../results/archive era-sweep/results/archive
	snakemake --cores all --directory era-sweep --configfile config/era-sweep.yaml

# The busy-core study (config/busy.yaml) in busy/, apart from the default study's results and logs; the project's
# archives are linked in, so that it says its expected time. Archive it with: make archive ARCHIVE_ARGS="--study busy"
busy: $(BIN)/.runtime-installed
	mkdir -p busy/results && ln -sfn ../../results/archive busy/results/archive
	snakemake --cores all --directory busy --configfile config/busy.yaml

# Every test, then the slowest named (a test too slow for test-fast gets a marker: docs/development.md). Most run on
# every core (pytest-xdist), a file's tests on one worker, so that a module's costly fixture is built once; those held
# to a time limit, and those that share one Slurm cluster or one image store, run after them, one at a time.
TEST_WORKERS ?= auto
PARALLEL_TESTS := not alone and not containers and not slurm
test: $(BIN)/.dev-installed lint
	pytest -m "$(PARALLEL_TESTS)" -n $(TEST_WORKERS) --dist loadfile --durations=20
	pytest -m "not ($(PARALLEL_TESTS))" --durations=10

# While working: the tests that need no real Snakemake study, cluster, container, network or long
# compilation (the markers in pyproject.toml).
# They are independent, so they run on every core (TEST_WORKERS=0 runs them in one process).
FAST_TESTS := not slow and not workflow and not network and not containers and not slurm
test-fast: $(BIN)/.dev-installed lint
	pytest -m "$(FAST_TESTS)" -n $(TEST_WORKERS) --durations=10

docs: $(BIN)/.runtime-installed
	python -m tiny_mlp_bench docs

rung-table: $(BIN)/.runtime-installed
	python -m tiny_mlp_bench docs rung-table

config-table: $(BIN)/.runtime-installed
	python -m tiny_mlp_bench docs config-table

method-numbers: $(BIN)/.runtime-installed
	python -m tiny_mlp_bench docs method-numbers

findings: $(BIN)/.runtime-installed
	python -m tiny_mlp_bench docs findings

# This study's records against an archived study's, per rung: make compare ARCHIVE=results/archive/<name>
compare: $(BIN)/.runtime-installed
	@test -n "$(ARCHIVE)" || { echo "error: say which archive: make compare ARCHIVE=results/archive/<name>" >&2; exit 2; }
	python -m tiny_mlp_bench compare $(ARCHIVE)/runs

# Pack the finished study (results/, logs/) into results/archive/<date>-<gpu model or host>/, sealed
# with provenance, RO-Crate metadata and a SHA-256 manifest. ARCHIVE_ARGS="--name NAME --allow-modified".
archive: $(BIN)/.runtime-installed
	python -m tiny_mlp_bench archive $(ARCHIVE_ARGS)

# Check each archive's manifest, render its report again with the code it packed and compare (ARCHIVE= for one).
verify: $(BIN)/.runtime-installed
	python -m tiny_mlp_bench verify $(ARCHIVE)

lint: $(BIN)/.dev-installed
	ruff check .
	ruff format --check .
	snakefmt --check .
	snakemake --lint
	hadolint docker/*.Dockerfile

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "error: $(PYTHON) is older than 3.11; set PYTHON=python3.11 (or newer)" >&2; exit 1; }
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
		rm -rf $(VENV); \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "$(PYTHON) has no venv module: installing Debian's python3-venv" >&2; \
			apt-get update -qq && apt-get install -y -qq python3-venv && $(PYTHON) -m venv $(VENV); \
		else \
			echo "error: $(PYTHON) cannot make a virtual environment; install it with: sudo apt-get install python3-venv" >&2; \
			exit 1; \
		fi; }

# The locked packages, then tiny_mlp_bench itself, editable: the code here is the code that runs.
# setuptools, its build backend, is in the lock, so nothing is fetched to build it.
$(BIN)/.runtime-installed: requirements/runtime.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements/runtime.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation --editable .
	touch $@

$(BIN)/.dev-installed: requirements/dev.txt $(BIN)/.runtime-installed
	$(BIN)/pip install --quiet -r requirements/dev.txt
	touch $@

# Re-resolve the pinned files from the .in files in a throwaway environment.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet -r requirements/runtime.in
	{ echo "# Generated by 'make lock' from runtime.in: exact pins of everything installed."; \
	  .lock-venv/bin/pip freeze --all --exclude pip --exclude wheel --exclude-editable | sed 's/^torch==\([0-9.]*\)+cpu$$/torch==\1/'; } > requirements/runtime.txt
	.lock-venv/bin/pip install --quiet -r requirements/dev.in
	{ echo "# Generated by 'make lock' from dev.in: exact pins of what the test tools add."; \
	  .lock-venv/bin/pip freeze --all --exclude pip --exclude wheel --exclude-editable | sed 's/^torch==\([0-9.]*\)+cpu$$/torch==\1/' \
	  | grep -vxFf requirements/runtime.txt; } > requirements/dev.txt
	rm -rf .lock-venv

# Re-resolve the CUDA images' own locks (requirements/torch-cuda.txt, keras-cuda.txt) and the GPU
# kit's (requirements/gpu-kit.txt) on PyPI, at runtime.txt's versions: run them after `make lock`.
# pip's configured index-url (a mirror of PyPI) replaces PyPI where it is set; its find-links never count.
lock-cuda: | $(BIN)/python
	$(BIN)/python -m tiny_mlp_bench locks lock torch-cuda keras-cuda

lock-gpu-kit: | $(BIN)/python
	$(BIN)/python -m tiny_mlp_bench locks lock gpu-kit

# The GPU kit: the wheels a GPU machine without a registry lacks, into wheelhouse/gpu-kit/. Copy it
# there with the repository, then run: python3 scripts/gpu_study.py. Set the machine's Python
# (KIT_PYTHON=3.11) or what it already has (KIT_PRESENT=my-node.txt, as requirements/gpu-present.txt
# is written) and the kit is resolved on PyPI (or pip's index-url) for them; the defaults use the
# committed gpu-kit.txt.
# A kit past KIT_MAX_MIB MiB is an error (it is left in place): it likely carries a large package
# the machine has, which the present file should list; else raise the cap.
KIT_PYTHON ?= 3.12
KIT_PRESENT ?= requirements/gpu-present.txt
KIT_MAX_MIB ?= 64
gpu-kit: | $(BIN)/python
	$(BIN)/python -m tiny_mlp_bench locks fetch-kit --python $(KIT_PYTHON) --present $(KIT_PRESENT) --max-mib $(KIT_MAX_MIB)

# docs/gpu-kit.md's table of the committed kit's wheels and sizes, from wheelhouse/gpu-kit/ as `make gpu-kit` fetches it.
kit-table: | $(BIN)/python
	$(BIN)/python -m tiny_mlp_bench locks kit-table

# Container images: FLAVOR=cuda (default) takes PyPI's CUDA builds of torch and TensorFlow;
# FLAVOR=cpu takes CPU builds and tags them <version>-cpu (what CI builds and tests). Podman is
# used when installed, else Docker (ENGINE=docker). Extra flags go in BUILD_ARGS, e.g.
# BUILD_ARGS="--build-arg BASE_IMAGE=localhost/tiny-mlp-bench/base:bookworm" (docker/base-image.sh,
# which debootstraps from the Debian mirror apt uses here, or DEBIAN_MIRROR).
ENGINE ?= $(if $(shell command -v podman),podman,docker)
# Docker builds with BuildKit (the Dockerfiles use RUN --mount and build secrets) through the
# client in DOCKER. Clients from Docker 23 on hand BuildKit to the buildx plugin, which Debian 12
# does not package: where it is missing, point DOCKER at a client that builds without it, such as
# Debian's docker.io 20.10 (DOCKER=/usr/bin/docker).
DOCKER ?= docker
BUILD = $(if $(filter docker,$(ENGINE)),DOCKER_BUILDKIT=1 $(DOCKER),$(ENGINE)) build
FLAVOR ?= cuda
VERSION := $(shell cat VERSION)
IMAGE_PREFIX ?= ghcr.io/tiny-mlp-bench
IMAGE_TAG := $(VERSION)$(if $(filter cpu,$(FLAVOR)),-cpu)
# Behind a TLS-inspecting proxy the build needs the host's CA bundle: passed as a build secret,
# it never lands in a layer.
CA_BUNDLE ?= $(firstword $(wildcard /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt))
TORCH_VERSION := $(shell sed -n 's/^torch==//p' requirements/runtime.txt)
comma := ,

images: image-torch image-keras

image-torch: $(if $(filter cpu,$(FLAVOR)),torch-cpu-wheel)
image-torch image-keras: image-%:
	@case "$(FLAVOR)" in cpu | cuda) ;; *) echo "error: FLAVOR must be cuda or cpu, not '$(FLAVOR)'" >&2; exit 2;; esac
	@command -v $(ENGINE) >/dev/null || { echo "error: no '$(ENGINE)' on PATH: install Podman (apt-get install podman) or Docker, or name yours with ENGINE=" >&2; exit 2; }
	@[ "$(ENGINE)" != docker ] || [ "$$($(DOCKER) version --format '{{.Client.Version}}' 2>/dev/null | cut -d. -f1)" -lt 23 ] \
		|| $(DOCKER) buildx version >/dev/null 2>&1 || { echo "error: $(DOCKER) (Docker client $$($(DOCKER) version --format '{{.Client.Version}}' 2>/dev/null)) builds with BuildKit only through the buildx plugin, which is not installed: install docker-buildx, or use a client that builds without it, e.g. Debian's docker.io: make images ENGINE=docker DOCKER=/usr/bin/docker" >&2; exit 2; }
	$(BUILD) -f docker/$*.Dockerfile -t $(IMAGE_PREFIX)/$*:$(IMAGE_TAG) \
		--build-arg FLAVOR=$(FLAVOR) --build-arg VERSION=$(VERSION) \
		--build-arg REVISION=$$(git rev-parse HEAD 2>/dev/null || echo unknown) \
		$(if $(CA_BUNDLE),--secret id=ca_bundle$(comma)src=$(CA_BUNDLE)) $(BUILD_ARGS) .

# The era study's stacks (docker/stack.Dockerfile): each of requirements/<lock>.txt on a base image
# that docker/base-image.sh debootstraps from its Debian release (made once, then reused). Today's CPU
# images for the era study on the Debian 12 base the newest-311 stack has, so that the two differ in
# their libraries alone.
STACK_LOCKS := era newest-39 newest-311
era-images: stack-images
	$(MAKE) --no-print-directory images FLAVOR=cpu \
		BUILD_ARGS="--build-arg BASE_IMAGE=localhost/tiny-mlp-bench/base:bookworm $(BUILD_ARGS)"
stack-images: $(addprefix image-stack-,$(STACK_LOCKS))
# The release sweep's images: one TensorFlow release each, without torch (tiny_mlp_bench/locks/wheels.py).
RELEASE_LOCKS := tf-2.5 tf-2.6 tf-2.8 tf-2.9 tf-2.11 tf-2.15 tf-2.16 tf-2.20
release-images: $(addprefix image-stack-,$(RELEASE_LOCKS))
image-stack-era image-stack-newest-39 $(addprefix image-stack-,$(RELEASE_LOCKS)): SUITE := bullseye
image-stack-newest-311: SUITE := bookworm
image-stack-%:
	bash docker/base-image.sh --engine $(ENGINE) --suite $(SUITE)
	$(BUILD) -f docker/stack.Dockerfile -t $(IMAGE_PREFIX)/$*:$(VERSION) $(BUILD_ARGS) \
		--build-arg LOCK=$* --build-arg BASE_IMAGE=localhost/tiny-mlp-bench/base:$(SUITE) --build-arg VERSION=$(VERSION) \
		--build-arg REVISION=$$(git rev-parse HEAD 2>/dev/null || echo unknown) \
		$(if $(CA_BUNDLE),--secret id=ca_bundle$(comma)src=$(CA_BUNDLE)) .

# PyPI's Linux torch is the CUDA build; the CPU build comes from PyTorch's own CPU index (or from
# pip's find-links, where a machine keeps it on disk) into wheelhouse/cpu/, which only
# FLAVOR=cpu builds read. Behind an organisation's mirror of that index: TORCH_CPU_INDEX=<its URL>.
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
torch-cpu-wheel: | $(BIN)/python
	@ls wheelhouse/cpu/torch-$(TORCH_VERSION)+cpu-*.whl >/dev/null 2>&1 || \
		$(BIN)/python -m pip download --no-deps --only-binary=:all: --python-version 3.11 \
			--platform manylinux_2_28_x86_64 --index-url $(TORCH_CPU_INDEX) \
			-d wheelhouse/cpu torch==$(TORCH_VERSION)+cpu

# The study's outputs, not the archived studies in results/archive/.
clean:
	find results -mindepth 1 -maxdepth 1 ! -name archive -exec rm -rf {} + 2>/dev/null || true
	rm -rf logs .snakemake quick busy era era-sweep
