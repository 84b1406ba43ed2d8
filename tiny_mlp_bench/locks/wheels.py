"""Exact locks, a hash for every file, of the environments that are not this machine's."""

import argparse
import concurrent.futures
import dataclasses
import difflib
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

from tiny_mlp_bench import CHECKOUT
from tiny_mlp_bench.generated_docs.markers import between, write_or_check
from tiny_mlp_bench.locks.pip_index import GLIBC_MINOR, index_name, pip, platform_args

ROOT = CHECKOUT
REQUIREMENTS = ROOT / "requirements"
KIT_FOLDER = ROOT / "wheelhouse" / "gpu-kit"
# The kit's size cap (fetch-kit --max-mib): a node without a registry is often reached by one narrow copy. A kit past
# it almost always carries a large package the machine has (torch, jax, CUDA libraries) that the present file omits.
KIT_MAX_MIB = 64
# The files a kit folder holds: fetch-kit empties a folder of these alone, never one holding others.
KIT_FILES = ("gpu-kit.txt", "source.bundle", "kit.json")
# On PyPI only as source archives (no wheel for any Python): built here into wheels.
SOURCE_ONLY = ("connection_pool",)
# A source archive is built here only for pip to resolve against; a C extension that is optional is left out, so that
# the wheel is pure and resolves for any target's Python (the image builds the archive itself, extension and all).
PURE_BUILD_ENV = {"WRAPT_INSTALL_EXTENSIONS": "false"}
RUNTIME_LOCK = "requirements/runtime.txt"
# How a lock marks a carried candidate (a requirements file's comment: pip reads past it).
CARRIED_MARK = "  # carried"


@dataclass(frozen=True)
class LockTarget:
    python: str
    requirements: tuple[str, ...]  # files (relative to the repository) and requirement strings
    lock: str
    present: str | None = None  # a list of what the target machine has: left out of the lock, with their needs
    # Carried even where the machine has them, installed only where its own is missing or outside what a package
    # needs: the study's packages need versions a machine may lack (Snakemake: packaging < 26) ...
    carried: tuple[str, ...] = ()
    # ... and so are the pure-Python needs of the node's frameworks (torch's compiler imports setuptools).
    carried_needs_of: tuple[str, ...] = ()
    # Resolved at these files' versions: today's, except for a stack of another time.
    constraints: tuple[str, ...] = (RUNTIME_LOCK,)
    glibc_minor: int = GLIBC_MINOR  # of the Debian the target installs on
    # "name==version" of its packages on PyPI only as source archives; None: SOURCE_ONLY at runtime.txt's versions.
    source_only: tuple[str, ...] | None = None
    same_versions_as: str | None = None  # another target whose lock's versions this one keeps where they install

    def lock_path(self) -> Path:
        return REQUIREMENTS / self.lock


# The release sweep's images: TensorFlow alone (no torch) on Debian 11's Python 3.9, one release each, Keras 2 as that
# release keeps it. Each with the pins a user of its day got: numpy and protobuf below the majors the release was built
# against (and wrapt below 2), where its own requirements leave them open. Both ends keep the era study's versions.
# TensorFlow 2.5 and 2.6 pin these source archives (2.6 also clang 5.0's Python bindings).
OLD_TF_SOURCE_ONLY = ("termcolor==1.1.0", "wrapt==1.12.1")
RELEASE_TARGETS = {
    f"tf-{release}": LockTarget("3.9", pins, f"tf-{release}.txt", constraints=(), glibc_minor=31, **extra)
    for release, pins, extra in (
        ("2.5", ("tensorflow==2.5.0",), {"source_only": OLD_TF_SOURCE_ONLY, "same_versions_as": "era"}),
        ("2.6", ("tensorflow==2.6.5", "protobuf<3.20"), {"source_only": (*OLD_TF_SOURCE_ONLY, "clang==5.0")}),
        ("2.8", ("tensorflow==2.8.4", "numpy<1.24", "protobuf<3.20", "wrapt<2"), {"source_only": ()}),
        ("2.9", ("tensorflow==2.9.3", "numpy<1.24", "wrapt<2"), {"source_only": ()}),
        ("2.11", ("tensorflow==2.11.1", "numpy<1.24", "wrapt<2"), {"source_only": ()}),
        ("2.15", ("tensorflow==2.15.1",), {"source_only": ()}),
        ("2.16", ("tensorflow==2.16.2", "tf-keras~=2.16.0", "wrapt<2"), {"source_only": ()}),
        ("2.20", ("tensorflow==2.20.0", "tf-keras==2.20.1"), {"source_only": (), "same_versions_as": "newest-39"}),
    )
}

