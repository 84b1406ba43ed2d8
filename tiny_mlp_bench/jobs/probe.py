"""`tiny-mlp-bench probe` (scripts/probe_fixed_costs.py, the probe rule's program): measure the fixed costs a tiny
training step pays on one framework and device; write a probe record."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.cli import CONFIG_EPILOG, add_fields
from tiny_mlp_bench.jobs.envelope import DeviceMissing, Measurement, run_job
from tiny_mlp_bench.jobs.identity import DATASET, Job
from tiny_mlp_bench.jobs.options import REQUIRE_GPU, SHARED, JobOptions, about, run_spec
from tiny_mlp_bench.probes.keras_epoch import FIT_EPOCHS, keras_fit_epoch
from tiny_mlp_bench.probes.torch_suite import torch_probes
from tiny_mlp_bench.question import askers_rung
from tiny_mlp_bench.records import PROBE_RECORD_TYPE, PROBE_SCHEMA_VERSION, write_probe


@dataclass(frozen=True)
class ProbeJob(JobOptions):
    """One framework's fixed-cost probes on one device as the probe rule asks for them (`tiny-mlp-bench probe`)."""

    framework: str = field(
        metadata=about(
            "the framework (the job's {framework})", choices=[f.name for f in catalogue.FRAMEWORKS if f.probed]
        )
    )
    device: str = field(metadata=about("device to probe (the job's {device})", choices=catalogue.DEVICES))
    dataset: Path = field(metadata=about("the dataset's Parquet file", Path))
    output: Path = field(metadata=about("probe record to write (.json)", Path))
    batch_size: int = field(metadata=SHARED["batch_size"])
    hidden_units: int = field(metadata=SHARED["hidden_units"])
    learning_rate: float = field(metadata=SHARED["learning_rate"])
    threads: int = field(metadata=SHARED["threads"])
    require_gpu: bool = field(default=False, metadata=REQUIRE_GPU)


def probe_job(config: dict, job: Job, threads: int) -> ProbeJob:
    return ProbeJob.of_config(
        config,
        framework=job.framework,
        device=job.device,
        dataset=Path(DATASET),
        output=Path(job.output),
        threads=threads,
    )


def parse_args(argv=None, prog=None) -> ProbeJob:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0], epilog=CONFIG_EPILOG)
    add_fields(parser, ProbeJob)
    return ProbeJob(**vars(parser.parse_args(argv)))


class FixedCostsProbe(Measurement):
    """The probes of one framework and device: the envelope's measurement of a probe job."""

    kind = "probe"

    def __init__(self, job: ProbeJob):
        self.job = job
        self.framework, self.device, self.require_gpu = job.framework, job.device, job.require_gpu
        self.output, self.dataset, self.write = job.output, job.dataset, write_probe
        self.label = f"probe-{job.framework}-{job.device}"
        self.measurements: dict = {}  # kept as far as it got when a later probe raises

    def read(self, data) -> None:
        job = self.job
        # The timed models start from the first repeat's live draw, so a dead draw never skews a probe.
        self.spec = run_spec(
            job, data, variant=askers_rung(job.framework), repeat=1, epochs=FIT_EPOCHS, threads=job.threads
        )

    def measure(self, fw, data) -> None:
        job, spec = self.job, self.spec
        if job.framework == "torch":
            from tiny_mlp_bench.backends import torch_common

            torch_common.set_threads(fw, job.threads)  # no seed: each probe seeds what it draws
            if missing := (torch_common.gpu_missing(fw) if job.device == "cuda" else None):
                raise DeviceMissing(missing)
            torch_probes(
                fw,
                job.device,
                data,
                job.batch_size,
                job.hidden_units,
                job.learning_rate,
                spec.weights,
                self.measurements,
                self.say,
            )
        else:  # Keras: threads and visible devices are set before its backend starts
            self.backend.prepare(fw, spec)
            if missing := self.backend.start_device(fw, spec):
                raise DeviceMissing(missing)
            keras_fit_epoch(fw, spec, data, self.measurements, say=self.say)

    def record(self, status: str, reason: str | None) -> dict:
        job = self.job
        return {
            "record_type": PROBE_RECORD_TYPE,
            "schema_version": PROBE_SCHEMA_VERSION,
            "framework": job.framework,
            "device": job.device,
            "status": status,
            "reason": reason,
            "parameters": {
                "batch_size": job.batch_size,
                "hidden_units": job.hidden_units,
                "learning_rate": job.learning_rate,
                "threads": job.threads,
                "init_seed": self.spec.init_seed,
            },
            "measurements": self.measurements,
        }


def main(argv=None, prog=None) -> int:
    return run_job(FixedCostsProbe(parse_args(argv, prog)))
