# tiny-mlp-bench torch image: scripts/make_dataset.py, train.py (torch, numpy, sklearn, jax),
# probe_fixed_costs.py, sweep_crossover.py and render_report.py with the tiny_mlp_bench package;
# `python` = /opt/venv/bin/python.
# Build from the repository root:
#   podman build -f docker/torch.Dockerfile -t ghcr.io/tiny-mlp-bench/torch:0.2.0 \
#     --secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt .
# FLAVOR=cuda (default): exactly requirements/torch-cuda.txt, the image's own lock (`make
# lock-cuda`): torch==2.13.0 from PyPI, the CUDA 13 build, with its nvidia-* wheels, JAX's
# CUDA 13 plugin for the jax steps and numba's CUDA target (numba-cuda, with NVVM) for the numpy
# fused rung's kernel, every wheel checked against its hash. FLAVOR=cpu: the names in
# docker/torch.requirements.txt at requirements/runtime.txt's versions; pip also reads
# wheelhouse/cpu/, where `make images FLAVOR=cpu` puts the torch-2.13.0+cpu wheel, and takes it
# (a local version sorts higher). The build fails unless torch is the FLAVOR's build.
# --build-arg PIP_NO_INDEX=1 installs from wheelhouse/ alone (offline).
#
# Default base: python:3.11.14-slim-bookworm by the digest of its multi-arch index, as pinned in
# public Dockerfiles on GitHub (not checked against docker.io from the machine that wrote
# this). Any Debian base with python3.11 and venv works, e.g. docker/base-image.sh's:
#   --build-arg BASE_IMAGE=localhost/tiny-mlp-bench/base:bookworm
ARG BASE_IMAGE=docker.io/library/python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d

# wheelhouse/ (local wheels; may hold only .gitkeep) and a checksum list of it. The list, copied
# below, keys the pip layer's cache on the wheels: buildah 1.28 (podman 4.3) leaves the content
# of RUN --mount sources out of its cache keys, so a changed wheelhouse/ would go unnoticed.
FROM ${BASE_IMAGE} AS wheelhouse
WORKDIR /wheelhouse
COPY wheelhouse/ ./
RUN find . -type f -exec sha256sum {} + >/tmp/sums && LC_ALL=C sort -k 2 /tmp/sums >/wheelhouse.sha256

FROM ${BASE_IMAGE}

