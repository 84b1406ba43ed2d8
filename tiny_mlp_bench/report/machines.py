"""Which machine a record comes from, each machine's name in the report, and its runs' environment facts."""

from __future__ import annotations

from collections import Counter


def machine_key(environment: dict) -> tuple:
    """A machine is its host and CPU, not its GPU: a GPU host's cpu runs name no GPU yet belong with its cuda runs."""
    return (environment["host"], environment["cpu_model"], environment["logical_cpus"])


def machine_labels(items: list[dict]) -> dict[tuple, str]:
    """A name per machine: its host name, plus its hardware where two share one (VMs and containers often do)."""
    gpus: dict[tuple, set] = {}
    for item in items:
        gpus.setdefault(machine_key(item["environment"]), set()).add(item["environment"]["gpu_name"])
    names = Counter(key[0] for key in gpus)

    def hardware(key: tuple) -> str:
        gpu = ", ".join(sorted(gpus[key] - {None})) or "no GPU"
        return f"{key[0]} ({key[1]}, {key[2]} logical CPUs, {gpu})"

    return {key: key[0] if names[key[0]] == 1 else hardware(key) for key in gpus}


def cpu_id(cpu: dict | None) -> tuple | None:
    """An environment's cpu block as (vendor, family, model, stepping, flags_sha256); None where not recorded."""
    return cpu and (cpu["vendor"], cpu["family"], cpu["model"], cpu["stepping"], cpu["flags_sha256"])


def environment(records: list[dict]) -> dict[str, tuple]:
    """The distinct values each environment fact took over one machine's runs."""
    envs = [r["environment"] for r in records]
    container = [c and (c["engine"], c["image"], c["image_id"]) for c in (e["container"] for e in envs)]
    facts = {
        "cpu": [(e["cpu_model"], e["logical_cpus"]) for e in envs],
        "cpu_id": [cpu_id(e["cpu"]) for e in envs],
        "cpu_mhz": [e["cpu_mhz"] for e in envs],
        "kernel": [e["kernel"] for e in envs],
        "virtualization": [e["virtualization"] for e in envs],
        "gpu": [e["gpu_name"] for e in envs],
        "python": [e["python"] for e in envs],
        "packages": [item for e in envs for item in e["versions"].items()],
        "cuda": [(k, v) for e in envs for k, v in e["cuda"].items() if v],
        "threads": [item for e in envs for item in e["threads"].items()],
        "thread_env": [tuple(e["thread_env"].items()) for e in envs],
        "container": container,
        **{key: [e[key] for e in envs] for key in ("slurm_job_id", "git_commit", "dataset_sha256")},
    }
    return {fact: tuple(sorted(set(values), key=repr)) for fact, values in facts.items()}