TARGETS = {
    # numba-cuda: numba's CUDA target, for the numpy fused rung's kernel on cuda, with the NVVM it compiles with.
    "torch-cuda": LockTarget(
        "3.11", ("docker/torch.requirements.txt", "jax[cuda13]", "numba-cuda[cu13]"), "torch-cuda.txt"
    ),
    "keras-cuda": LockTarget("3.11", ("docker/keras.requirements.txt", "tensorflow[and-cuda]"), "keras-cuda.txt"),
    # The oldest stack that installs on Debian 11's Python 3.9 (glibc 2.31): TensorFlow 2.5.0 pins termcolor and wrapt
    # at versions published as source archives alone.
    "era": LockTarget(
        "3.9",
        ("docker/era.requirements.txt",),
        "era.txt",
        constraints=(),
        glibc_minor=31,
        source_only=("termcolor==1.1.0", "wrapt==1.12.1"),
    ),
    # The newest releases with Python 3.9 wheels, on Debian 11's Python 3.9 and on Debian 12's Python 3.11.
    "newest-39": LockTarget(
        "3.9", ("docker/newest.requirements.txt",), "newest-39.txt", constraints=(), glibc_minor=31
    ),
    "newest-311": LockTarget(
        "3.11", ("docker/newest.requirements.txt",), "newest-311.txt", constraints=(), same_versions_as="newest-39"
    ),
    **RELEASE_TARGETS,
    "gpu-kit": LockTarget(
        "3.12",
        ("requirements/gpu-kit.in",),
        "gpu-kit.txt",
        present="requirements/gpu-present.txt",
        carried=("packaging", "typing-extensions"),
        carried_needs_of=("torch", "numpy", "jax", "numba-cuda"),
    ),
}


def requirement_args(entries) -> list[str]:
    return [arg for entry in entries for arg in (["-r", str(ROOT / entry)] if "/" in entry else [entry])]


def runtime_pin(name: str) -> str:
    pins = (REQUIREMENTS / "runtime.txt").read_text()
    found = re.search(rf"^{re.escape(name)}==(\S+)$", pins, re.MULTILINE | re.IGNORECASE)
    if not found:
        sys.exit(f"error: requirements/runtime.txt pins no {name}, which SOURCE_ONLY lists")
    return found.group(1)


def source_pins(target: LockTarget) -> tuple[str, ...]:
    if target.source_only is not None:
        return target.source_only
    return tuple(f"{name}=={runtime_pin(name)}" for name in SOURCE_ONLY)