# torch.compile (the "compiled" and "*_epoch" variants) builds kernels at run time: C++ with g++ on CPU, Triton's
# launcher with gcc and Python.h on CUDA. git lets a run record name the commit it ran, also
# from a workspace owned by another uid (safe.directory).
# Only what the base lacks is installed. DL3008: Debian stable's versions move with point
# releases; the base's digest is the pin.
# hadolint ignore=DL3008
RUN set -eu; set --; \
    command -v g++ >/dev/null || set -- "$@" g++; \
    command -v git >/dev/null || set -- "$@" git; \
    [ -f "$(python3 -c 'import sysconfig; print(sysconfig.get_path("include"))')/Python.h" ] || set -- "$@" libpython3-dev; \
    if [ $# -gt 0 ]; then \
        apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" \
        && apt-get clean && rm -rf /var/lib/apt/lists/*; \
    fi; \
    git config --system --add safe.directory '*'

ARG PIP_NO_INDEX=0
ARG FLAVOR=cuda
ENV PATH=/opt/venv/bin:$PATH
# Copied, not bind-mounted, so that a changed lock or list reinstalls (see the wheelhouse stage).
COPY requirements/runtime.txt requirements/torch-cuda.txt docker/torch.requirements.txt /opt/tiny-mlp-bench/requirements/
COPY --from=wheelhouse /wheelhouse.sha256 /opt/tiny-mlp-bench/requirements/
# The proxy's CA, when passed as a build secret, is read from /run/secrets and never stored in a
# layer; pip's cache is a cache mount, kept between builds and out of the image.
RUN --mount=type=secret,id=ca_bundle \
    --mount=type=bind,from=wheelhouse,source=/wheelhouse,target=/wheelhouse \
    --mount=type=cache,target=/root/.cache/pip,sharing=locked \
    set -eu; \
    python3 -m venv /opt/venv; \
    if [ -s /run/secrets/ca_bundle ]; then export PIP_CERT=/run/secrets/ca_bundle; fi; \
    case "$PIP_NO_INDEX" in 1 | true | yes) export PIP_NO_INDEX=1 ;; *) unset PIP_NO_INDEX ;; esac; \
    req=/opt/tiny-mlp-bench/requirements; \
    case "$FLAVOR" in cpu | cuda) ;; *) echo "ERROR: FLAVOR must be cuda or cpu, not '$FLAVOR'" >&2; exit 1 ;; esac; \
    { if [ "$FLAVOR" = cuda ]; then \
          pip install --find-links /wheelhouse --no-deps --require-hashes -r "$req/torch-cuda.txt"; \
      else \
          pip install --find-links /wheelhouse --find-links /wheelhouse/cpu -c "$req/runtime.txt" -r "$req/torch.requirements.txt"; \
      fi && pip check; } || { \
        echo "ERROR: pip could not install the image's packages (pip's error is above)." \
            "Behind a TLS-inspecting proxy, pass the proxy's CA bundle as a build secret:" \
            "--secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt." \
            "Without network access, fill wheelhouse/ at the repository root on a connected Linux x86_64" \
            "machine with Python 3.11" \
            "(FLAVOR=cuda: pip download -d wheelhouse --no-deps --require-hashes -r requirements/torch-cuda.txt;" \
            "FLAVOR=cpu: put the torch-2.13.0+cpu wheel into wheelhouse/cpu/, then" \
            "pip download -d wheelhouse --find-links wheelhouse/cpu -c requirements/runtime.txt -r docker/torch.requirements.txt)" \
            "and build with --build-arg PIP_NO_INDEX=1." >&2; \
        exit 1; }; \
    python -c 'import os, sys, torch; f = os.environ["FLAVOR"]; v = torch.__version__; \
        built = "cuda" if torch.version.cuda else "cpu"; print("torch", v, "CUDA", torch.version.cuda); \
        sys.exit(f != built and f"ERROR: FLAVOR={f}, but pip installed torch {v}, a {built} build." \
            " The CPU build comes from a torch-*+cpu wheel in wheelhouse/cpu/ (read with FLAVOR=cpu)," \
            " the CUDA build from PyPI; a +cpu wheel in wheelhouse/ itself is read by both." or None)'

RUN useradd --uid 1000 --user-group --no-create-home --home-dir /tmp --shell /bin/bash bench
# The image's own copy of the programs, which import tiny_mlp_bench from PYTHONPATH: a workflow's step
# runs the mounted workspace's copy, its folder on the PYTHONPATH the step forwards (not set here: an
# image's value would hide Apptainer's host one); by hand, PYTHONPATH=/opt/tiny-mlp-bench runs this one.
COPY scripts/ /opt/tiny-mlp-bench/scripts/
COPY tiny_mlp_bench/ /opt/tiny-mlp-bench/tiny_mlp_bench/
WORKDIR /opt/tiny-mlp-bench
# HOME=/tmp: the workflow runs the image as the host's uid (--user), which may have no home, and
# torch.compile and matplotlib write caches under it. No bytecode in a mounted workspace.
ENV HOME=/tmp PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# Numeric, so that a runtime can tell it is not root without reading /etc/passwd.
USER 1000:1000

# Last, so a new revision rebuilds nothing above.
# One ARG a line: with several on one, buildah 1.28 warns the later ones were "not consumed".
ARG BASE_IMAGE
ARG VERSION=0.2.0
ARG REVISION=unknown
ARG SOURCE=https://github.com/tiny-mlp-bench/tiny-mlp-bench
LABEL org.opencontainers.image.title="tiny-mlp-bench torch" \
      org.opencontainers.image.description="PyTorch, NumPy, scikit-learn, JAX and Keras-on-JAX/PyTorch training steps of the tiny-mlp-bench workflow" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"
