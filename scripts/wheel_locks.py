"""Exact locks, a hash for every file, of the environments that are not this machine's.

The local environment and the CPU images install from requirements/runtime.txt, which holds
torch's CPU build where the project is developed. Three environments need other sets:

- torch-cuda, keras-cuda: the CUDA images (`make images`). On top of their requirement lists,
  torch's nvidia-* wheels and JAX's CUDA plugin, or TensorFlow's CUDA libraries, for CPython 3.11.
- gpu-kit: what a GPU machine without a package registry lacks (scripts/gpu_study.py installs
  it there from wheelhouse/gpu-kit/), for CPython 3.12: requirements/gpu-kit.in, less what such a
  machine already has (requirements/gpu-present.txt) and everything that needs.

pip resolves each on PyPI alone, for manylinux x86_64 whatever machine runs this, held to
runtime.txt's versions wherever runtime.txt pins a package; resolving reads PyPI's metadata
files, no wheel is downloaded. A package PyPI has only as a source archive is locked by that
archive's hash and built into a pure-Python wheel when the kit is fetched.

  python scripts/wheel_locks.py lock [TARGET ...]    (make lock-cuda, make lock-gpu-kit)
  python scripts/wheel_locks.py check [TARGET ...]   exit 1 when pip, held to a committed lock's versions,
                                                     does not resolve to exactly that lock: a package
                                                     missing or extra, or a hash not PyPI's
  python scripts/wheel_locks.py fetch-kit            (make gpu-kit) the kit's files into wheelhouse/gpu-kit/
"""

import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "requirements"
KIT_FOLDER = ROOT / "wheelhouse" / "gpu-kit"
# The device tool that lends the project a GPU carries at most 64 MiB a call, the checkout included.
KIT_BUDGET_BYTES = 64 * 2**20
# Debian 12 (the images' base) has glibc 2.36, as do the GPU machines seen: every manylinux tag up
# to it installs there. The legacy names too: some wheels carry only those (pip matches tags as written).
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(5, 37)]
PLATFORMS += ["manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64"]
# On PyPI only as source archives (no wheel for any Python): built here into wheels.
SOURCE_ONLY = ("connection_pool",)


@dataclass(frozen=True)
class Target:
    python: str
    requirements: tuple[str, ...]  # files (relative to the repository) and requirement strings
    lock: str
    present: str | None = None  # a list of what the target machine has: left out of the lock, with their needs

    def lock_path(self) -> Path:
        return REQUIREMENTS / self.lock


TARGETS = {
    "torch-cuda": Target("3.11", ("docker/torch.requirements.txt", "jax[cuda13]"), "torch-cuda.txt"),
    "keras-cuda": Target("3.11", ("docker/keras.requirements.txt", "tensorflow[and-cuda]"), "keras-cuda.txt"),
    "gpu-kit": Target("3.12", ("requirements/gpu-kit.in",), "gpu-kit.txt", present="requirements/gpu-present.txt"),
}


def pip_env() -> dict[str, str]:
    """PyPI alone: no config file, find-links or extra index of this machine's pip may add wheels."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k == "PIP_CERT"}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], env=pip_env(), check=True)


def platform_args(python: str) -> list[str]:
    return ["--only-binary=:all:", "--python-version", python, *[a for p in PLATFORMS for a in ("--platform", p)]]


def requirement_args(entries) -> list[str]:
    return [arg for entry in entries for arg in (["-r", str(ROOT / entry)] if "/" in entry else [entry])]


def runtime_pin(name: str) -> str:
    pins = (REQUIREMENTS / "runtime.txt").read_text()
    found = re.search(rf"^{re.escape(name)}==(\S+)$", pins, re.MULTILINE | re.IGNORECASE)
    if not found:
        sys.exit(f"error: requirements/runtime.txt pins no {name}, which SOURCE_ONLY lists")
    return found.group(1)


def build_source_only(scratch: Path) -> dict[str, str]:
    """Each SOURCE_ONLY package at runtime.txt's version: its archive's hash; its wheel into scratch/wheels."""
    hashes = {}
    for name in SOURCE_ONLY:
        pin = f"{name}=={runtime_pin(name)}"
        pip("download", "--quiet", "--no-deps", "--no-binary=:all:", "-d", str(scratch / "sdists"), pin)
        (archive,) = (scratch / "sdists").glob(f"{name.replace('_', '?')}-*")
        hashes[canonical(name)] = hashlib.sha256(archive.read_bytes()).hexdigest()
        pip("wheel", "--quiet", "--no-deps", "-w", str(scratch / "wheels"), str(archive))
    return hashes


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def resolve(entries, python: str, scratch: Path, tag: str, constraints=()) -> list[dict]:
    """pip's installation report for ``entries`` on ``python``: one item per package."""
    report = scratch / f"{tag}.json"
    pip(
        "install",
        "--dry-run",
        "--ignore-installed",
        "--quiet",
        "--index-url",
        "https://pypi.org/simple",
        "--find-links",
        str(scratch / "wheels"),
        *platform_args(python),
        "--target",
        str(scratch / "target"),
        "--report",
        str(report),
        *[arg for path in (REQUIREMENTS / "runtime.txt", *constraints) for arg in ("-c", str(path))],
        *requirement_args(entries),
    )
    return json.loads(report.read_text())["install"]


