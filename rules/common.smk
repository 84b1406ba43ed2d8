# Validation, wildcard constraints and input functions shared by every stage.

import dataclasses
import functools
import os
import shlex
import sys
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate
from snakemake_interface_executor_plugins.settings import DeploymentMethod

min_version("9.0")

# Set in Snakemake's environment, which every job's shell inherits (a Slurm node loads this file again): no absolute
# path enters params or shell commands, so a moved or copied checkout reruns nothing.
os.environ.update(
    TINY_MLP_BENCH_HOME=workflow.basedir,
    TINY_MLP_BENCH_PYTHON=(
        "python"
        if DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method
        else sys.executable
    ),
)


def program(name):
    """A command-line program in scripts/, as a job's shell finds it."""
    return f'"$TINY_MLP_BENCH_HOME/scripts/{name}"'


CONFIG_SCHEMA = Path(workflow.basedir) / "config" / "config.schema.yaml"
ARCHIVES = Path("results/archive")  # archived studies (`tiny-mlp-bench archive`)

# Snakemake imports the package from the workflow's folder; the jobs get it as PYTHONPATH from get_launcher.
from tiny_mlp_bench import catalogue
from tiny_mlp_bench.jobs import identity, rounds
from tiny_mlp_bench.jobs.probe import probe_job
from tiny_mlp_bench.jobs.run import training_job
from tiny_mlp_bench.jobs.sweep import sweep_job
from tiny_mlp_bench.config_check import config_errors, set_by, with_catalogue_defaults
from tiny_mlp_bench.containers import ContainerError, find_engine, image_id
from tiny_mlp_bench.stacks import STACKS, TODAY, WARM_UP_EPOCHS, stack_engine

# Every config error, one line per key, before any job can run; then validate fills in the schema's defaults.
_config_problems = config_errors(config, yaml.safe_load(CONFIG_SCHEMA.read_text()))
# An archive a quote key names must be there and qualify; auto is resolved with the report's inputs.
from tiny_mlp_bench.report.busy_archive import BusyArchiveError
from tiny_mlp_bench.report.busy_archive import choose as choose_busy_archives
from tiny_mlp_bench.report.gpu_archive import GpuArchiveError
from tiny_mlp_bench.report.gpu_archive import choose as choose_gpu_archive

for _key, _choose in (
    ("gpu_answer_archive", choose_gpu_archive),
    ("busy_answer_archive", choose_busy_archives),
):
    if not _config_problems and config.get(_key, "auto") not in ("auto", "none"):
        try:
            _choose(config[_key], ARCHIVES)
        except (GpuArchiveError, BusyArchiveError) as err:
            _config_problems.append(str(err))
if not _config_problems and config.get("estimate_archive", "auto") != "auto":
    from tiny_mlp_bench.expected_time import EstimateArchiveError, choose_archive

    try:
        choose_archive(config["estimate_archive"], ARCHIVES, None)
    except EstimateArchiveError as err:
        _config_problems.append(str(err))
if _config_problems:
    # Printed and exited, not raised: Snakemake would add a traceback to what is the user's config error.
    _settings = workflow.config_settings
    _cli_files = [str(f) for f in _settings.configfiles]
    _own_files = [str(f) for f in workflow.configfiles if str(f) not in _cli_files]
    print("invalid configuration:", file=sys.stderr)
    for _problem in _config_problems:
        _source = set_by(_problem, _settings.config, _cli_files, _own_files)
        print(f"  {_source}: {_problem}", file=sys.stderr)
    sys.exit(1)
validate(config, schema=str(CONFIG_SCHEMA))
config.update(with_catalogue_defaults(config))
# The seeded run order as priority: every timed job takes all its cores, so they start one at a time in this order.
_RUN_ORDER = rounds.run_order(config)
RUN_PRIORITY = {
    job.output: len(_RUN_ORDER) - place for place, job in enumerate(_RUN_ORDER)
}


# The study's expected time at an archived study's pace (estimate_archive), then the time left as records appear.
# The jobs come from Snakemake's DAG (needrun_jobs is undocumented: Snakemake is pinned).
onstart:
    from tiny_mlp_bench import expected_time
    from tiny_mlp_bench.machine import gpu_driver_absent, nvidia_smi

    _to_run = {str(f) for job in workflow.dag.needrun_jobs() for f in job.output}
    _pending = [job for job in _RUN_ORDER if job.output in _to_run]
    _gpu = None if gpu_driver_absent() else nvidia_smi("name")
    # Snakemake starts once .venv is set up: its set-up is done.
    _estimate = expected_time.estimate(config, ARCHIVES, _pending, _gpu)
    print(expected_time.expected_line(_estimate, _pending, _gpu), file=sys.stderr)
    if _estimate.measured:
        expected_time.follow(
            _estimate.jobs,
            lambda text: print(f"Time left: {text}", file=sys.stderr, flush=True),
        )


