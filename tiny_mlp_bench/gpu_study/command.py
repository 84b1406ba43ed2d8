"""The GPU study's command, as `python3 scripts/gpu_study.py` runs it on a GPU machine with Python and torch but no
package registry and no container engine.

    python3 scripts/gpu_study.py --check     # the pre-flight: what it would use, and what would stop it
    python3 scripts/gpu_study.py [--time-limit SECONDS] [--allow-modified]

It installs what the machine lacks from the carried kit (wheelhouse/gpu-kit/) into .venv-gpu/, runs the study of
config/gpu.yaml with Snakemake, one timed job at a time on every core (the question rounds first),
and packs what finished into results/archive/<date>-<gpu model>/. A failed job does not stop the study.
It runs on the machine's bare Python: it imports only the standard library and tiny_mlp_bench's stdlib-only modules.
"""

import argparse
import datetime
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from tiny_mlp_bench.archive.layout import ArchiveError
from tiny_mlp_bench.archive.rendering import render, render_command
from tiny_mlp_bench.archive.repository import modified_files
from tiny_mlp_bench.atomic import write_text_atomic
from tiny_mlp_bench.gpu_study import readme, runner
from tiny_mlp_bench.gpu_study.environment import (
    ROOT,
    StudyError,
    check_needs,
    core_list,
    core_siblings,
    cuda_toolkit,
    gpu_readings,
    gpu_state,
    node_record,
    physical_cores,
    prepare_environment,
    say,
    study_needs,
)

KIT = ROOT / "wheelhouse" / "gpu-kit"
BUNDLE = "source.bundle"  # the checkout's history in the kit, for a copy that arrives without .git
RESULTS = ROOT / "results"
ARCHIVES = RESULTS / "archive"
STUDY_LOG = Path(readme.STUDY_LOG)  # the plan, each job's outcome and the times
CALL_LOGS = Path(readme.CALL_LOGS)  # the Snakemake calls' output: the jobs' and the preparation's
# Importing torch and numba and compiling the floor kernel takes seconds; a machine slower than this is unfit to time.
PREFLIGHT_TIMEOUT_S = 120
# An untimed kernel in a process of its own before the first timed job: the GPU idles at its lowest clocks until one
# runs, and the first cuda job should not be the one that wakes it. The time it takes is recorded, not any job's.
WARM_UP_CODE = (
    "import torch; x = torch.ones(1024, device='cuda'); [x.add_(1) for _ in range(1000)]; torch.cuda.synchronize()"
)
WARM_UP_TIMEOUT_S = 120