def build_source_only(scratch: Path, source_only: tuple[str, ...]) -> dict[str, str]:
    """Each of ``source_only`` ("name==version"): its archive's hash; its wheel into scratch/wheels."""
    hashes = {}
    for pin in source_only:
        name = pin.split("==")[0]
        pip("download", "--quiet", "--no-deps", "--no-binary=:all:", "-d", str(scratch / "sdists"), pin)
        (archive,) = (scratch / "sdists").glob(f"{name.replace('_', '?')}-*")
        hashes[canonical(name)] = hashlib.sha256(archive.read_bytes()).hexdigest()
        pip("wheel", "--quiet", "--no-deps", "-w", str(scratch / "wheels"), str(archive), env=PURE_BUILD_ENV)
    return hashes


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def resolve(
    entries, python: str, scratch: Path, tag: str, constraints=(), glibc_minor: int = GLIBC_MINOR
) -> list[dict]:
    """pip's installation report for ``entries`` on ``python`` over ``glibc_minor``, at the ``constraints`` files'
    versions: one item per package."""
    report = scratch / f"{tag}.json"
    pip(
        "install",
        "--dry-run",
        # Where an index serves no wheel metadata of its own (PEP 658; some mirrors), pip would download each
        # whole wheel: gigabytes of CUDA libraries for each target, all at once. fast-deps reads a wheel's
        # metadata through HTTP range requests instead; where the index serves the metadata, pip uses that.
        # -qq: errors only, not a warning per target that the feature is experimental.
        "--use-feature=fast-deps",
        "-qq",
        "--ignore-installed",
        # Only the SOURCE_ONLY wheels built here: none of this machine's configured find-links.
        "--find-links",
        str(scratch / "wheels"),
        *platform_args(python, glibc_minor),
        "--target",
        str(scratch / "target"),
        "--report",
        str(report),
        *[arg for path in constraints for arg in ("-c", str(path))],
        *requirement_args(entries),
    )
    return json.loads(report.read_text())["install"]


def lock_text(name: str, target: LockTarget, held: Path | None = None) -> str:
    """The lock pip resolves for ``target`` today; with ``held``, at that lock's versions."""
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        (scratch / "wheels").mkdir()
        source_hashes = build_source_only(scratch, source_pins(target))
        constraints = [ROOT / path for path in target.constraints]
        for kept in (held, target.same_versions_as and TARGETS[target.same_versions_as].lock_path()):
            if kept:  # its versions alone: pip refuses hashes in a constraints file
                constraints.append(scratch / f"kept-{len(constraints)}.txt")
                constraints[-1].write_text("\n".join(pins(kept.read_text())) + "\n")
        entries = [*target.requirements, *target.carried_needs_of]
        installs = resolve(entries, target.python, scratch, "all", constraints, target.glibc_minor)
        present = set()
        if target.present:
            today = [ROOT / path for path in target.constraints]
            on_machine = resolve([target.present], target.python, scratch, "p", today, target.glibc_minor)
            present = {canonical(i["metadata"]["name"]) for i in on_machine}
    carried = set(map(canonical, target.carried)) | pure_needs(installs, target.carried_needs_of)
    # Says PyPI through a mirror of it too: a committed lock is the same whichever index resolved it.
    lines = [
        f"# Generated by 'tiny-mlp-bench locks lock {name}': {', '.join(target.requirements)}",
        f"# resolved on PyPI for CPython {target.python} on manylinux x86_64"
        + (f" over glibc 2.{target.glibc_minor}" if target.glibc_minor != GLIBC_MINOR else "")
        + (" at runtime.txt's versions" if RUNTIME_LOCK in target.constraints else "")
        + (f" at {TARGETS[target.same_versions_as].lock}'s versions" if target.same_versions_as else "")
        + (f", less {target.present} and its needs" if target.present else "")
        + (f" but {', '.join(target.carried)}" if target.carried else "")
        + (f" and the pure-Python needs of {', '.join(target.carried_needs_of)}" if target.carried_needs_of else "")
        + (f", each marked '{CARRIED_MARK.strip()}'." if carried else "."),
    ]
    for item in sorted(installs, key=lambda item: canonical(item["metadata"]["name"])):
        package, version = canonical(item["metadata"]["name"]), item["metadata"]["version"]
        if package in present and package not in carried:
            continue
        digest = source_hashes.get(package) or item["download_info"]["archive_info"]["hashes"]["sha256"]
        lines.append(f"{package}=={version} --hash=sha256:{digest}" + (CARRIED_MARK if package in carried else ""))
    return "\n".join(lines) + "\n"