def run_order_priority(rule_name):
    """The priority function of a timed rule: its job's place in the run order (0 for one outside it)."""

    def priority(wildcards):
        output = identity.OUTPUTS[rule_name].format(
            **{key: wildcards[key] for key in wildcards.keys()}
        )
        return RUN_PRIORITY.get(output, 0)

    return priority


wildcard_constraints:
    framework="|".join(catalogue.framework_names()),
    device="|".join(catalogue.DEVICES),
    variant="[a-z_]+",
    repeat=r"[1-9]\d*",
    stack="|".join(name for name in STACKS if name != TODAY),


def get_run_records():
    """Every run record the config asks for (tiny_mlp_bench/jobs/rounds.py expands them)."""
    return [job.output for job in rounds.training_runs(config)]


def train_job(wildcards, condition=identity.IDLE, stack=TODAY):
    """The training run a train (or train_busy, train_stack) job's wildcards name."""
    return identity.Job(
        "train",
        wildcards.device,
        wildcards.framework,
        wildcards.variant,
        int(wildcards.repeat),
        condition,
        stack,
    )


def get_compiled_first(wildcards, condition=identity.IDLE):
    """A compiling rung's later run waits for its first, whose cold compilation fills the cache it reuses."""
    first = train_job(wildcards, condition).compiled_first
    return [first.output] if first else []


def get_busy_compiled_first(wildcards):
    return get_compiled_first(wildcards, identity.BUSY)


def get_sweeps():
    return [job.output for job in rounds.sweeps(config)]


def get_probes():
    return [job.output for job in rounds.probes(config)]


@functools.cache
def gpu_archive():
    """The archived study whose GPU answer the report quotes (gpu_answer_archive), or None."""
    try:
        return choose_gpu_archive(config["gpu_answer_archive"], ARCHIVES)
    except GpuArchiveError as err:
        raise WorkflowError(str(err)) from err


def get_gpu_archive_records(wildcards):
    """The quoted archive's records the report reads: a new or changed one renders it again."""
    from tiny_mlp_bench.archive.layout import QUOTED_RECORDS

    folder = gpu_archive()
    return sorted(str(path) for path in folder.glob(QUOTED_RECORDS)) if folder else []


def get_gpu_archive_option(wildcards):
    if folder := gpu_archive():
        return f"--gpu-archive {folder}"
    return "--no-archive-qualifies" if config["gpu_answer_archive"] == "auto" else ""


@functools.cache
def busy_archives():
    """The archived busy-core studies offered to the report (busy_answer_archive), or None where it asks for none."""
    try:
        return choose_busy_archives(config["busy_answer_archive"], ARCHIVES)
    except BusyArchiveError as err:
        raise WorkflowError(str(err)) from err


def get_busy_archive_records(wildcards):
    """The offered archives' records the report reads: a new busy-core archive renders it again."""
    from tiny_mlp_bench.archive.layout import BUSY_QUOTED_RECORDS

    folders = busy_archives() or []
    return sorted(
        str(path) for folder in folders for path in folder.glob(BUSY_QUOTED_RECORDS)
    )


def get_busy_archive_option(wildcards):
    folders = busy_archives()
    return "" if folders is None else " ".join(["--busy-archives", *map(str, folders)])


def get_final_output():
    return [*rules.render_report.output, *rules.config_as_run.output]


def write_config_as_run(path, config, log):
    """The config_as_run rule's whole job: the config, defaults filled in, as YAML."""
    Path(path).write_text(yaml.safe_dump(config, sort_keys=True))
    Path(log).write_text(f"wrote {path}\n")


def get_cpu_threads():
    """Threads for a training job: cpu_threads, or with 0 every core Snakemake was given."""
    return config["cpu_threads"] or workflow.cores


def get_gpus(wildcards):
    """GPUs a job asks a cluster for in the `gpus` style (the Slurm executor's `gpu` resource)."""
    return int(wildcards.device == "cuda" and config["gpu_request"] == "gpus")


def get_gres(wildcards):
    """The same request in the `gres` style; an empty string asks for nothing."""
    return (
        "gpu:1"
        if wildcards.device == "cuda" and config["gpu_request"] == "gres"
        else ""
    )


