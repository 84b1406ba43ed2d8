"""One command for a GPU machine with Python and torch but no package registry and no container engine.

    python3 scripts/gpu_study.py [--time-limit SECONDS]

It installs what the machine lacks from the carried kit (wheelhouse/gpu-kit/, made beforehand on a
connected machine with `make gpu-kit`) into .venv-gpu/, a virtual environment that sees the
machine's own packages (its torch and JAX built for CUDA); runs the GPU study
(config/gpu.yaml: every rung that machine can run, on cuda and on cpu, once each, 1000 epochs, both
sweeps and the probes) with Snakemake; and packs the result into results/archive/<date>-<gpu model>/,
with a README whose every number comes from the archived records and logs. A copy of the repository
that came without its .git gets one from the kit's git bundle, so that the records name their commit.

To fit the study in about 8 minutes, one cpu and one cuda run may overlap, each on its own
cpu_threads cores (--serial runs one timed job at a time, as the default study does). With
--time-limit, Snakemake is stopped when the time is up and what finished is archived, the README
saying the study is partial. The archive's README says both.

This program itself runs on the machine's bare Python: it imports nothing beyond the standard
library and tiny_mlp_bench's standard-library modules; what needs the study's packages (Snakemake,
the report, the archive) runs in the study's Python.
"""

import argparse
import datetime
import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tiny_mlp_bench import archive  # noqa: E402  (standard library only, as is atomic)
from tiny_mlp_bench.atomic import write_text_atomic  # noqa: E402

KIT = ROOT / "wheelhouse" / "gpu-kit"
BUNDLE = "source.bundle"  # the checkout's history in the kit, for a copy that arrives without .git
VENV = ROOT / ".venv-gpu"
RESULTS = ROOT / "results"
ARCHIVES = RESULTS / "archive"
WALL_TIME_LOG = Path("logs") / "gpu_study.json"
# Two timed jobs at once, never two on one device (the rules' cpu_timed_slot and cuda_timed_slot).
OVERLAP = ["--resources", "timed_slot=2", "cpu_timed_slot=1", "cuda_timed_slot=1"]
STOP_GRACE_S = 60  # how long Snakemake may take to stop its jobs at the time limit before it is killed


class StudyError(Exception):
    """What stops the command, said in one line."""


def say(message: str) -> None:
    print(f"gpu_study: {message}", file=sys.stderr, flush=True)


