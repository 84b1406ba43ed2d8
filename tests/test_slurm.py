"""The workflow on a real Slurm cluster through profiles/slurm (the Snakemake Slurm executor).

Needs a running cluster: tests/slurm/start_cluster.sh starts a one-node one as root. Without one
these tests skip with that reason; CI sets TINY_MLP_BENCH_REQUIRE_SLURM=1, which turns the skip
into a failure, so a CI run can never pass them by skipping.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from helpers import ROOT, run_snakemake, skip_unless_ready, table_rows, write_config
from tiny_mlp_bench.jobs import identity
from tiny_mlp_bench.records import read_probe, read_record, read_sweep


def slurm_problem() -> str | None:
    """Why no Slurm cluster can take jobs here, or None when one can."""
    if shutil.which("sinfo") is None:
        return "Slurm is not installed (no sinfo): apt-get install slurm-wlm munge"
    probe = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0 or not {"idle", "mixed", "allocated"} & set(probe.stdout.split()):
        return (
            f"no Slurm node is up (sinfo: {(probe.stdout + probe.stderr).strip()!r}): run tests/slurm/start_cluster.sh"
        )
    return None


@pytest.fixture(scope="module")
def slurm():
    skip_unless_ready(slurm_problem(), "TINY_MLP_BENCH_REQUIRE_SLURM")


# The rules that run on another stack: planning them needs that stack's image, which the era study builds.
STACK_RULES = {"train_stack", "warm_up_stack"}


def rules_holding_the_timed_slot(directory, *config: str) -> set[str]:
    """The rules whose jobs hold the timed slot, from Snakemake's own plan of the default study with ``config``."""
    done = run_snakemake(directory, "-n", "--cores", 2, "--config", *config)
    assert done.returncode == 0, done.stderr[-3000:]
    plan = done.stdout + done.stderr
    return {
        block.group(1)
        for block in re.finditer(r"^(?:local)?rule (\w+):\n((?:    .*\n)+)", plan, re.M)
        if "timed_slot=1" in block.group(2)
    }


def test_the_slurm_profile_gives_exactly_the_timed_rules_an_exclusive_node(workflow_dir):
    profile = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())["set-resources"]
    assert set(profile) == set(identity.OUTPUTS)
    assert all(rule == {"slurm_extra": "'--exclusive'", "timed_slot": 0} for rule in profile.values())
    # The default study beside a busy core: every timed rule but the other stacks' holds the slot.
    holding = rules_holding_the_timed_slot(workflow_dir, "conditions=[idle,busy]")
    assert holding == set(identity.OUTPUTS) - STACK_RULES


def test_a_run_on_another_stack_holds_the_timed_slot_too(workflow_dir):
    from test_era import image_missing
    from tiny_mlp_bench.stacks import STACKS

    skip_unless_ready(image_missing("podman", STACKS["era"].image), "TINY_MLP_BENCH_REQUIRE_PODMAN")
    holding = rules_holding_the_timed_slot(workflow_dir, "stacks=[today,era]")
    assert holding == set(identity.OUTPUTS) - {"train_busy"}  # idle only: no run beside a busy core


def run_on_slurm(directory, configfile: str, *extra):
    # Status checks start soon after submission, so the test does not wait on the default delay; 7 s, as a job
    # here takes 5 s or so: a check that finds no job finished waits 10 s longer before the next one (the
    # executor's back-off), so with 5 s each job's end was seen 15 s after its start at best.
    return run_snakemake(
        directory,
        "--profile",
        "profiles/slurm",
        "--configfile",
        configfile,
        "--slurm-init-seconds-before-status-checks",
        7,
        *extra,
    )


@pytest.mark.slurm
@pytest.mark.workflow
def test_tiny_study_on_slurm(slurm, workflow_dir):
    # Every kind of job the study has (dataset, train, probe, sweep, report) on both devices, but of two
    # frameworks' one rung each: each job is a Slurm job of its own, run one at a time (--exclusive), and
    # starts Snakemake in it, so the tiny study's 46 jobs took five minutes. The frameworks' own code is run
    # by the tiny study in test_workflow.py; here what is tested is the executor that runs it.
    small = {"frameworks": ["torch", "numpy"], "variants": {"torch": ["seed"], "numpy": ["fused"]}}
    result = run_on_slurm(workflow_dir, write_config(workflow_dir, "slurm.yaml", **small))
    assert result.returncode == 0, result.stderr[-3000:]
    records = {p.stem: read_record(p) for p in (workflow_dir / "results" / "runs").glob("*.json")}
    assert len(records) == 8  # 4 framework-device-rung runs, 2 repeats
    for run_id, record in records.items():
        env = record["environment"]
        assert env["slurm_job_id"] and env["slurm_node"], run_id
        if "-cuda-" in run_id:
            # Slurm ran it with the GPU it asked for; the fake GPU has no CUDA behind it.
            assert env["slurm_gpus"] is not None and record["status"] == "skipped", run_id
        else:
            assert env["slurm_gpus"] is None and record["status"] == "ok", run_id
    # Submitted as Slurm jobs, each with its own job ID.
    assert len({r["environment"]["slurm_job_id"] for r in records.values()}) == 8
    for device in ("cpu", "cuda"):
        assert read_sweep(workflow_dir / "results" / "sweep" / f"{device}.json")["environment"]["slurm_job_id"]
        assert read_probe(workflow_dir / "results" / "probes" / f"torch-{device}.json")["environment"]["slurm_job_id"]
    rows = table_rows((workflow_dir / "results" / "report.md").read_text())
    assert ["torch-cpu", "the original torch loop", "11"] in [row[:3] for row in rows]


@pytest.mark.slurm
@pytest.mark.workflow
def test_gres_style_gpu_request(slurm, workflow_dir):
    small = {"frameworks": ["torch"], "devices": ["cuda"], "repeats": 1, "variants": {"torch": ["seed"]}}
    config = write_config(workflow_dir, "gres.yaml", **small)
    # The profile picks the style with `config: [gpu_request=...]`; --config on the command line wins.
    result = run_on_slurm(workflow_dir, config, "--until", "train", "--config", "gpu_request=gres")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "gpu=0, gres=gpu:1" in result.stderr
    record = read_record(workflow_dir / "results" / "runs" / "torch-cuda-seed-1.json")
    assert record["environment"]["slurm_gpus"] is not None and record["environment"]["slurm_job_id"]
