# tiny-mlp-bench stack images: the question's two CPU loops (torch's and Keras 2's `fit`) on an
# older or another stack, run by tiny_mlp_bench/era_runner.py, which imports the project's clock
# (tiny_mlp_bench/timing.py, kept to Python 3.9) and nothing else of the project. LOCK names the
# stack's lock in requirements/, installed exactly, every file checked against its hash
# (`tiny-mlp-bench locks lock <LOCK>`), on BASE_IMAGE's Debian and Python:
#   era          Debian 11, Python 3.9: torch 1.7.1, TensorFlow 2.5.0 (tf.keras is Keras 2), numpy 1.19.5,
#                the oldest that install here (torch's Python 3.9 wheels are CUDA 10.2 builds only)
#   newest-39    Debian 11, Python 3.9: torch 2.8.0, TensorFlow 2.20.0 with tf_keras, the newest with 3.9 wheels
#   newest-311   Debian 12, Python 3.11: the same releases at the same versions
# PyPI's torch for Linux is a CUDA build: the images are large (3 to 6 GB) and run the loops on the CPU.
# Build from the repository root on docker/base-image.sh's images (no registry needed), or `make stack-images`:
#   docker/base-image.sh --suite bullseye
#   podman build -f docker/stack.Dockerfile -t ghcr.io/tiny-mlp-bench/stack:era --build-arg LOCK=era \
#     --build-arg BASE_IMAGE=localhost/tiny-mlp-bench/base:bullseye \
#     --secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt .
# Debian 11's support ended in August 2026 and its packages will move to archive.debian.org: the
# base image's id, its mirror and the day it was made are what rebuild it.
ARG BASE_IMAGE=localhost/tiny-mlp-bench/base:bullseye
FROM ${BASE_IMAGE}
ARG LOCK=era

ENV PATH=/opt/venv/bin:$PATH
COPY requirements/${LOCK}.txt /opt/tiny-mlp-bench/requirements/
# TensorFlow 2.5.0 pins termcolor and wrapt at versions that PyPI has as source archives only: pip
# builds them, wrapt with its C extension as a user's install of the time did (gcc and Python's
# headers, removed again in the same layer; the other locks build nothing). The proxy's CA, when passed as a build secret, is read
# from /run/secrets and never stored in a layer; pip's cache is a cache mount.
# DL3008: bullseye's versions are fixed by the base image's day and mirror.
# hadolint ignore=DL3008
RUN --mount=type=secret,id=ca_bundle \
    --mount=type=cache,target=/root/.cache/pip,sharing=locked \
    set -eu; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev python3-dev; \
    python3 -m venv /opt/venv; \
    if [ -s /run/secrets/ca_bundle ]; then export PIP_CERT=/run/secrets/ca_bundle; fi; \
    pip install --require-hashes --no-deps -r "/opt/tiny-mlp-bench/requirements/$LOCK.txt" || { \
        echo "ERROR: pip could not install requirements/$LOCK.txt (pip's error is above)." \
            "Behind a TLS-inspecting proxy, pass the proxy's CA bundle as a build secret:" \
            "--secret id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt." >&2; \
        exit 1; }; \
    DEBIAN_FRONTEND=noninteractive apt-get purge -y --auto-remove gcc libc6-dev python3-dev; \
    apt-get clean; rm -rf /var/lib/apt/lists/*; \
    python -c 'import importlib.util, sys; print("Python", sys.version.split()[0], *(f"{m} {importlib.import_module(m).__version__}" for m in ("numpy", "tensorflow", "torch") if importlib.util.find_spec(m)))'

RUN useradd --uid 1000 --user-group --no-create-home --home-dir /tmp --shell /bin/bash bench
# The image's own copy of the runner and the clock it imports; a workflow's step runs the mounted
# workspace's copy, its folder on the PYTHONPATH the step forwards.
COPY tiny_mlp_bench/__init__.py tiny_mlp_bench/timing.py tiny_mlp_bench/era_runner.py /opt/tiny-mlp-bench/tiny_mlp_bench/
WORKDIR /opt/tiny-mlp-bench
ENV HOME=/tmp PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 1000:1000

ARG BASE_IMAGE
ARG VERSION=0.2.0
ARG REVISION=unknown
ARG SOURCE=https://github.com/tiny-mlp-bench/tiny-mlp-bench
ARG LOCK
LABEL org.opencontainers.image.title="tiny-mlp-bench stack ${LOCK}" \
      org.opencontainers.image.description="The question's torch and Keras 2 loops on the stack of requirements/${LOCK}.txt" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"
