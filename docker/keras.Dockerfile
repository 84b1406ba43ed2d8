# tiny-mlp-bench keras image: scripts/train.py --framework keras (Keras 3 on TensorFlow) and
# --framework tf_keras (Keras 2 on TensorFlow, the tf-keras package) with the tiny_mlp_bench
# package, and `python` = /opt/venv/bin/python. Build from the repository root:
#   podman build -f docker/keras.Dockerfile -t ghcr.io/tiny-mlp-bench/keras:0.2.0 \
#     --secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt .
# FLAVOR=cuda (default) installs exactly requirements/keras-cuda.txt, the image's own lock (`make
# lock-cuda`): tensorflow[and-cuda], with its CUDA 12 libraries as nvidia-* wheels, every wheel
# checked against its hash. FLAVOR=cpu installs plain tensorflow (CPU only in practice: no CUDA
# libraries) and the names in docker/keras.requirements.txt at requirements/runtime.txt's versions.
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

# git lets a run record name the commit it ran, also from a workspace owned by another uid
# (safe.directory); installed only when the base lacks it.
# DL3008: Debian stable's versions move with point releases; the base's digest is the pin.
# hadolint ignore=DL3008
RUN set -eu; if ! command -v git >/dev/null; then \
        apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git \
        && apt-get clean && rm -rf /var/lib/apt/lists/*; \
    fi; \
    git config --system --add safe.directory '*'

ARG PIP_NO_INDEX=0
ARG FLAVOR=cuda
ENV PATH=/opt/venv/bin:$PATH
# Copied, not bind-mounted, so that a changed lock or list reinstalls (see the wheelhouse stage).
COPY requirements/runtime.txt requirements/keras-cuda.txt docker/keras.requirements.txt /opt/tiny-mlp-bench/requirements/
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
          pip install --find-links /wheelhouse --no-deps --require-hashes -r "$req/keras-cuda.txt"; \
      else \
          pip install --find-links /wheelhouse --find-links /wheelhouse/cpu -c "$req/runtime.txt" -r "$req/keras.requirements.txt"; \
      fi && pip check; } || { \
        echo "ERROR: pip could not install the image's packages (pip's error is above)." \
            "Behind a TLS-inspecting proxy, pass the proxy's CA bundle as a build secret:" \
            "--secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt." \
            "Without network access, fill wheelhouse/ at the repository root on a connected Linux x86_64" \
            "machine with Python 3.11" \
            "(FLAVOR=cuda: pip download -d wheelhouse --no-deps --require-hashes -r requirements/keras-cuda.txt;" \
            "FLAVOR=cpu: pip download -d wheelhouse -c requirements/runtime.txt -r docker/keras.requirements.txt)" \
            "and build with --build-arg PIP_NO_INDEX=1." >&2; \
        exit 1; }; \
    python -c 'import keras, tensorflow as tf, tf_keras; print("tensorflow", tf.__version__, "keras", keras.__version__, "tf_keras", tf_keras.__version__)'

RUN useradd --uid 1000 --user-group --no-create-home --home-dir /tmp --shell /bin/bash bench
# The image's own copy of the programs, which import tiny_mlp_bench from PYTHONPATH: a workflow's step
# runs the mounted workspace's copy, its folder on the PYTHONPATH the step forwards (not set here: an
# image's value would hide Apptainer's host one); by hand, PYTHONPATH=/opt/tiny-mlp-bench runs this one.
COPY scripts/ /opt/tiny-mlp-bench/scripts/
COPY tiny_mlp_bench/ /opt/tiny-mlp-bench/tiny_mlp_bench/
WORKDIR /opt/tiny-mlp-bench
# HOME=/tmp: the workflow runs the image as the host's uid (--user), which may have no home, and
# Keras writes ~/.keras. No bytecode in a mounted workspace.
ENV HOME=/tmp PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# Numeric, so that a runtime can tell it is not root without reading /etc/passwd.
USER 1000:1000

# Last, so a new revision rebuilds nothing above.
# One ARG a line: with several on one, buildah 1.28 warns the later ones were "not consumed".
ARG BASE_IMAGE
ARG VERSION=0.2.0
ARG REVISION=unknown
ARG SOURCE=https://github.com/tiny-mlp-bench/tiny-mlp-bench
LABEL org.opencontainers.image.title="tiny-mlp-bench keras" \
      org.opencontainers.image.description="Keras/TensorFlow training step of the tiny-mlp-bench workflow" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"