def git(*args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    except FileNotFoundError as err:
        raise StudyError("git is not installed here: the records name the commit of the code that made them") from err


def check_checkout(kit: Path) -> str:
    """The commit the records will name; a copy that came without its .git gets one from the kit's bundle."""
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


def check_tree(commit: str, allow_modified: bool, kit: Path) -> list[str]:
    """Tracked files whose content differs from the commit (mode-only ones get its mode back); raises unless allowed."""
    changed = restore_modes(modified_files(ROOT), commit)
    if not changed or allow_modified:
        if changed:
            say(f"running from a modified tree ({len(changed)} files differ from {commit[:12]}): --allow-modified")
        return changed
    problem = f"{len(changed)} tracked files differ from commit {commit[:12]} ({', '.join(changed[:5])})"
    kit_commit = kit_made_at(kit)
    if kit_commit and kit_commit != commit:
        # A newer working tree copied without its .git over an earlier copy keeps that copy's .git.
        raise StudyError(
            f"{problem}, and the kit was made at commit {kit_commit[:12]}: this .git is an older copy's. "
            f"Copy the repository's .git here too, or remove {ROOT / '.git'} to make it again from the kit's bundle"
        )
    raise StudyError(
        f"{problem}. Every record would say -dirty and the archive would refuse them: commit the change and make "
        "the kit again (`make gpu-kit` bundles HEAD), or run with --allow-modified to archive the study as it is, "
        "saying so"
    )


def kit_made_at(kit: Path) -> str | None:
    """The commit the kit's bundle holds (kit.json, as make gpu-kit writes it), or None."""
    about = kit / "kit.json"
    return json.loads(about.read_text()).get("commit") if about.is_file() else None


def restore_modes(changed: list[str], commit: str) -> list[str]:
    """``changed`` less the files whose mode alone differs from the commit's, each given its mode back."""
    content = set(modified_files(ROOT, modes=False))
    mode_only = [name for name in changed if name not in content]
    for name in mode_only:
        executable = git("ls-files", "--stage", "--", name).stdout.startswith("100755")
        path = ROOT / name
        mode = path.stat().st_mode
        path.chmod(mode | 0o111 if executable else mode & ~0o111)
    if mode_only:
        named = ", ".join(mode_only[:3])
        say(f"gave {len(mode_only)} files the mode of {commit[:12]} back ({named}): the copy changed it")
    return [name for name in changed if name in content]


def preflight(python: Path, allow_no_gpu: bool) -> tuple[dict, list[str]]:
    """Say what the study would use; returns the pre-flight's findings and what would stop the study.
    Sets CUDA_HOME where unset and a toolkit with libNVVM is found: numba-cuda compiles the floor kernel with it."""
    toolkit, how = cuda_toolkit()
    if toolkit is not None and not os.environ.get("CUDA_HOME"):
        os.environ["CUDA_HOME"] = str(toolkit)  # the study's Snakemake calls and their jobs inherit it
    command = [str(python), "-m", "tiny_mlp_bench.gpu_study.preflight", *study_needs()]
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=PREFLIGHT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise StudyError(
            f"the study's Python took over {PREFLIGHT_TIMEOUT_S} s to import torch and numba and compile the "
            "floor kernel: a machine this slow, or this busy, is not fit to time anything"
        ) from None
    if done.returncode != 0:
        raise StudyError(f"the study's Python cannot say what it would use: {done.stderr.strip()[-800:]}")
    found, problems = json.loads(done.stdout), []
    say(f"Python {found['python']} ({found['executable']})")
    for source, said in (("environment", "in the study's environment (the kit)"), ("machine", "the machine's own")):
        names = [f"{name} {p['version']}" for name, p in found["packages"].items() if p["from"] == source]
        say(f"  {said}: {', '.join(names) or 'none'}")
    seen = found["torch"]
    if "error" in seen:
        problems.append(f"torch does not work in {python}: {seen['error']}")
    else:
        gpu = f"{seen['gpu']} (compute capability {seen['capability']})" if seen["gpu"] else "no GPU"
        say(f"torch {seen['torch']} (CUDA build {seen['cuda_build']}): {gpu}")
        if not seen["gpu"] and not allow_no_gpu:
            problems.append("torch sees no GPU here: this command measures a GPU machine (make run studies a CPU)")
    # What only the floor needs never stops the study: the floor's job fails alone, with its reason in its record.
    floor_only = []
    numba = found["numba"]
    if "error" in numba:
        floor_only.append(f"numba does not import in {python}: {numba['error']}")
    else:
        say(f"numba {numba['numba']}: numba.cuda is {numba['target']} ({numba['module']})")
        if seen.get("gpu") and not numba["nvidia"]:
            floor_only.append(
                f"numba.cuda is {numba['target']}, not NVIDIA's numba-cuda: the floor rung refuses it. Install "
                "numba-cuda on this machine (or leave it out of requirements/gpu-present.txt so that the kit "
                "carries it), and check that its .pth hook runs"
            )
    say(f"CUDA toolkit with libNVVM: {toolkit} (from {how})" if toolkit else f"no CUDA toolkit with libNVVM: {how}")
    nvvm = found["nvvm"]
    where = nvvm["path"] or "not found by cuda-pathfinder"
    say(f"libNVVM: {where} ({nvvm['found_via']}); numba loads it: {nvvm['loads']}")
    if seen.get("gpu") and numba.get("nvidia") and nvvm["loads"] != "yes":
        floor_only.append(
            f"numba-cuda cannot load libNVVM ({nvvm['loads']}): set CUDA_HOME to a CUDA toolkit that has "
            "nvvm/lib64/libnvvm.so, or install NVIDIA's nvidia-nvvm wheel for the machine's CUDA"
        )
    if found["floor_kernel"] is not None:
        say(f"the floor kernel on this GPU: {found['floor_kernel']}")
        if found["floor_kernel"].startswith("failed"):
            floor_only.append(f"the floor kernel does not run on this GPU: {found['floor_kernel']}")
    for problem in floor_only:
        say(f"warning: the floor's cuda job will fail alone, the rest of the study runs: {problem}")
    cores = os.sched_getaffinity(0)
    siblings = core_siblings(cores)
    physical = physical_cores(cores, siblings)
    topology = "" if all(siblings.values()) else ", topology unknown: each counted as a core of its own"
    say(
        f"CPU: {len(cores)} logical CPUs ({core_list(cores)}) on {len(physical)} physical cores{topology}; "
        "every timed job runs alone on all of them"
    )
    for line in gpu_state().splitlines():
        say(f"GPU state: {line}")
    return found, problems


def prepare_study(python: Path, config: Path, until: float | None) -> None:
    """The dataset and the config as run, before the first job: every job reads them."""
    log = ROOT / CALL_LOGS / "prepare.log"
    command = runner.snakemake_command(python, config, "make_dataset", "config_as_run")
    if runner.run_snakemake(command, ROOT, log, until) != "done":
        raise StudyError(f"making the dataset and the config as run failed or ran out of time: {runner.tail(log)}")


def make_plan(python: Path, gpu: str | None, seed: int) -> dict:
    """The jobs in the order to run them, each with its expected time, and the stages they run in."""
    command = [str(python), "-m", "tiny_mlp_bench", "plan", "--config", str(RESULTS / "config.yaml")]
    command += ["--archives", str(ARCHIVES), "--order", str(seed), *(["--gpu", gpu] if gpu else [])]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise StudyError(f"no plan: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout)


def warm_up(python: Path) -> dict:
    """Run WARM_UP_CODE, untimed, in its own process; what it took and the GPU's state before and after."""
    before, began = gpu_readings(), time.monotonic()
    try:
        command = [str(python), "-c", WARM_UP_CODE]
        done = subprocess.run(command, capture_output=True, text=True, timeout=WARM_UP_TIMEOUT_S)
        outcome = "done" if done.returncode == 0 else f"failed: {done.stderr.strip()[-300:]}"
    except subprocess.TimeoutExpired:
        outcome = f"stopped after {WARM_UP_TIMEOUT_S} s"
    took = round(time.monotonic() - began, 1)
    say(f"GPU warm-up kernel (untimed, its own process): {outcome} in {took} s")
    return {"outcome": outcome, "took_s": took, "gpu_before": before, "gpu_after": gpu_readings()}


def run_study(
    python: Path, config: Path, until: float | None, t0: float, gpu: str | None, pip_check: dict | None
) -> dict:
    """Run the study's jobs one at a time in the plan's order; writes what happened to logs/gpu_study.json and
    returns it."""
    started = datetime.datetime.now(datetime.UTC)
    node = node_record()
    prepare_study(python, config, until)
    seed = random.SystemRandom().randrange(2**31)  # recorded below: the order can be made again
    planned = make_plan(python, gpu, seed)
    warmed = warm_up(python) if gpu else None
    limit = "" if until is None else f"; {until - t0:.0f} s for jobs"
    say(f"{len(planned['jobs'])} jobs, one at a time on every core{limit}")
    jobs_began = time.monotonic()
    try:
        outcomes = runner.Runner(python, config, ROOT, CALL_LOGS / "jobs.log", say).run(planned["jobs"], until, t0)
    except runner.Interrupted:
        raise StudyError("interrupted: the running job was stopped and nothing was archived") from None
    timing = {
        "command": sys.argv,
        "started": started.isoformat(timespec="seconds"),
        "setup_s": round(jobs_began - t0, 1),
        "jobs_wall_s": round(time.monotonic() - jobs_began, 1),
        "how": "one timed job at a time, on every core, nothing beside it",
        "node": node,
        "warm_up": warmed,
        "order_seed": seed,
        "time_for_jobs_s": None if until is None else round(until - t0, 1),
        # What pip check found in the study's environment and what the study did about it (None: --python).
        "pip_check": pip_check,
        "jobs": outcomes,
    }
    write_text_atomic(ROOT / STUDY_LOG, json.dumps(timing, indent=1) + "\n")
    return timing


def seconds_left(deadline: float | None) -> float | None:
    """What is left of the command's time limit (monotonic ``deadline``), or None without one."""
    return None if deadline is None else max(deadline - time.monotonic(), 0.0)


def warm_matplotlib(python: Path) -> None:
    """Build matplotlib's font cache before the jobs: in the render it could eat the seconds left for the archive."""
    code = "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot"
    try:
        done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        say("warning: matplotlib took over 300 s to build its font cache: the render may not finish in time")
        return
    if done.returncode != 0:
        say(f"warning: matplotlib does not import, so the report will not render here: {done.stderr.strip()[-300:]}")


RAW_RECORDS = ("results/runs", "results/sweep", "results/probes", "results/config.yaml", "logs")
PACK_ELSEWHERE = "results/pack-elsewhere.sh"


def keep_raw_records() -> str:
    """Tar the raw records and logs, with a script to render and pack them elsewhere: for a failed render or pack."""
    present = [name for name in RAW_RECORDS if (ROOT / name).exists()]
    if not (ROOT / "results" / "runs").is_dir():
        return "No record was written."
    try:
        arguments = " ".join(shlex.quote(part) for part in render_command(RESULTS))
    except ArchiveError as err:
        return f"No record to pack: {err}"
    (ROOT / PACK_ELSEWHERE).write_text(
        "#!/bin/sh\n# Made by scripts/gpu_study.py: render the report of these records, then archive them.\n"
        f'set -e\ncd "$(dirname "$0")"\nPYTHONPATH=.. python3 ../{arguments}\n'
        'cd .. && PYTHONPATH=. python3 -m tiny_mlp_bench archive "$@"\n'
    )
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    tarball = ROOT / f"gpu-study-records-{stamp}.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        for name in [*present, PACK_ELSEWHERE]:
            tar.add(ROOT / name, arcname=name)
    return (
        f"The raw records and logs are in {tarball.name}: on any machine with the project, run "
        f"`tar -xzf {tarball.name}` in a checkout of the same commit, then `sh {PACK_ELSEWHERE}` there, "
        "which renders the report and archives the study (add --allow-modified where it ran from a modified tree)"
    )


def render_what_finished(python: Path, deadline: float | None) -> None:
    """The report of the records in results/, as render_report would make it had they been all."""
    try:
        command = render_command(RESULTS)
        render(ROOT, RESULTS, command, python=str(python), timeout=seconds_left(deadline))
    except ArchiveError as err:
        raise StudyError(f"nothing to archive: {err}") from err


def pack(python: Path, name: str | None, allow_modified: bool, deadline: float | None) -> Path:
    """`tiny-mlp-bench archive` in the study's Python within the time limit: stopped at it, it leaves no archive."""
    before = set(ARCHIVES.iterdir()) if ARCHIVES.is_dir() else set()
    command = [str(python), "-m", "tiny_mlp_bench", "archive"]
    command += [*(["--name", name] if name else []), *(["--allow-modified"] if allow_modified else [])]
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=seconds_left(deadline))
    except subprocess.TimeoutExpired:
        for left in set(ARCHIVES.iterdir()) - before:  # the partial folder the stopped pack was filling
            shutil.rmtree(left, ignore_errors=True)
        raise StudyError(
            "packing the archive ran past the time limit: the records and the report are in results/; "
            "archive them with `make archive`, or give --archive-reserve more seconds"
        ) from None
    if done.returncode != 0:
        raise StudyError(f"archiving failed: {done.stderr.strip()[-1500:]}")
    (folder,) = set(ARCHIVES.iterdir()) - before
    return folder


def check(args) -> int:
    """The pre-flight: every check the study makes before its first job, each problem said; 1 where any stops it."""
    problems = []
    try:
        check_tree(check_checkout(args.kit), args.allow_modified, args.kit)
    except StudyError as err:
        problems.append(str(err))
    try:
        python = args.python or prepare_environment(args.kit)[0]
        check_needs(python)
        problems += preflight(python, args.allow_no_gpu)[1]
    except StudyError as err:
        problems.append(str(err))
    for problem in problems:
        say(f"would stop the study: {problem}")
    say(f"pre-flight: {len(problems) or 'nothing'} {'stops' if not problems else 'would stop'} the study")
    return 1 if problems else 0


def main() -> int:
    t0 = time.monotonic()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "gpu.yaml", help="default: config/gpu.yaml")
    parser.add_argument("--kit", type=Path, default=KIT, help="the carried wheels (default: wheelhouse/gpu-kit)")
    parser.add_argument("--time-limit", type=float, help="seconds the whole command may take, set-up to archive")
    parser.add_argument(
        "--archive-reserve",
        type=float,
        default=runner.ARCHIVE_RESERVE_S,
        help=f"seconds of the time limit kept for the report and the archive (default {runner.ARCHIVE_RESERVE_S})",
    )
    parser.add_argument("--name", help="the archive's folder name (default: <date>-<gpu model>)")
    parser.add_argument("--allow-modified", action="store_true", help="run from a modified tree; the archive says so")
    parser.add_argument(
        "--python", type=Path, help="an interpreter that has everything the study needs: no .venv-gpu, no kit"
    )
    parser.add_argument("--allow-no-gpu", action="store_true", help="run even where torch sees no GPU (for tests)")
    parser.add_argument(
        "--check",
        action="store_true",
        help="the pre-flight only: set up, say what the study would use, and exit 1 naming what would stop it",
    )
    args = parser.parse_args()
    if args.time_limit is not None and args.time_limit <= args.archive_reserve:
        parser.error(f"--time-limit must be more than --archive-reserve ({args.archive_reserve:g} s)")
    if args.check:
        return check(args)
    until = None if args.time_limit is None else t0 + args.time_limit - args.archive_reserve
    try:
        commit = check_checkout(args.kit)
        modified = check_tree(commit, args.allow_modified, args.kit)
        python, pip_check = (args.python, None) if args.python else prepare_environment(args.kit)
        check_needs(python)
        found, problems = preflight(python, args.allow_no_gpu)
        if problems:
            raise StudyError("; ".join(problems) + " (`gpu_study.py --check` says what the study would use)")
        gpu = found["torch"]["gpu"]
        say(f"commit {commit[:12]}, {gpu or 'no GPU'}, config {args.config}")
        warm_matplotlib(python)
        timing = run_study(python, args.config, until, t0, gpu, pip_check)
        deadline = None if args.time_limit is None else t0 + args.time_limit
        try:
            render_what_finished(python, deadline)
            folder = pack(python, args.name, bool(modified), deadline)
        except (StudyError, ArchiveError, OSError, subprocess.SubprocessError) as err:
            raise StudyError(f"{err}. {keep_raw_records()}") from err
        readme.write(folder, timing, modified)
    except StudyError as err:
        say(f"error: {err}")
        return 1
    except KeyboardInterrupt:
        say("interrupted: nothing was archived; running the command again redoes only what is missing")
        return 130
    failed = [job["name"] for job in timing["jobs"] if job["outcome"] == "failed"]
    say(f"done in {time.monotonic() - t0:.1f} s: {folder.relative_to(ROOT)}")
    if failed:
        say(f"{len(failed)} jobs failed ({', '.join(failed)}): their logs are quoted in {folder.name}/README.md")
    return 1 if failed else 0