def git(*args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    except FileNotFoundError as err:
        raise StudyError("git is not installed here: the records name the commit of the code that made them") from err


def check_checkout(kit: Path) -> str:
    """The commit the records will name: the study needs a git checkout to trace them to. A copy
    that came without its .git gets one from the kit's bundle (make gpu-kit writes it)."""
    top = git("rev-parse", "--show-toplevel")
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != ROOT:
        bundle = kit / BUNDLE
        if not bundle.is_file():
            raise StudyError(
                f"{ROOT} is not a git checkout, and there is no {bundle} to make it one: copy the repository "
                "with its .git folder (git clone, or rsync -a), or the kit with its bundle, so that every record "
                "names the code that made it"
            )
        # The working tree stays as it is: a file that differs from the bundle's commit counts as modified.
        say(f"no .git here: making one from {bundle}")
        for args in (["init", "-q"], ["fetch", "-q", str(bundle), "HEAD"], ["reset", "-q", "FETCH_HEAD"]):
            if (done := git(*args)).returncode != 0:
                raise StudyError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return git("rev-parse", "HEAD").stdout.strip()


def prepare_environment(kit: Path) -> Path:
    """.venv-gpu/ with the kit installed over the machine's own packages; its python."""
    lock = kit / "gpu-kit.txt"
    if not lock.is_file():
        raise StudyError(
            f"no kit at {kit} ({lock.name} missing): on a machine with PyPI run `make gpu-kit`, then copy "
            "wheelhouse/gpu-kit/ here with the repository"
        )
    python = VENV / "bin" / "python"
    if not python.exists():
        say(f"creating {VENV.name}/ over this machine's packages ({sys.executable}, Python {sys.version.split()[0]})")
        # Without a pip of its own: a Python without ensurepip (Debian's, without python3-venv) can make it.
        made = subprocess.run(
            [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(VENV)],
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            raise StudyError(f"{sys.executable} cannot make {VENV.name}/: {made.stderr.strip()[-500:]}")
    say(f"installing the kit: {len(lock.read_text().split())} packages from {kit}")
    # The machine's own pip (22.3 or newer) installs into the environment.
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check", "--no-input"]
    if subprocess.run([*pip, "--version"], capture_output=True).returncode != 0:
        raise StudyError(f"{sys.executable} has no pip that installs into another environment (pip 22.3 or newer)")
    install = subprocess.run(
        [*pip, "install", "--quiet", "--no-index", "--no-deps", "--find-links", str(kit), "-r", str(lock)],
        capture_output=True,
        text=True,
    )
    if install.returncode != 0:
        raise StudyError(f"the kit did not install (is it for this Python?): {install.stderr.strip()[-800:]}")
    check = subprocess.run([*pip, "check"], capture_output=True, text=True)
    ours, theirs = study_problems(check.stdout, study_packages(lock))
    if theirs:
        say(f"pip check: {len(theirs)} problems among this machine's own packages, none the study's (left as they are)")
    if ours:
        raise StudyError(
            "this machine's packages do not suit the kit (pip check): "
            + "; ".join(ours[:8])
            + ". Add what is missing or too old to requirements/gpu-kit.in, or take it out of "
            "requirements/gpu-present.txt, then run `make lock-gpu-kit gpu-kit` on a connected machine"
        )
    return python


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def study_needs() -> list[str]:
    """The packages the study needs: the names in requirements/gpu-kit.in."""
    text = (ROOT / "requirements" / "gpu-kit.in").read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def study_packages(lock: Path) -> set[str]:
    """The kit's packages and the study's own needs, by canonical name."""
    kit = [line.split("==")[0] for line in lock.read_text().splitlines() if line.strip()]
    return {canonical(name) for name in study_needs() + kit}


def study_problems(pip_check: str, packages: set[str]) -> tuple[list[str], list[str]]:
    """pip check's lines split in two: those of a package the study installs or needs, and the rest.
    A GPU machine's own packages may not all suit each other; that is none of the study's business."""
    lines = [line for line in pip_check.splitlines() if line.strip() and line != "No broken requirements found."]
    ours = [line for line in lines if canonical(line.split()[0]) in packages]
    return ours, [line for line in lines if line not in ours]


# Which of the distributions named on the command line are not installed.
MISSING_CODE = """import sys, importlib.metadata as m
missing = []
for name in sys.argv[1:]:
    try:
        m.version(name)
    except m.PackageNotFoundError:
        missing.append(name)
print(" ".join(missing))"""


def check_needs(python: Path) -> None:
    """Every package the study needs (requirements/gpu-kit.in) is in ``python``, the machine's or the kit's."""
    done = subprocess.run([str(python), "-c", MISSING_CODE, *study_needs()], capture_output=True, text=True, check=True)
    if missing := done.stdout.split():
        raise StudyError(
            f"{python} lacks {', '.join(missing)}, which neither this machine nor the kit has: take "
            "them out of requirements/gpu-present.txt, then run `make lock-gpu-kit gpu-kit` on a connected "
            "machine and copy wheelhouse/gpu-kit/ here again"
        )


def gpu_name(python: Path) -> str | None:
    code = "import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else '')"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise StudyError(f"torch does not import in {python}: {done.stderr.strip()[-500:]}")
    return done.stdout.strip() or None


def run_study(python: Path, config: Path, serial: bool, time_limit: float | None) -> dict:
    """Snakemake on the config, stopped at the time limit; how long it took, in logs/gpu_study.json."""
    command = [str(python), "-m", "snakemake", "--cores", "all", "--configfile", str(config)]
    command += [] if serial else OVERLAP
    say("running: " + " ".join(command))
    started = datetime.datetime.now(datetime.UTC)
    clock = time.perf_counter()
    snakemake = subprocess.Popen(command, cwd=ROOT)
    stopped = False
    try:
        snakemake.wait(timeout=time_limit)
    except subprocess.TimeoutExpired:
        # Snakemake stops its running jobs on SIGTERM; a killed job leaves no record (records are
        # written whole or not at all), so what is in results/ finished.
        say(f"the time limit of {time_limit:g} s is up: stopping Snakemake, then archiving what finished")
        stopped = True
        snakemake.send_signal(signal.SIGTERM)
        try:
            snakemake.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            snakemake.kill()
            snakemake.wait()
    timing = {
        "command": command,
        "started": started.isoformat(timespec="seconds"),
        "wall_s": round(time.perf_counter() - clock, 1),
        "overlap": "one timed job at a time" if serial else "one cpu and one cuda timed job at a time",
        "time_limit_s": time_limit,
        "stopped_at_time_limit": stopped,
        "snakemake_exit": snakemake.returncode,
    }
    (ROOT / WALL_TIME_LOG).parent.mkdir(exist_ok=True)
    write_text_atomic(ROOT / WALL_TIME_LOG, json.dumps(timing, indent=1) + "\n")
    if snakemake.returncode != 0 and not stopped:
        raise StudyError(
            f"Snakemake failed after {timing['wall_s']} s (its output is above; logs/ holds each job's log). "
            "Run the command again to redo only what is missing"
        )
    return timing


def render_what_finished(python: Path) -> None:
    """The report of the records in results/, as render_report would make it had they been all."""
    try:
        archive.render(ROOT, RESULTS, archive.render_command(RESULTS), python=str(python))
    except archive.ArchiveError as err:
        raise StudyError(f"nothing to archive: {err}") from err


def pack(python: Path, name: str | None) -> Path:
    """archive_study.py pack in the study's Python (the render and the RO-Crate need its packages)."""
    before = set(ARCHIVES.iterdir()) if ARCHIVES.is_dir() else set()
    command = [str(python), str(ROOT / "scripts" / "archive_study.py"), "pack", *(["--name", name] if name else [])]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise StudyError(f"archiving failed: {done.stderr.strip()[-1500:]}")
    (folder,) = set(ARCHIVES.iterdir()) - before
    return folder


def answer_section(report: str) -> str:
    """The report's answer, whose numbers all come from the records."""
    found = re.search(r"^## The answer\n(.*?)(?=^## )", report, re.MULTILINE | re.DOTALL)
    return found.group(1).strip() if found else "(the report has no answer section)"


def write_readme(folder: Path, timing: dict) -> None:
    """The archive's README: what ran where and how long, from its provenance, records and logs."""
    provenance = json.loads((folder / archive.PROVENANCE).read_text())
    records = [json.loads(p.read_text()) for p in sorted((folder / "runs").glob("*.json"))]
    statuses = Counter(record["status"] for record in records)
    counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    # The machine as a torch record sees it (its GPU and torch build); a cuda one names the driver.
    torch_records = sorted(
        (r for r in records if r["identity"]["framework"] == "torch"), key=lambda r: r["identity"]["device"]
    )
    env = (torch_records[-1] if torch_records else records[0])["environment"]
    cuda = env.get("cuda") or {}
    if timing["stopped_at_time_limit"]:
        extent = (
            f"**A partial study**: stopped at the time limit of {timing['time_limit_s']:g} s; the runs that had "
            "not finished are not here, and the report is of those that had."
        )
    else:
        extent = "The whole study of the config."
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
        f"- Wall time of the study: {timing['wall_s']} s, from Snakemake's start to its end",
        f"  (`{WALL_TIME_LOG}`); {timing['overlap']}.",
        "",
        "## The answer (from report.md)",
        "",
        answer_section((folder / "report.md").read_text()),
        "",
    ]
    (folder / "README.md").write_text("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "gpu.yaml", help="default: config/gpu.yaml")
    parser.add_argument("--kit", type=Path, default=KIT, help="the carried wheels (default: wheelhouse/gpu-kit)")
    parser.add_argument("--serial", action="store_true", help="one timed job at a time (slower)")
    parser.add_argument("--time-limit", type=float, help="seconds: then stop the study and archive what finished")
    parser.add_argument("--name", help="the archive's folder name (default: <date>-<gpu model>)")
    parser.add_argument(
        "--python", type=Path, help="an interpreter that has everything the study needs: no .venv-gpu, no kit"
    )
    parser.add_argument("--allow-no-gpu", action="store_true", help="run even where torch sees no GPU (for tests)")
    args = parser.parse_args()
    try:
        commit = check_checkout(args.kit)
        python = args.python or prepare_environment(args.kit)
        check_needs(python)
        gpu = gpu_name(python)
        if gpu is None and not args.allow_no_gpu:
            raise StudyError("torch sees no GPU here: this command measures a GPU machine (make run studies a CPU)")
        say(f"commit {commit[:12]}, {gpu or 'no GPU'}, config {args.config}")
        timing = run_study(python, args.config, args.serial, args.time_limit)
        if timing["stopped_at_time_limit"]:
            render_what_finished(python)
        folder = pack(python, args.name)
        write_readme(folder, timing)
    except StudyError as err:
        say(f"error: {err}")
        return 1
    say(f"done in {timing['wall_s']} s: {folder.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