def pure_needs(installs: list[dict], roots: tuple[str, ...]) -> set[str]:
    """The pure-Python packages (py3-none-any) ``roots`` require, transitively in pip's report; extras not followed."""
    by_name = {canonical(item["metadata"]["name"]): item for item in installs}
    found, todo = set(), [canonical(root) for root in roots]
    while todo:
        name = todo.pop()
        if name in found or name not in by_name:
            continue
        found.add(name)
        for text in by_name[name]["metadata"].get("requires_dist", []):
            requirement = Requirement(text)
            if "extra" not in str(requirement.marker or ""):
                todo.append(canonical(requirement.name))
    return {
        name
        for name in found - {canonical(root) for root in roots}
        if by_name[name]["download_info"]["url"].endswith("-none-any.whl")
    }


def carried_in(lock: str) -> list[str]:
    return [line.split("==")[0] for line in lock.splitlines() if line.endswith(CARRIED_MARK)]


def pins(lock: str) -> list[str]:
    """name==version of every package in a lock's text."""
    return re.findall(r"^(\S+==\S+)", lock, re.MULTILINE)


def kit_lock(python: str, present: Path) -> tuple[str, str]:
    """The kit's lock text and its source: the committed lock where both arguments are gpu-kit's, else resolved now."""
    target = TARGETS["gpu-kit"]
    if python == target.python and present == (ROOT / target.present).resolve():
        return target.lock_path().read_text(), str(target.lock_path().relative_to(ROOT))
    print(f"resolving the kit on {index_name()} for CPython {python}, less {shown(present)}", file=sys.stderr)
    # An absolute path: requirement_args reads an entry with a "/" as a file.
    target = dataclasses.replace(target, python=python, present=str(present))
    try:
        return lock_text("gpu-kit", target), "resolved at fetch time"
    except subprocess.CalledProcessError:
        sys.exit(f"error: pip resolves no kit for CPython {python} at runtime.txt's versions (its message above)")


def shown(path: Path) -> str:
    """``path`` relative to the repository where it lies inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def fetch_kit(python: str, into: Path, present: Path, max_mib: int) -> None:
    """The GPU kit's wheels for CPython ``python`` into ``into``, checked against the lock's hashes,
    with the lock's pins (gpu-kit.txt), a git bundle of HEAD and kit.json; an error past ``max_mib``."""
    into, present = into.resolve(), present.resolve()
    if not present.is_file():
        sys.exit(f"error: no present file {present}")
    if into.exists() and any(p.name not in KIT_FILES and p.suffix != ".whl" for p in into.iterdir()):
        sys.exit(f"error: {into} holds files that are not a kit's: name a new or empty folder with --into")
    lock, source_of_lock = kit_lock(python, present)
    shutil.rmtree(into, ignore_errors=True)  # no wheel of an older lock stays
    into.mkdir(parents=True)
    source_only = {canonical(n) for n in SOURCE_ONLY}
    entries = [line for line in lock.splitlines() if line and not line.startswith("#")]
    source = [e for e in entries if canonical(e.split("==")[0]) in source_only]
    with tempfile.TemporaryDirectory() as scratch_dir:
        # pip checks every file against its hash, as a fully hashed requirements file makes it.
        binary_list, source_list = Path(scratch_dir) / "binary.txt", Path(scratch_dir) / "source.txt"
        binary_list.write_text("".join(f"{e}\n" for e in entries if e not in source))
        source_list.write_text("".join(f"{e}\n" for e in source))
        common = ["--quiet", "--no-deps", "--require-hashes"]
        pip("download", *common, *platform_args(python), "-d", str(into), "-r", str(binary_list))
        if source:
            pip("wheel", *common, "--no-binary=:all:", "-w", str(into), "-r", str(source_list))
    (into / "gpu-kit.txt").write_text("\n".join(pins(lock)) + "\n")
    # The checkout's history, for a GPU machine the repository reaches without its .git (gpu_study.py).
    git = ["git", "-C", str(ROOT)]
    subprocess.run([*git, "bundle", "create", "-q", str(into / "source.bundle"), "HEAD"], check=True)
    size = sum(p.stat().st_size for p in into.iterdir())
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    # What the kit is for: gpu_study.py refuses a kit whose "python" is not the machine's.
    kit = {
        "python": python,
        "lock": source_of_lock,
        "present": shown(present),
        "packages": len(entries),
        # Installed only where the machine's own is missing or too old (gpu_study/environment.py).
        "carried": carried_in(lock),
        "bytes": size,
        "commit": commit,
    }
    (into / "kit.json").write_text(json.dumps(kit, indent=2) + "\n")
    print(f"{shown(into)}/: {len(entries)} packages for CPython {python}, {size / 2**20:.1f} MiB", file=sys.stderr)
    if size > max_mib * 2**20:  # the kit stays: the user may copy it anyway, or look at what is large in it
        sys.exit(
            f"error: the kit is {size / 2**20:.1f} MiB, more than the {max_mib} MiB cap (--max-mib). List in "
            f"{shown(present)} the large packages the GPU machine already has (`python3 -m pip list` there), "
            f"or raise the cap with --max-mib (make gpu-kit KIT_MAX_MIB=...). The kit is left in {into}"
        )


