"""The job envelope: what every timed job (a training run, a probe, a sweep) does around what it measures."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from tiny_mlp_bench import catalogue, registry, timing
from tiny_mlp_bench.backends.contract import Backend
from tiny_mlp_bench.dataset import Dataset, DatasetError, read_dataset
from tiny_mlp_bench.machine import JobWatch, collect_environment, gpu_driver_absent, not_imported

REASON_CHARS = 500  # a failed record's reason: the exception's first characters


class DeviceMissing(Exception):
    """The job's device cannot be used here; the message says why."""


class Measurement:
    """What one kind of job measures; the envelope calls ``not_on_device``, ``load``, ``measure``, ``record``."""

    label: str  # the job's name in its log lines: the run id, probe-<pair>, sweep-<device>
    kind: str  # what its record is called in messages: "run", "probe", "sweep"
    framework: str  # whose backend imports, prepares and describes it
    device: str
    require_gpu: bool
    output: Path
    dataset: Path | None = None  # the dataset the job reads, if any
    write: Callable[[dict, Path], None]  # validates against the kind's schema and writes atomically

    def say(self, message: str) -> None:
        print(f"{self.label}: {message}", file=sys.stderr, flush=True)

    @property
    def backend(self) -> Backend:
        return registry.backend(self.framework)

    def read(self, data: Dataset | None) -> None:
        """What the job derives from its dataset before anything is imported (the run's spec)."""

    def not_on_device(self) -> str | None:
        """Why the job never runs on its device, whatever the machine; None where it does."""
        return None

    def load(self) -> object:
        """Import the framework; returns what the backend's functions take as ``fw``."""
        return self.backend.load(self.device)

    def measure(self, fw, data: Dataset | None) -> None:
        """Measure, keeping the results for ``record``; raise DeviceMissing where the device is not there."""
        raise NotImplementedError

    def record(self, status: str, reason: str | None) -> dict:
        """The record's own fields, with ``status`` and ``reason`` (a kind may judge the run failed)."""
        raise NotImplementedError

    def method(self) -> dict:
        """How the clock timed the record (timing.METHOD_PARTS): the study's method, unless a kind knows more."""
        return dict(timing.METHOD)

    def environment(self, described: dict, dataset_sha256: str | None) -> dict:
        """The record's environment: this machine's, with the backend's account of the framework."""
        return collect_environment(dataset_sha256=dataset_sha256, **described)

    def description(self, fw) -> tuple[dict, float | None]:
        """The backend's account of the environment, and the GPU memory the job used at most."""
        if fw is None:  # not imported: the framework's versions from its installed packages
            return not_imported(catalogue.framework(self.framework).packages), None
        return self.backend.describe(fw, self.device), self.backend.peak_gpu_memory_mb(fw, self.device)


def run_job(job: Measurement) -> int:
    """Run one job and write its record; returns the program's exit status (1: nothing was written)."""
    watch = JobWatch()
    data = None
    if job.dataset is not None:
        try:
            data = read_dataset(job.dataset)
        except DatasetError as err:
            job.say(f"error: {err}")
            return 1
    job.read(data)
    status, fw = "ok", None
    reason = job.not_on_device()
    no_driver = gpu_driver_absent() if reason is None and job.device == "cuda" else None
    if no_driver and job.require_gpu:
        return refuse(job, no_driver)
    reason = reason or no_driver
    if reason is None:
        job.say(f"importing {job.framework}")
        fw = job.load()
        try:
            job.measure(fw, data)
        except DeviceMissing as missing:
            if job.require_gpu:
                return refuse(job, str(missing))
            reason = str(missing)
        except Exception as err:  # any error inside the framework: record it, let the other jobs finish
            traceback.print_exc()
            status, reason = "failed", f"{type(err).__name__}: {err}".strip()[:REASON_CHARS]
            job.say(f"recorded as failed: {reason}")
    if reason is not None and status == "ok":
        status = "skipped"
        job.say(f"skipped: {reason}")
    record = job.record(status, reason)
    described, peak_gpu_mb = job.description(fw)
    record["method"] = job.method()
    record["environment"] = job.environment(described, data.sha256 if data else None)
    record["load"] = watch.block(peak_gpu_mb)
    try:
        job.write(record, job.output)
    except OSError as err:
        if err.filename != str(job.output):
            raise
        job.say(f"error: cannot write the {job.kind} record {job.output}: {err.strerror}")
        return 1
    return 0


def refuse(job: Measurement, missing: str) -> int:
    """``--require-gpu`` and no usable GPU: the job fails, writing nothing."""
    job.say(f"error: {missing}, and --require-gpu (config require_gpu) is set")
    return 1
