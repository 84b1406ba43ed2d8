"""The study's Python on a GPU machine: .venv-gpu/, a virtual environment over the machine's own packages with the
carried kit installed into it, the check that it has what the study needs, and the CUDA toolkit and GPU state."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tiny_mlp_bench.machine import cpu_identity, virtualization

ROOT = Path(__file__).resolve().parents[2]  # the repository
VENV = ROOT / ".venv-gpu"


class StudyError(Exception):
    """What stops the command, said in one line."""


def say(message: str) -> None:
    print(f"gpu_study: {message}", file=sys.stderr, flush=True)


def prepare_environment(kit: Path) -> tuple[Path, dict[str, list[str]]]:
    """.venv-gpu/ with the kit over the machine's own packages: its python, and pip check's verdict (judge)."""
    lock = kit / "gpu-kit.txt"
    if not lock.is_file():
        raise StudyError(
            f"no kit at {kit} ({lock.name} missing): on a machine with PyPI run `make gpu-kit`, then copy "
            "wheelhouse/gpu-kit/ here with the repository"
        )
    about = json.loads((kit / "kit.json").read_text()) if (kit / "kit.json").is_file() else {}
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if about.get("python", here) != here:
        raise StudyError(
            f"the kit in {kit} is for CPython {about['python']}, and this machine's Python is {here}: on a connected "
            f"machine run `make gpu-kit KIT_PYTHON={here}`, then copy wheelhouse/gpu-kit/ here again"
        )
    python = VENV / "bin" / "python"
    # Installed once per kit and machine packages: a second command reuses it; any change makes it anew.
    marker, installed_for = VENV / "kit-installed.json", installation_key(lock, about)
    reused = marker.is_file() and json.loads(marker.read_text()).get("key") == installed_for
    if not reused:
        shutil.rmtree(VENV, ignore_errors=True)
        make_venv()
    see_machine_packages(python)
    find_machine_libraries()
    # The machine's pip (22.3+) installs into the venv; --isolated keeps its config (index, proxy) off the install.
    pip = [sys.executable, "-m", "pip", "--isolated", "--disable-pip-version-check", "--no-input"]
    into_venv = [*pip, "--python", str(python)]
    if subprocess.run([*into_venv, "--version"], capture_output=True).returncode != 0:
        raise StudyError(f"{sys.executable} has no pip that installs into another environment (pip 22.3 or newer)")
    before = pip_check(pip)  # the machine's own packages, as its python3 sees them
    carried = {canonical(name) for name in about.get("carried", [])}
    pins = {canonical(pin.split("==")[0]): pin for pin in lock.read_text().split()}
    if reused:
        candidates = json.loads(marker.read_text())["carried_installed"]
        say(f"the kit is in {VENV.name}/ already, for these machine packages")
    else:
        core = [pin for name, pin in pins.items() if name not in carried]
        say(
            f"installing the kit: {len(core)} packages from {kit}"
            + (f", then of its {len(carried)} carried ones those the machine lacks or has too old" if carried else "")
        )
        install(into_venv, kit, core)
        # A carried package only where the machine's is missing or outside what a package asks.
        wanted = {problem_key(line)[1] for line in pip_check(into_venv)}
        candidates = [pin for name, pin in pins.items() if name in carried & wanted]
        if candidates:
            say(f"installing the kit's carried {', '.join(candidates)}: the machine's own does not suit")
            install(into_venv, kit, candidates)
        marker.write_text(json.dumps({"key": installed_for, "carried_installed": candidates}) + "\n")
    verdict = judge(before, pip_check(into_venv), study_closure(python), candidates)
    for line in verdict_lines(verdict):
        say(line)
    if verdict["introduced"] or verdict["unresolved"]:
        stops = verdict["introduced"] + verdict["unresolved"]
        raise StudyError(
            f"pip check: {len(stops)} problems the study cannot run with ({'; '.join(stops[:8])}). Where the kit "
            "brought one, list the package in requirements/gpu-present.txt if this machine has it; where a package "
            "the study uses lacks something, add it to requirements/gpu-kit.in; then run `make lock-gpu-kit gpu-kit` "
            "on a connected machine and copy wheelhouse/gpu-kit/ here again"
        )
    return python, verdict


def make_venv() -> None:
    say(f"creating {VENV.name}/ over this machine's packages ({sys.executable}, Python {sys.version.split()[0]})")
    # Without a pip of its own: a Python without ensurepip (Debian's, without python3-venv) can make it.
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(VENV)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        raise StudyError(f"{sys.executable} cannot make {VENV.name}/: {made.stderr.strip()[-500:]}")


def installation_key(lock: Path, about: dict) -> str:
    """What an installed kit depends on: the kit, this Python and every package it sees."""
    import importlib.metadata

    machine = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    parts = [lock.read_text(), json.dumps(about, sort_keys=True), sys.executable, *machine]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def install(pip: list[str], kit: Path, pins: list[str]) -> None:
    """``pins`` from the kit, even where the machine has the same version: the study runs the kit's."""
    offline = ["--no-index", "--no-deps", "--ignore-installed", "--find-links", str(kit)]
    done = subprocess.run([*pip, "install", "--quiet", *offline, *pins], capture_output=True, text=True)
    if done.returncode != 0:
        raise StudyError(f"the kit did not install (is it for this Python?): {done.stderr.strip()[-800:]}")