def lock_text(name: str, target: Target, held: Path | None = None) -> str:
    """The lock pip resolves for ``target`` today; with ``held``, at that lock's versions."""
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        (scratch / "wheels").mkdir()
        source_hashes = build_source_only(scratch)
        constraints = []
        if held:  # its versions alone: pip refuses hashes in a constraints file
            constraints.append(scratch / "held.txt")
            constraints[0].write_text("\n".join(pins(held)) + "\n")
        installs = resolve(target.requirements, target.python, scratch, "all", constraints)
        present = set()
        if target.present:
            present = {canonical(i["metadata"]["name"]) for i in resolve([target.present], target.python, scratch, "p")}
    lines = [
        f"# Generated by 'python scripts/wheel_locks.py lock {name}': {', '.join(target.requirements)}",
        f"# resolved on PyPI for CPython {target.python} on manylinux x86_64 at runtime.txt's versions"
        + (f", less {target.present} and its needs." if target.present else "."),
    ]
    for item in sorted(installs, key=lambda item: canonical(item["metadata"]["name"])):
        package, version = canonical(item["metadata"]["name"]), item["metadata"]["version"]
        if package in present:
            continue
        digest = source_hashes.get(package) or item["download_info"]["archive_info"]["hashes"]["sha256"]
        lines.append(f"{package}=={version} --hash=sha256:{digest}")
    return "\n".join(lines) + "\n"


def pins(lock: Path) -> list[str]:
    """name==version of every package in a lock."""
    return re.findall(r"^(\S+==\S+)", lock.read_text(), re.MULTILINE)


def fetch_kit() -> None:
    """The GPU kit's wheels into wheelhouse/gpu-kit/, checked against the lock's hashes, with the lock
    and a git bundle of HEAD."""
    lock = TARGETS["gpu-kit"].lock_path()
    shutil.rmtree(KIT_FOLDER, ignore_errors=True)  # no wheel of an older lock stays
    KIT_FOLDER.mkdir(parents=True)
    source_only = {canonical(n) for n in SOURCE_ONLY}
    entries = [line for line in lock.read_text().splitlines() if line and not line.startswith("#")]
    source = [e for e in entries if canonical(e.split("==")[0]) in source_only]
    with tempfile.TemporaryDirectory() as scratch_dir:
        # pip checks every file against its hash, as a fully hashed requirements file makes it.
        binary_list, source_list = Path(scratch_dir) / "binary.txt", Path(scratch_dir) / "source.txt"
        binary_list.write_text("".join(f"{e}\n" for e in entries if e not in source))
        source_list.write_text("".join(f"{e}\n" for e in source))
        common = ["--quiet", "--no-deps", "--require-hashes", "--index-url", "https://pypi.org/simple"]
        platform = platform_args(TARGETS["gpu-kit"].python)
        pip("download", *common, *platform, "-d", str(KIT_FOLDER), "-r", str(binary_list))
        if source:
            pip("wheel", *common, "--no-binary=:all:", "-w", str(KIT_FOLDER), "-r", str(source_list))
    (KIT_FOLDER / "gpu-kit.txt").write_text("\n".join(pins(lock)) + "\n")
    # The checkout's history, for a GPU machine the repository reaches without its .git (gpu_study.py).
    subprocess.run(
        ["git", "-C", str(ROOT), "bundle", "create", "-q", str(KIT_FOLDER / "source.bundle"), "HEAD"], check=True
    )
    size = sum(p.stat().st_size for p in KIT_FOLDER.iterdir())
    print(f"wheelhouse/gpu-kit/: {len(entries)} packages, {size / 2**20:.1f} MiB", file=sys.stderr)
    if size > KIT_BUDGET_BYTES:
        print(f"warning: more than the {KIT_BUDGET_BYTES // 2**20} MiB the device tool carries a call", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["lock", "check", "fetch-kit"])
    parser.add_argument("targets", nargs="*", help=f"of {', '.join(TARGETS)} (default: all)")
    args = parser.parse_args()
    if unknown := [t for t in args.targets if t not in TARGETS]:
        parser.error(f"no lock target {', '.join(unknown)}: the targets are {', '.join(TARGETS)}")
    if args.action == "fetch-kit":
        return fetch_kit()
    stale = []
    for name in args.targets or TARGETS:
        target = TARGETS[name]
        print(f"resolving {name} on PyPI for CPython {target.python}", file=sys.stderr)
        path = target.lock_path()
        # A check holds pip to the lock's versions: a newer release on PyPI does not make it stale.
        text = lock_text(name, target, held=path if args.action == "check" and path.exists() else None)
        if args.action == "lock":
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}: {text.count('--hash')} packages", file=sys.stderr)
        elif not path.exists() or path.read_text() != text:
            old = path.read_text().splitlines() if path.exists() else []
            sys.stdout.writelines(
                line + "\n" for line in difflib.unified_diff(old, text.splitlines(), str(path), "pip")
            )
            stale.append(name)
    if stale:
        names = ", ".join(stale)
        sys.exit(f"error: pip does not resolve to these locks: {names}; rewrite: python scripts/wheel_locks.py lock")


if __name__ == "__main__":
    main()
