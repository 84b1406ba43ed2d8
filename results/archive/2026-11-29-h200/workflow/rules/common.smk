# Validation, wildcard constraints and input functions shared by every stage.

import sys
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate
from snakemake_interface_executor_plugins.settings import DeploymentMethod

min_version("9.0")

SCRIPTS = Path(workflow.basedir) / "scripts"
# Rules run the interpreter that runs Snakemake (it has the project's packages, activated or
# not, on this machine or on a Slurm node); inside an Apptainer image, the image's python.
PYTHON = (
    "python"
    if DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method
    else sys.executable
)
CONFIG_SCHEMA = Path(workflow.basedir) / "config" / "config.schema.yaml"

# Every config error, one line per key, before any job can run; then Snakemake's own
# validate fills in the schema's defaults.
sys.path.insert(0, str(SCRIPTS))
from config_check import config_errors

_config_problems = config_errors(config, yaml.safe_load(CONFIG_SCHEMA.read_text()))
if _config_problems:
    _sources = ", ".join(str(f) for f in workflow.configfiles) or "--config"
    raise WorkflowError(
        f"invalid configuration (from {_sources}):\n  " + "\n  ".join(_config_problems)
    )
validate(config, schema=str(CONFIG_SCHEMA))


wildcard_constraints:
    framework="torch|keras|numpy",
    device="cpu|cuda",
    variant="[a-z_]+",
    repeat=r"[1-9]\d*",


# Combinations that cannot exist: the NumPy reference has no GPU path, CUDA graphs no CPU one.
IMPOSSIBLE_RUNS = {("numpy", "cuda"), ("graphed", "cpu")}


def get_run_records():
    """Every run record the config asks for: framework x device x its variants x repeat."""
    records = []
    for framework in config["frameworks"]:
        for device in config["devices"]:
            for variant in config["variants"][framework]:
                if {(framework, device), (variant, device)} & IMPOSSIBLE_RUNS:
                    continue
                records += expand(
                    "results/runs/{framework}-{device}-{variant}-{repeat}.json",
                    framework=framework,
                    device=device,
                    variant=variant,
                    repeat=range(1, config["repeats"] + 1),
                )
    return records


def get_sweeps():
    return expand("results/sweep/{device}.json", device=config["devices"])


def get_final_output():
    return rules.render_report.output


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


def get_train_args(wildcards, threads):
    """The training programs' shared flags, all taken from the config."""
    args = [
        f"--device {wildcards.device}",
        f"--variant {wildcards.variant}",
        f"--repeat {wildcards.repeat}",
        f"--epochs {config['epochs']}",
        f"--batch-size {config['batch_size']}",
        f"--learning-rate {config['learning_rate']}",
        f"--hidden-units {config['hidden_units']}",
        f"--threads {threads}",
        f"--min-r2 {config['convergence_min_r2']}",
    ]
    if config["require_gpu"]:
        args.append("--require-gpu")
    return " ".join(args)