def pip_check(pip: list[str]) -> list[str]:
    """pip check's problems, one line each."""
    done = subprocess.run([*pip, "check"], capture_output=True, text=True)
    lines = done.stdout.splitlines()
    return [line for line in lines if line.strip() and line != "No broken requirements found."]


def problem_key(line: str) -> tuple[str, str]:
    """A pip check line as (package that has it, package it requires), whatever the versions; else keyed on itself."""
    missing = re.match(r"(\S+) \S+ requires (\S+), which is not installed", line)
    conflict = re.match(r"(\S+) \S+ has requirement .+, but you have (\S+) \S+$", line)
    if found := missing or conflict:
        return canonical(found[1]), canonical(found[2])
    return canonical(line.split()[0]), line


def judge(before: list[str], after: list[str], used: set[str], carried: list[str]) -> dict[str, list[str]]:
    """pip check's problems, by what the study does: it stops on "introduced" (the kit brought them) and "unresolved"
    (of packages it uses); "left" ones are of packages it does not use, "resolved" ones the kit mended."""
    had = {problem_key(line) for line in before}
    now = {problem_key(line): line for line in after}
    return {
        "introduced": [line for key, line in now.items() if key not in had],
        "unresolved": [line for key, line in now.items() if key in had and key[0] in used],
        "left": [line for key, line in now.items() if key in had and key[0] not in used],
        "resolved": [line for line in before if problem_key(line) not in now],
        "carried": carried,
    }


def verdict_lines(verdict: dict[str, list[str]]) -> list[str]:
    """What the study does about each problem pip check found, one line each."""
    carried = {canonical(pin.split("==")[0]): pin for pin in verdict["carried"]}
    said = {
        "left": "left as it is: none of the packages the study uses",
        "introduced": "stops the study: the kit brought it",
        "unresolved": "stops the study: a package the study uses, which the kit cannot mend",
    }
    lines = [
        f"  {line} -> resolved by the kit's "
        + (f"carried {carried[need]}" if (need := problem_key(line)[1]) in carried else "packages")
        for line in verdict["resolved"]
    ]
    lines += [f"  {line} -> {said[kind]}" for kind in said for line in verdict[kind]]
    head = f"pip check: {len(lines) or 'no'} problems" + (", and what the study does about each" if lines else "")
    return [head, *lines]


