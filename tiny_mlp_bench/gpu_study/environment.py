"""The study's Python on a GPU machine (scripts/gpu_study.py): .venv-gpu/, a virtual environment
over the machine's own packages (its torch and JAX built for CUDA, and the .pth hooks beside them)
with the carried kit installed into it, the check that it has everything the study needs, and what
the pre-flight reads of the machine itself: the CUDA toolkit and the GPU's state.

Standard library only, as the command that uses it: it runs on the machine's bare Python, before
any of the study's packages is installed. StudyError and say are the command's own, defined here
because a module cannot import them from a script.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
VENV = ROOT / ".venv-gpu"


class StudyError(Exception):
    """What stops the command, said in one line."""


def say(message: str) -> None:
    print(f"gpu_study: {message}", file=sys.stderr, flush=True)


def prepare_environment(kit: Path) -> Path:
    """.venv-gpu/ with the kit installed over the machine's own packages; its python."""
    lock = kit / "gpu-kit.txt"
    if not lock.is_file():
        raise StudyError(
            f"no kit at {kit} ({lock.name} missing): on a machine with PyPI run `make gpu-kit`, then copy "
            "wheelhouse/gpu-kit/ here with the repository"
        )
    made_for = json.loads((kit / "kit.json").read_text()).get("python") if (kit / "kit.json").is_file() else None
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if made_for and made_for != here:
        raise StudyError(
            f"the kit in {kit} is for CPython {made_for}, and this machine's Python is {here}: on a connected "
            f"machine run `make gpu-kit KIT_PYTHON={here}`, then copy wheelhouse/gpu-kit/ here again"
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
    see_machine_packages(python)
    find_machine_libraries()
    say(f"installing the kit: {len(lock.read_text().split())} packages from {kit}")
    # The machine's own pip (22.3 or newer) installs into the environment.
    # --isolated: the machine's own pip configuration (an index, a proxy, a constraint) cannot reach the
    # offline install.
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--isolated", "--disable-pip-version-check"]
    pip += ["--no-input"]
    if subprocess.run([*pip, "--version"], capture_output=True).returncode != 0:
        raise StudyError(f"{sys.executable} has no pip that installs into another environment (pip 22.3 or newer)")
    # The kit whole into the environment, even where the machine has a package at the same version:
    # the study then runs the kit's, and pip never touches the machine's own.
    offline = ["--no-index", "--no-deps", "--ignore-installed", "--find-links", str(kit)]
    install = subprocess.run(
        [*pip, "install", "--quiet", *offline, "-r", str(lock)],
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


def see_machine_packages(python: Path) -> None:
    """Make the new environment see every package this Python sees. --system-site-packages links the
    base interpreter's site-packages only: where this Python is itself a virtual environment (a GPU
    machine's torch often lives in one), its packages would be invisible without this .pth file, which
    site.py runs at start-up. Each of its lines adds one of this Python's site-packages with
    site.addsitedir, after the kit's own, which also runs the .pth files there: a package that takes
    over another through one (numba-cuda replaces numba.cuda so) is then the one the study imports."""
    import site

    done = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise StudyError(f"{python} does not start: {done.stderr.strip()[-500:]}")
    own = Path(done.stdout.strip())
    lines = "".join(f"import site; site.addsitedir({path!r})\n" for path in site.getsitepackages())
    (own / "machine-packages.pth").write_text(lines)


def cuda_wheel_libraries(site_packages: list[str]) -> list[Path]:
    """The library folders of the CUDA wheels in ``site_packages`` (nvidia/*/lib and lib64: NVRTC,
    NVVM, the runtime), in the order found."""
    return [
        folder
        for root in map(Path, site_packages)
        for folder in sorted((root / "nvidia").glob("*/lib*"))
        if folder.name in ("lib", "lib64") and folder.is_dir()
    ]


def find_machine_libraries() -> None:
    """Put this Python's CUDA wheel libraries on LD_LIBRARY_PATH, which every process the study starts
    inherits. cuda-pathfinder, which numba-cuda asks for NVRTC at every compile, searches the running
    environment's site.getsitepackages() only: in a venv made over this Python, that list lacks this
    Python's own, so a library this Python finds would be missing in the study's venv."""
    import site

    found = [str(folder) for folder in cuda_wheel_libraries(site.getsitepackages())]
    if found:
        before = [part for part in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if part]
        os.environ["LD_LIBRARY_PATH"] = os.pathsep.join([*found, *(p for p in before if p not in found)])
        say(f"this machine's CUDA wheel libraries for the study's venv (LD_LIBRARY_PATH): {', '.join(found)}")


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


# Where a toolkit keeps libNVVM: an installed toolkit under nvvm/lib64; one assembled from CUDA 13's
# wheels under lib/.
NVVM_FOLDERS = ("nvvm/lib64", "lib", "lib64")


def cuda_toolkit(environ=os.environ, usual=Path("/usr/local")) -> tuple[Path | None, str]:
    """A CUDA toolkit with libNVVM, which numba-cuda compiles the floor kernel with, and how it was
    found; (None, where it was looked for) where there is none. numba-cuda finds NVVM by itself in
    an NVVM wheel or through CUDA_HOME, but does not infer a toolkit from a CUDA runtime that came
    in wheels, as a torch environment's does: the study sets CUDA_HOME to what this finds."""
    candidates = [(Path(environ[name]), name) for name in ("CUDA_HOME", "CUDA_PATH") if environ.get(name)]
    if nvcc := shutil.which("nvcc", path=environ.get("PATH")):
        candidates.append((Path(nvcc).resolve().parent.parent, f"nvcc ({nvcc})"))
    versions = sorted(usual.glob("cuda-*"), key=toolkit_version, reverse=True)  # the newest first: 13.0 before 9.2
    candidates += [(root, str(root)) for root in [usual / "cuda", *versions]]
    for root, how in candidates:
        if any(any((root / where).glob("libnvvm.so*")) for where in NVVM_FOLDERS):
            return root, how
    places = " or ".join(f"{where}/libnvvm.so" for where in NVVM_FOLDERS)
    return None, f"CUDA_HOME, CUDA_PATH, nvcc's toolkit and /usr/local/cuda*: none has {places}"


def toolkit_version(root: Path) -> tuple[int, ...]:
    """``cuda-12.8`` as (12, 8), so that toolkits sort by version, not by their names' letters."""
    return tuple(int(part) for part in re.findall(r"\d+", root.name))


# What nvidia-smi says of each GPU's state before a study and around each cuda job: the clocks it runs
# at against its most, its performance state, power and temperature, and why its clocks are held down.
GPU_FIELDS = (
    "name,pstate,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active"
)


def gpu_state() -> str:
    """nvidia-smi's account of each GPU, one line each, or why there is none."""
    for fields in (GPU_FIELDS, GPU_FIELDS.replace("clocks_event_reasons", "clocks_throttle_reasons")):
        try:
            done = subprocess.run(
                ["nvidia-smi", f"--query-gpu={fields}", "--format=csv"], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.SubprocessError) as err:
            return f"no nvidia-smi here ({err})"
        if done.returncode == 0:  # older drivers know the reasons by their older name only
            return done.stdout.strip()
    return f"nvidia-smi failed: {done.stderr.strip() or done.stdout.strip()}"


def gpu_readings() -> list[dict[str, str]] | str:
    """gpu_state() as one dict per GPU, field to value, or why there is none: what a cuda job's outcome
    keeps of the GPU before and after it (its clocks, power state and why they are held down)."""
    said = gpu_state()
    lines = said.splitlines()
    if len(lines) < 2 or "," not in lines[0]:
        return said
    fields = [field.strip() for field in lines[0].split(",")]
    return [dict(zip(fields, (value.strip() for value in line.split(",")), strict=False)) for line in lines[1:]]