# timed_slot (capped at 1 in profiles/default) keeps timed jobs apart while other rules run freely; profiles/slurm
# gives each timed rule an exclusive node. A cuda job asks for one GPU as config["gpu_request"] says.
TIMED_RESOURCES = {"timed_slot": 1, "gpu": get_gpus, "gres": get_gres}


def image_key(wildcards):
    """Which of the config's images a job runs in: its framework's (the catalogue says), else torch's."""
    framework = getattr(wildcards, "framework", None)
    return catalogue.framework(framework).image if framework else "torch"


def get_image(wildcards):
    return config["images"][image_key(wildcards)]


# Jobs import this checkout's tiny_mlp_bench wherever they run, whichever copy is installed (container_run.py too).
WITH_PACKAGE = 'env PYTHONPATH="$TINY_MLP_BENCH_HOME"'


def get_launcher(wildcards):
    """The command that starts a job's program: the local interpreter (or Apptainer's), or
    `<engine> run` in the job's image (container_run.py mounts the checkout), with the workflow's
    folder as PYTHONPATH."""
    engine = config["container_engine"]
    if engine == "none":
        return f'{WITH_PACKAGE} "$TINY_MLP_BENCH_PYTHON"'
    gpu = " --gpu" if getattr(wildcards, "device", None) == "cuda" else ""
    return (
        f'{WITH_PACKAGE} "$TINY_MLP_BENCH_PYTHON" {program("container_run.py")} --engine {engine}'
        f" --image {get_image(wildcards)}{gpu} -- python"
    )


# Each timed job's options: its wildcards' job with the config's values (jobs/run.py's TrainingJob, sweep.py's
# SweepJob, probe.py's ProbeJob).
def get_train_args(wildcards, threads, condition=identity.IDLE):
    job = train_job(wildcards, condition)
    return shlex.join(training_job(config, job, threads).flags())


def get_busy_train_args(wildcards, threads):
    return get_train_args(wildcards, threads, identity.BUSY)


# A run on another stack starts from this machine's Python, whatever container_engine says: the stack's image is the
# era runner's, which the job starts itself.
STACK_LAUNCHER = f'{WITH_PACKAGE} "$TINY_MLP_BENCH_PYTHON"'


def get_stack_train_args(wildcards, threads):
    job = train_job(wildcards, stack=wildcards.stack)
    return shlex.join(training_job(config, job, threads).flags())


def get_warm_up_args(wildcards, threads):
    """The stack's first run of the asker's loop, a few epochs and no per-step window, into the warm-up's record."""
    job = identity.Job(
        "train", wildcards.device, wildcards.framework, "seed", 1, stack=wildcards.stack
    )
    warm = dataclasses.replace(
        training_job(config, job, threads),
        output=Path(identity.OUTPUTS["warm_up_stack"].format(**wildcards)),
        epochs=WARM_UP_EPOCHS,
        steady_window_s=0.0,
    )
    return shlex.join(warm.flags())


def get_sweep_args(wildcards, threads):
    job = identity.Job("sweep_crossover", wildcards.device)
    return shlex.join(sweep_job(config, job, threads).flags())


def get_probe_args(wildcards, threads):
    job = identity.Job("probe_fixed_costs", wildcards.device, wildcards.framework)
    return shlex.join(probe_job(config, job, threads).flags())


def check_container_engine():
    """With Docker or Podman, the engine and every image the study uses must exist before any job runs."""
    engine = config["container_engine"]
    if engine == "none":
        return
    if DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method:
        raise WorkflowError(
            f"container_engine is '{engine}' and --sdm apptainer is set: use one of them "
            "(--config container_engine=none to let Apptainer run the steps)"
        )
    images = {"torch"} | {catalogue.framework(f).image for f in config["frameworks"]}
    try:
        find_engine(engine)
        for key in sorted(images):
            image_id(engine, config["images"][key])
    except ContainerError as err:
        raise WorkflowError(
            f"cannot run the steps in {engine} containers: {err}"
        ) from None


check_container_engine()


def check_stack_images():
    """A run on another stack starts its stack's image itself: the engine and each image must exist first."""
    images = {
        image
        for framework in config["frameworks"]
        for name in config["stacks"]
        if framework in STACKS[name].frameworks
        and (image := STACKS[name].image_for(framework, config["images"]))
    }
    if not images:
        return
    if DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method:
        raise WorkflowError(
            "the stacks asked for run in Podman or Docker images, which a job cannot start under --sdm apptainer: "
            "run the era study without it"
        )
    engine = stack_engine(config)
    try:
        find_engine(engine)
        for image in sorted(images):
            image_id(engine, image)
    except ContainerError as err:
        raise WorkflowError(f"cannot run the stacks' images: {err}") from None


check_stack_images()