def see_machine_packages(python: Path) -> None:
    """Make the new environment see exactly the packages this Python sees, via a .pth of site.addsitedir lines.
    Not --system-site-packages: that links the base interpreter's; addsitedir also runs .pth hooks (numba-cuda's)."""
    import site

    done = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise StudyError(f"{python} does not start: {done.stderr.strip()[-500:]}")
    own = Path(done.stdout.strip())
    user = [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    lines = "".join(f"import site; site.addsitedir({path!r})\n" for path in [*user, *site.getsitepackages()])
    (own / "machine-packages.pth").write_text(lines)


def cuda_wheel_libraries(site_packages: list[str]) -> list[Path]:
    """The library folders of the CUDA wheels in ``site_packages`` (nvidia/*/lib and lib64), in the order found."""
    return [
        folder
        for root in map(Path, site_packages)
        for folder in sorted((root / "nvidia").glob("*/lib*"))
        if folder.name in ("lib", "lib64") and folder.is_dir()
    ]


def find_machine_libraries() -> None:
    """Put this Python's CUDA wheel libraries on LD_LIBRARY_PATH for the study: cuda-pathfinder (numba-cuda's NVRTC
    lookup) searches only the venv's own site-packages, which lack this Python's."""
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


# The study's needs and everything they require, as installed (requirements behind an extra not followed).
CLOSURE_CODE = """import re, sys, importlib.metadata as m
canonical = lambda name: re.sub(r"[-_.]+", "-", name).lower()
found, todo = set(), [canonical(name) for name in sys.argv[1:]]
while todo:
    name = todo.pop()
    if name in found:
        continue
    try:
        requires = m.requires(name) or []
    except m.PackageNotFoundError:
        continue
    found.add(name)
    todo += [canonical(re.match(r"[A-Za-z0-9._-]+", r)[0]) for r in requires if "extra" not in r.partition(";")[2]]
print(" ".join(sorted(found)))"""


def study_closure(python: Path) -> set[str]:
    """The packages the study uses in ``python``: its needs (requirements/gpu-kit.in) and all they require."""
    done = subprocess.run([str(python), "-c", CLOSURE_CODE, *study_needs()], capture_output=True, text=True)
    if done.returncode != 0:
        raise StudyError(f"{python} cannot list what the study's packages require: {done.stderr.strip()[-500:]}")
    return set(done.stdout.split())


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


# An installed toolkit keeps libNVVM under nvvm/lib64; one assembled from CUDA 13's wheels under lib/.
NVVM_FOLDERS = ("nvvm/lib64", "lib", "lib64")


def cuda_toolkit(environ=os.environ, usual=Path("/usr/local")) -> tuple[Path | None, str]:
    """A CUDA toolkit with libNVVM and how it was found, or (None, where it was looked for). numba-cuda does not
    infer a toolkit from a CUDA runtime in wheels (as torch's is), so the study sets CUDA_HOME to this."""
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


# Each GPU's state before a study and around each cuda job, including why its clocks are held down.
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
    """gpu_state() as one dict per GPU, field to value, or the string saying why there is none."""
    said = gpu_state()
    lines = said.splitlines()
    if len(lines) < 2 or "," not in lines[0]:
        return said
    fields = [field.strip() for field in lines[0].split(",")]
    return [dict(zip(fields, (value.strip() for value in line.split(",")), strict=False)) for line in lines[1:]]


def core_siblings(cores: set[int], sysfs: Path = Path("/sys/devices/system/cpu")) -> dict[int, str]:
    """Each core's hyper-thread siblings as the kernel lists them (``0,8`` or ``0-1``); "" where unknown."""
    found = {}
    for core in sorted(cores):
        path = sysfs / f"cpu{core}" / "topology" / "thread_siblings_list"
        found[core] = path.read_text().strip() if path.is_file() else ""
    return found


def parse_core_list(text: str) -> set[int]:
    """``0-3,8`` as the set of cores it names."""
    cores = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        cores.update(range(int(first), int(last or first) + 1))
    return cores


def physical_cores(cores: set[int], siblings: dict[int, str]) -> list[frozenset[int]]:
    """``cores`` grouped by physical core, in order of first CPU; a CPU of unknown siblings is a core of its own."""
    groups: dict[frozenset[int], None] = {}
    for cpu in sorted(cores):
        groups.setdefault(frozenset(parse_core_list(siblings.get(cpu, "")) & cores) or frozenset({cpu}), None)
    return list(groups)


def core_list(cores: set[int]) -> str:
    """Cores as ranges, as taskset and /proc/self/status write them: 0-7,12."""
    runs, ordered = [], sorted(cores)
    for core in ordered:
        if runs and core == runs[-1][1] + 1:
            runs[-1][1] = core
        else:
            runs.append([core, core])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def command_output(command: list[str]) -> str:
    """What a command prints, or why it printed nothing."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as err:
        return f"{command[0]} did not run: {err}"
    return done.stdout.strip() if done.returncode == 0 else f"{command[0]} failed: {done.stderr.strip()}"


def node_record(sysfs: Path = Path("/sys/devices/system/cpu"), proc: Path = Path("/proc")) -> dict:
    """What this node is, for the study's log: studies of one node are pooled as blocks, and whether two GPU
    studies were the same node (its boot id), the same CPUs (their family, model and how they pair into cores, which a
    microVM's guest may not see) and the same GPU (its UUID and driver) is read from here."""
    cores = os.sched_getaffinity(0)
    try:
        boot_id = (proc / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except OSError as err:
        boot_id = f"unreadable: {err}"
    query = ["nvidia-smi", "--query-gpu=name,uuid,driver_version,pci.bus_id", "--format=csv,noheader"]
    return {
        "boot_id": boot_id,
        "cpu": cpu_identity(),
        "virtualization": virtualization(),
        "logical_cpus": sorted(cores),
        "thread_siblings": {str(core): found for core, found in core_siblings(cores, sysfs).items()},
        "lscpu": command_output(["lscpu"]),
        "gpus": command_output(query),
    }