KIT_DOC = ROOT / "docs" / "gpu-kit.md"
KIT_TABLE = ("<!-- kit table: make kit-table writes it -->", "<!-- end of the kit table -->")


def lock_rows(lock: str) -> list[tuple[str, str, str]]:
    """(wheel, version, "carried" or "") of each package a lock pins: the kit table's rows, less sizes."""
    carried = set(carried_in(lock))
    return [
        (name, version, "carried" if name in carried else "") for name, version in (p.split("==") for p in pins(lock))
    ]


def kit_table(kit: Path) -> str:
    """docs/gpu-kit.md's account of the committed kit: what the node must have, each wheel of ``kit`` with its size."""
    target = TARGETS["gpu-kit"]
    lock = target.lock_path().read_text()
    if not (kit / "gpu-kit.txt").is_file() or (kit / "gpu-kit.txt").read_text().split() != pins(lock):
        sys.exit(f"error: {shown(kit)} is not a kit of {target.lock}: fetch it first (make gpu-kit)")
    sizes = {canonical(wheel.name.split("-")[0]): wheel.stat().st_size for wheel in kit.glob("*.whl")}
    present = re.findall(r"^([A-Za-z0-9][\w.-]*)", (ROOT / target.present).read_text(), re.MULTILINE)
    packages = lock_rows(lock)
    rows = [f"| {name} | {version} | {sizes[name] / 2**10:,.0f} | {mark} |" for name, version, mark in packages]
    carried = sum(mark == "carried" for _, _, mark in packages)
    return "\n".join(
        [
            f"The committed kit, for CPython {target.python} (`{shown(target.lock_path())}`): **{len(rows)} wheels, "
            f"{sum(sizes.values()) / 2**20:.1f} MiB**, and the git bundle of the checkout. The node must already "
            f"have what `{target.present}` lists: {', '.join(present)}. Of the kit's wheels, {carried} are "
            "carried: the study installs one only where the node's own is missing or too old for a package.",
            "",
            "| wheel | version | KiB | |",
            "|---|---|--:|---|",
            *rows,
        ]
    )


def table_rows(text: str) -> list[tuple[str, ...]]:
    """(wheel, version, carried) of each row of the kit table in ``text``."""
    body = text.split(KIT_TABLE[0], 1)[-1].split(KIT_TABLE[1], 1)[0]
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in body.splitlines() if line[:2] == "| "]
    return [(name, version, mark) for name, version, _, mark in cells[1:]]


