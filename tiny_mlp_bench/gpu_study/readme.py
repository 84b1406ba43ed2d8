"""The README of a GPU study's archive, written after it is sealed: what ran where and how long, and the answer.
Standard library only, as the command that writes it."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from tiny_mlp_bench.archive.layout import PROVENANCE, SNAKEMAKE_LOGS
from tiny_mlp_bench.kinds import GPU_STUDY_LOG as STUDY_LOG

CALL_LOGS = "logs/gpu_study"  # the Snakemake calls' output: the timed jobs' in jobs.log, the set-up's in prepare.log


def answer_section(report: str) -> str:
    """The report's first screen under its title, the answer, whose numbers all come from the records."""
    found = re.search(r"^# .*?\n(.*?)(?=^## Details)", report, re.MULTILINE | re.DOTALL)
    return found.group(1).strip() if found else "(the report has no answer section)"


def outcome_lines(timing: dict) -> list[str]:
    """What became of each job: per phase, then every job that did not finish, with why."""
    jobs = timing["jobs"]
    lines = []
    for phase in sorted({(job["phase"], job["phase_name"]) for job in jobs}):
        counts = Counter(job["outcome"] for job in jobs if job["phase"] == phase[0])
        said = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
        lines.append(f"- Phase {phase[0]}, {phase[1]}: {said}.")
    for job in jobs:
        if job["outcome"] == "failed":
            lines += ["", f"Failed: `{job['name']}` after {job['took_s']} s; `{job['log']}` ends:", "", "```"]
            lines += [job["log_tail"], "```"]
    skipped = [job for job in jobs if job["outcome"] == "skipped for time"]
    if skipped:
        lines += ["", "Skipped for time (not started: its expected time no longer fit):", ""]
        lines += [f"- `{j['name']}`, expected {j['expected_s']:g} s ({j['expected_from']})" for j in skipped]
    stopped = [job["name"] for job in jobs if job["outcome"] == "stopped"]
    if stopped:
        lines += ["", f"Stopped at the time limit, leaving no record: {', '.join(f'`{n}`' for n in stopped)}."]
    return lines


def write(folder: Path, timing: dict, modified: list[str]) -> None:
    """The archive's README: what ran where and how long, from its provenance, records and logs."""
    provenance = json.loads((folder / PROVENANCE).read_text())
    records = [json.loads(p.read_text()) for p in sorted((folder / "runs").glob("*.json"))]
    statuses = Counter(record["status"] for record in records)
    counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    # The machine as a torch record sees it (its GPU and torch build); a cuda one names the driver.
    torch_records = sorted(
        (r for r in records if r["identity"]["framework"] == "torch"), key=lambda r: r["identity"]["device"]
    )
    env = (torch_records[-1] if torch_records else records[0])["environment"]
    cuda = env.get("cuda") or {}
    done = sum(job["outcome"] == "done" for job in timing["jobs"])
    if done == len(timing["jobs"]):
        extent = "The whole study of the config: every job finished."
    else:
        extent = (
            f"**A partial study**: {done} of its {len(timing['jobs'])} jobs finished (below); the report is of "
            "the records that were made."
        )
    limit = timing["time_for_jobs_s"]
    snakemake_logs = provenance["study"].get("snakemake_logs", [])
    own_logs = (
        f"{len(snakemake_logs)} in `{SNAKEMAKE_LOGS}/`"
        if snakemake_logs
        else "none was found (provenance.json's notes say why)"
    )
    lines = [
        f"# GPU study: {env.get('gpu_name') or 'no GPU'}, {timing['started'][:10]}",
        "",
        f"Made by `python3 scripts/gpu_study.py` at commit {provenance['study']['commit']} on {env.get('host')}:",
        f"{env.get('gpu_name') or 'no GPU'} (driver {cuda.get('driver') or 'none'}), {env.get('logical_cpus')} logical "
        f"CPUs ({env.get('cpu_model')}), Python {env.get('python')}, torch {env.get('versions', {}).get('torch')}.",
        "",
        f"- {extent}",
        f"- {len(records)} run records ({counts}); config as run: `config.yaml`; every number in `report.md`",
        "  comes from the records in `runs/`, `sweep/` and `probes/`.",
        f"- Set-up {timing['setup_s']} s, then the jobs {timing['jobs_wall_s']} s ({timing['how']}"
        + (f"; {limit:g} s from the command's start for jobs" if limit is not None else "")
        + f"): `{STUDY_LOG}`, which also holds each job's plan and outcome, for a cuda job the GPU's clocks,",
        "  power state and throttle reasons before and after, the untimed warm-up kernel before the first job,",
        "  and the node: its boot id, CPUs (lscpu, each one's hyper-thread siblings), GPU's UUID and driver.",
        f"- The rounds after the question's ran in the order seed {timing['order_seed']} draws.",
        f"- Each Snakemake call's output: `{CALL_LOGS}/jobs.log` (and `prepare.log`); Snakemake's own logs of",
        f"  the calls that made records: {own_logs}.",
    ]
    if verdict := timing.get("pip_check"):
        carried = ", ".join(f"`{pin}`" for pin in verdict["carried"]) or "none"
        lines.append(
            f"- The study's environment: the kit over the machine's own packages, with {carried} of its carried "
            f"packages (the machine's own were missing or too old); pip check: {len(verdict['resolved'])} problems "
            f"the kit resolved, {len(verdict['left'])} left among packages the study does not use (`{STUDY_LOG}`)."
        )
    if modified:
        lines.append(
            f"- **Made from a modified tree** (`--allow-modified`): {', '.join(f'`{m}`' for m in modified)} "
            "differed from the commit, and the records say `-dirty`."
        )
    lines += ["", "## What ran", "", *outcome_lines(timing), "", "## The answer (from report.md)", ""]
    lines += [answer_section((folder / "report.md").read_text()), ""]
    (folder / "README.md").write_text("\n".join(lines))