def write_kit_table(kit: Path | None, check: bool) -> int:
    """Write docs/gpu-kit.md's kit table from ``kit``; ``check``: compare instead (without a kit, with the lock's)."""
    text = KIT_DOC.read_text()
    fix = "make gpu-kit kit-table"
    if check and kit is None:
        if table_rows(text) != lock_rows(TARGETS["gpu-kit"].lock_path().read_text()):
            print(f"{shown(KIT_DOC)}: its kit table is not requirements/gpu-kit.txt's; run: {fix}")
            return 1
        return 0
    wanted_text = between(text, *KIT_TABLE, kit_table(kit or KIT_FOLDER), shown(KIT_DOC))
    return write_or_check({KIT_DOC: wanted_text}, check=check, stale="its kit table is not the kit's", fix=fix)


def python_version(text: str) -> str:
    if not re.fullmatch(r"3\.\d+", text):
        raise argparse.ArgumentTypeError(f"a CPython version as X.Y, such as 3.12, not '{text}'")
    return text


def main(argv=None, prog=None) -> None:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["lock", "check", "fetch-kit", "kit-table"])
    parser.add_argument("targets", nargs="*", help=f"of {', '.join(TARGETS)} (default: all)")
    # fetch-kit's options; None where not given, so that lock and check can refuse them.
    kit = parser.add_argument_group("fetch-kit")
    kit.add_argument(
        "--python",
        type=python_version,
        metavar="X.Y",
        help=f"the GPU machine's CPython (default: {TARGETS['gpu-kit'].python})",
    )
    kit.add_argument("--into", type=Path, metavar="DIR", help=f"the kit folder (default: {shown(KIT_FOLDER)})")
    kit.add_argument(
        "--present", type=Path, metavar="FILE", help=f"what the GPU machine has (default: {TARGETS['gpu-kit'].present})"
    )
    kit.add_argument("--max-mib", type=int, metavar="N", help=f"the kit's size cap in MiB (default: {KIT_MAX_MIB})")
    table = parser.add_argument_group("kit-table")
    table.add_argument(
        "--kit", type=Path, metavar="DIR", help=f"a kit of the committed lock (default: {shown(KIT_FOLDER)})"
    )
    table.add_argument("--check", action="store_true", help="exit 1 where docs/gpu-kit.md's table is stale")
    args = parser.parse_args(argv)
    if args.action == "kit-table":
        return sys.exit(write_kit_table(args.kit, args.check))
    if unknown := [t for t in args.targets if t not in TARGETS]:
        parser.error(f"no lock target {', '.join(unknown)}: the targets are {', '.join(TARGETS)}")
    if args.action == "fetch-kit":
        return fetch_kit(
            args.python or TARGETS["gpu-kit"].python,
            args.into or KIT_FOLDER,
            args.present or ROOT / TARGETS["gpu-kit"].present,
            KIT_MAX_MIB if args.max_mib is None else args.max_mib,
        )
    if args.kit is not None or args.check:
        parser.error("--kit and --check are kit-table's options")
    if any(option is not None for option in (args.python, args.into, args.present, args.max_mib)):
        parser.error("--python, --into, --present and --max-mib are fetch-kit's options")
    names = args.targets or list(TARGETS)
    for name in names:
        print(f"resolving {name} on {index_name()} for CPython {TARGETS[name].python}", file=sys.stderr)

    def resolved(name: str) -> str:
        path = TARGETS[name].lock_path()
        # A check holds pip to the lock's versions: a newer release on the index does not make it stale.
        return lock_text(name, TARGETS[name], held=path if args.action == "check" and path.exists() else None)

    # Each target is a pip resolution of its own, mostly waiting on the index: all of them in one pass.
    with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:
        texts = dict(zip(names, pool.map(resolved, names), strict=True))
    stale = []
    for name, text in texts.items():
        path = TARGETS[name].lock_path()
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
        rewrite = "tiny-mlp-bench locks lock"
        sys.exit(f"error: pip does not resolve to these locks: {names}; rewrite: {rewrite}")
