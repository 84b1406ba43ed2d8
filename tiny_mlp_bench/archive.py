"""Archives of finished studies: pack, seal (provenance, RO-Crate, SHA-256 manifest) and verify.

An archive is a folder under results/archive/ that holds a study's records, logs, dataset, config
as run and lock files; the report, table, charts and the report's numbers (report/model.json)
rendered from its records; the workflow's code that rendered them, as one ``git archive`` tarball
(workflow.tar.gz); ``provenance.json`` (commits, modified trees, hosts, images, the render
command); ``ro-crate-metadata.json`` (the Workflow Run Crate profiles, written with the
``rocrate`` library); and ``MANIFEST.sha256`` (``sha256sum -c`` reads it). README.md, the
people's notes on the study, is the one file the manifest leaves out: it is written after the
archive is sealed. Where the report quotes another archive's GPU answer, the records it quotes
are packed too (gpu-archive/<name>/runs/).

Verifying needs neither git nor the repository: the report is rendered again from the records
with the code in the tarball, and its numbers compared with model.json's; its bytes are compared
too where the versions that rendered it are the ones here.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path

from tiny_mlp_bench.atomic import write_text_atomic

MANIFEST = "MANIFEST.sha256"
PROVENANCE = "provenance.json"
CRATE_METADATA = "ro-crate-metadata.json"
NOTES = "README.md"  # written by people after sealing: outside the manifest
RECORD_FOLDERS = ("runs", "sweep", "probes")
RENDER_SCRIPT = "scripts/render_report.py"
MODEL = "report/model.json"  # the report's numbers and the versions that rendered it
RENDERED = ("report.md", "timings.parquet", "report/timings.png", "report/ladder.png", "report/crossover.png", MODEL)
CODE = "workflow.tar.gz"  # `git archive` of the tracked files outside results/ at the render commit
OLD_CODE_FOLDER = "workflow"  # what archives held instead before: the code tree at the study's commit
QUOTED = "gpu-archive"  # the records of the archive whose GPU answer the report quotes: QUOTED/<name>/runs/
QUOTED_RECORDS = "runs/torch-*-seed-*.json"  # all the quoted answer reads of an archive
PROFILES = {  # the RO-Crate profiles an archive conforms to, with their versions
    "https://w3id.org/ro/wfrun/process/0.5": ("Process Run Crate", "0.5"),
    "https://w3id.org/ro/wfrun/workflow/0.5": ("Workflow Run Crate", "0.5"),
}


class ArchiveError(Exception):
    """Why a study cannot be archived, or why an archive does not verify."""


def git(repo: Path, *args: str, binary: bool = False):
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=not binary)
    if done.returncode != 0:
        stderr = done.stderr if isinstance(done.stderr, str) else done.stderr.decode(errors="replace")
        raise ArchiveError(f"git {' '.join(args)} failed in {repo}: {stderr.strip()}")
    return done.stdout


def modified_files(repo: Path, modes: bool = True) -> list[str]:
    """Tracked files outside results/ that differ from HEAD: changed code (archives are not code).
    With ``modes`` false, a file whose mode alone changed does not count."""
    file_mode = [] if modes else ["-c", "core.fileMode=false"]
    status = git(repo, *file_mode, "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results")
    return [line[3:] for line in status.splitlines()]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def files_under(folder: Path) -> list[str]:
    """Every file the manifest covers, as sorted POSIX paths relative to the archive."""
    outside = {MANIFEST, NOTES}
    relative = (p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    return sorted(rel for rel in relative if rel not in outside)


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ArchiveError(f"{path}: cannot be read as JSON ({err})") from err


def record_files(folder: Path) -> dict[str, list[str]]:
    """The archive's record files per kind, as paths relative to it."""
    return {
        kind: sorted(p.relative_to(folder).as_posix() for p in (folder / kind).glob("*.json"))
        for kind in RECORD_FOLDERS
    }


def quoted_archive(folder: Path) -> str | None:
    """The name of the archive whose GPU answer ``folder``'s report quotes, from the records packed for it."""
    names = sorted(p.name for p in (folder / QUOTED).glob("*") if p.is_dir())
    if len(names) > 1:
        raise ArchiveError(f"{folder / QUOTED}: the records of one archive are quoted, not of {', '.join(names)}")
    return names[0] if names else None


def render_command(folder: Path, *, no_archive_qualifies: bool = False) -> list[str]:
    """scripts/render_report.py's arguments to render the archive's report from its records, run in
    the archive; ``no_archive_qualifies``: the report says no archived GPU answer was found to quote."""
    records = record_files(folder)
    if not records["runs"]:
        raise ArchiveError(f"{folder}: no run records in runs/")
    command = [RENDER_SCRIPT, "--report", RENDERED[0], "--timings", RENDERED[1], "--plot", RENDERED[2]]
    command += ["--ladder-plot", RENDERED[3], "--crossover-plot", RENDERED[4], "--model", MODEL]
    if quoted := quoted_archive(folder):
        command += ["--gpu-archive", f"{QUOTED}/{quoted}"]
    elif no_archive_qualifies:
        command += ["--no-archive-qualifies"]
    if records["sweep"]:
        command += ["--sweeps", *records["sweep"]]
    if records["probes"]:
        command += ["--probes", *records["probes"]]
    return [*command, "--", *records["runs"]]


def render(code: Path, folder: Path, command: list[str], python: str = sys.executable) -> None:
    """Run the render command with the code in ``code`` on the records in ``folder``."""
    done = subprocess.run([python, str(code / command[0]), *command[1:]], cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        raise ArchiveError(f"rendering the report in {folder} failed:\n{done.stderr.strip()[-2000:]}")


def study_facts(folder: Path) -> dict:
    """What the archive's records say of where and from what code they were made."""
    commits, modified, hosts, images, started = Counter(), [], set(), set(), []
    for paths in record_files(folder).values():
        for rel in paths:
            record = read_json(folder / rel)
            env = record.get("environment", {})
            commit = env.get("git_commit") or "unknown"
            commits[commit] += 1
            if commit.endswith("-dirty"):
                modified.append(rel)
            machine = f"{env.get('host')} ({env.get('cpu_model')}, {env.get('logical_cpus')} logical CPUs"
            hosts.add(machine + (f", {env['gpu_name']})" if env.get("gpu_name") else ")"))
            container = env.get("container")
            if isinstance(container, dict) and container.get("engine"):
                images.add((container["engine"], container.get("image"), container.get("image_id")))
            elif container:  # schema 1 named the container in one string
                images.add((str(container), None, None))
            if when := record.get("identity", {}).get("started_at"):
                started.append(when)
    return {
        "commits": dict(sorted(commits.items())),
        "records_from_modified_tree": modified,
        "machines": sorted(hosts),
        "containers": [dict(zip(("engine", "image", "image_id"), i, strict=True)) for i in sorted(images, key=str)],
        "first_run_started": min(started, default=None),
        "last_run_started": max(started, default=None),
    }


def study_commit(facts: dict) -> str | None:
    """The commit most of the records were made at, without its -dirty mark."""
    known = Counter()
    for commit, count in facts["commits"].items():
        if commit != "unknown":
            known[commit.removesuffix("-dirty")] += count
    return known.most_common(1)[0][0] if known else None


def extract(repo: Path, commit: str, paths, destination: Path) -> None:
    """Those of ``paths`` that ``commit`` has (older commits lack some), as they are there, under ``destination``."""
    present = set(git(repo, "ls-tree", "--name-only", commit).split())
    data = git(repo, "archive", "--format=tar", commit, *[p for p in paths if p in present], binary=True)
    with tempfile.TemporaryFile() as tar_file:
        tar_file.write(data)
        tar_file.seek(0)
        with tarfile.open(fileobj=tar_file) as tar:
            tar.extractall(destination, filter="data")


def write_code(repo: Path, commit: str, path: Path) -> None:
    """The tracked files outside results/ at ``commit``, as one gzipped tarball."""
    path.write_bytes(git(repo, "archive", "--format=tar.gz", commit, "--", ".", ":(exclude)results", binary=True))


def write_crate(folder: Path, provenance: dict) -> None:
    """RO-Crate metadata (Workflow Run Crate): the workflow, one CreateAction, its inputs and results."""
    from rocrate.model.contextentity import ContextEntity
    from rocrate.rocrate import ROCrate

    crate = ROCrate()
    crate.name = f"tiny-mlp-bench study {provenance['archive']}"
    crate.description = "Timings of a 2-20-1 MLP's training in torch, Keras and others, with the report made from them."
    for uri, (name, version) in PROFILES.items():
        profile = crate.add(
            ContextEntity(crate, uri, properties={"@type": "CreativeWork", "name": name, "version": version})
        )
        crate.root_dataset.append_to("conformsTo", profile)
    rendered = provenance["render"]["commit"]
    workflow = crate.add_workflow(
        folder / CODE,
        CODE,
        main=True,
        lang="snakemake",
        properties={
            "name": "tiny-mlp-bench",
            "version": rendered,
            "encodingFormat": "application/gzip",
            "description": f"The workflow's code at commit {rendered}, which rendered the report (git archive; "
            "its Snakefile is the entry point). The study ran at the commit provenance.json names.",
            "sha256": sha256(folder / CODE),
        },
    )
    files = {}
    for rel in files_under(folder):
        if rel in (CODE, CRATE_METADATA):
            continue
        files[rel] = crate.add_file(folder / rel, rel, properties={"sha256": sha256(folder / rel)}, record_size=True)
    inputs = [f for rel, f in files.items() if rel.startswith(("data/", "requirements/")) or rel == "config.yaml"]
    results = [f for rel, f in files.items() if f not in inputs]
    action = crate.add_action(
        workflow,
        identifier="#study",
        object=inputs,
        result=results,
        properties={
            "@type": "CreateAction",
            "name": f"tiny-mlp-bench study {provenance['archive']}",
            "description": "The study's Snakemake run, as its records say; the report re-rendered at commit "
            f"{provenance['render']['commit']}.",
            **(
                {"startTime": provenance["study"]["first_run_started"]}
                if provenance["study"]["first_run_started"]
                else {}
            ),
        },
    )
    crate.root_dataset.append_to("mentions", action)
    crate.write(folder)


def write_manifest(folder: Path) -> None:
    lines = [f"{sha256(folder / rel)}  {rel}\n" for rel in files_under(folder)]
    write_text_atomic(folder / MANIFEST, "".join(lines))


def seal(
    folder: Path, repo: Path, *, name: str, allow_modified: bool, notes: list[str] = (), no_archive_qualifies=False
) -> dict:
    """Render the report from ``folder``'s records with the code in ``repo`` (at HEAD), pack that code,
    and write the provenance, the RO-Crate metadata and the manifest. Refuses a modified tree, or records
    made in one, unless ``allow_modified``, and then says so in provenance.json."""
    changed = modified_files(repo)
    facts = study_facts(folder)
    if not allow_modified and (changed or facts["records_from_modified_tree"]):
        what = [f"the working tree has changes to tracked files: {', '.join(changed[:5])}"] if changed else []
        if facts["records_from_modified_tree"]:
            names = ", ".join(facts["records_from_modified_tree"][:5])
            what.append(f"{len(facts['records_from_modified_tree'])} records were made from a modified tree ({names})")
        raise ArchiveError(
            "refusing to archive: " + "; ".join(what) + ". Commit the changes and run the study again, or "
            "archive it as it is with --allow-modified (the archive then says so)."
        )
    commit = study_commit(facts)
    if commit is None:
        raise ArchiveError(
            f"{folder}: the records name no git commit (made outside a git checkout): nothing to trace them to"
        )
    # The lock files at the study's commit, where the archive does not hold them yet; the code that renders.
    if not (folder / "requirements").exists():
        extract(repo, commit, ["requirements"], folder)
    head = git(repo, "rev-parse", "HEAD").strip()
    shutil.rmtree(folder / OLD_CODE_FOLDER, ignore_errors=True)
    write_code(repo, head, folder / CODE)
    command = render_command(folder, no_archive_qualifies=no_archive_qualifies)
    render(repo, folder, command)
    provenance = {
        "archive": name,
        "archived_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "archived_on": platform.node(),
        "study": {"commit": commit, **facts},
        "render": {
            "commit": head,
            "code": CODE,
            "tree_modified": bool(changed),
            "modified_files": changed,
            "command": command,
            "outputs": [rel for rel in RENDERED if (folder / rel).exists()],  # no crossover chart without sweeps
            "gpu_archive_quoted": quoted_archive(folder),
        },
        "modified_tree_allowed": allow_modified,
        "notes": list(notes),
    }
    write_text_atomic(folder / PROVENANCE, json.dumps(provenance, indent=1) + "\n")
    write_crate(folder, provenance)
    write_manifest(folder)
    return provenance


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def archive_name(folder: Path, today: datetime.date) -> str:
    """<date>-<gpu model> where a record names a GPU, else <date>-<host>."""
    gpus, hosts = set(), set()
    for paths in record_files(folder).values():
        for rel in paths:
            env = read_json(folder / rel).get("environment", {})
            gpus.add(env.get("gpu_name") or "")
            hosts.add(env.get("host") or "")
    machine = min(gpus - {""}, default=None) or min(hosts - {""}, default=platform.node())
    return f"{today.isoformat()}-{slug(machine)}"


def publish(partial: Path, destination: Path) -> None:
    """Move a finished archive into place; an archive already there is replaced only after that."""
    if destination.exists():
        old = destination.with_name(f".{destination.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(destination, old)
        os.replace(partial, destination)
        shutil.rmtree(old)
    else:
        os.replace(partial, destination)


def build(destination: Path, fill, repo: Path, *, allow_modified: bool, notes=(), check=None, **options) -> dict:
    """Fill a partial folder beside ``destination``, seal it (``options`` go to seal), ``check`` it,
    and publish it: nothing half-written or refused is left."""
    partial = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".partial", dir=destination.parent))
    try:
        fill(partial)
        provenance = seal(partial, repo, name=destination.name, allow_modified=allow_modified, notes=notes, **options)
        if check:
            check(partial)
        publish(partial, destination)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return provenance


def copy_quoted(archives: Path, name: str, folder: Path) -> None:
    """The records the report quotes of archive ``name``, into ``folder``'s QUOTED/<name>/runs/."""
    source = archives / name
    records = sorted(source.glob(QUOTED_RECORDS))
    if not records:
        raise ArchiveError(
            f"the report quotes the GPU answer of archive {name}, but {source} holds no {QUOTED_RECORDS}: "
            "render the report again (snakemake --cores all --forcerun render_report), then archive"
        )
    (folder / QUOTED / name / "runs").mkdir(parents=True)
    for record in records:
        shutil.copy2(record, folder / QUOTED / name / "runs" / record.name)


def pack(repo: Path, archives: Path, *, name: str | None = None, allow_modified: bool = False) -> Path:
    """Pack the finished study in ``repo``'s results/ and logs/ into ``archives``/<name>."""
    results = repo / "results"
    needed = (results / "report.md", results / MODEL, results / "runs", results / "config.yaml")
    missing = [p for p in needed if not p.exists()]
    if missing:
        raise ArchiveError(
            f"no finished study to archive: {', '.join(str(p) for p in missing)} missing. Run the study "
            "first (make run, or snakemake --cores all)"
        )
    sources = {kind: results / kind for kind in (*RECORD_FOLDERS, "data")}
    sources |= {"logs": repo / "logs", "config.yaml": results / "config.yaml"}
    model = read_json(results / MODEL)["model"]
    quoted = (model.get("archived_gpu") or {}).get("archive")
    name = name or archive_name(results, datetime.date.today())
    destination = archives / name
    if destination.exists():
        raise ArchiveError(f"{destination} already exists: choose another name with --name")
    archives.mkdir(parents=True, exist_ok=True)

    def fill(folder: Path) -> None:
        for rel, source in sources.items():
            if source.is_dir():
                shutil.copytree(source, folder / rel)
            elif source.is_file():
                shutil.copy2(source, folder / rel)
        if quoted:
            copy_quoted(archives, quoted, folder)

    def same_report(folder: Path) -> None:
        # The report the study showed must be the one its records render to: otherwise results/
        # holds records of another config, or a report of other code.
        if (folder / "report.md").read_bytes() != (results / "report.md").read_bytes():
            raise ArchiveError(
                "results/report.md is not what this commit renders from the records in results/: results/ "
                "holds records the report was not made from (another config's), or the report was made by "
                "other code. Run the study again (snakemake --cores all --forcerun render_report), or remove "
                "the stray records, then archive."
            )

    build(
        destination,
        fill,
        repo,
        allow_modified=allow_modified,
        check=same_report,
        no_archive_qualifies=bool(model.get("no_archive_qualifies")),
    )
    return destination


def reseal(folder: Path, repo: Path, *, allow_modified: bool = False, notes=()) -> dict:
    """Re-render and re-seal an existing archive in place with this commit's code, keeping its notes
    and adding ``notes``. An archive that quotes no other's GPU answer is given the newest qualifying
    one of its neighbours, as the report's gpu_answer_archive default does."""
    from tiny_mlp_bench.report.gpu_archive import newest_qualifying  # the report's libraries, not only Python's

    if (folder / PROVENANCE).is_file():
        notes = [*read_json(folder / PROVENANCE).get("notes", []), *notes]

    quoted = quoted_archive(folder) or getattr(newest_qualifying(folder.parent, leave_out=folder.name), "name", None)

    def fill(partial: Path) -> None:
        shutil.copytree(folder, partial, dirs_exist_ok=True)
        if quoted and not (partial / QUOTED).exists():
            copy_quoted(folder.parent, quoted, partial)

    return build(folder, fill, repo, allow_modified=allow_modified, notes=notes, no_archive_qualifies=quoted is None)


def check_manifest(folder: Path) -> None:
    """The archive holds exactly the manifest's files, unchanged; else an ArchiveError naming the first that is not."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise ArchiveError(f"{folder}: no {MANIFEST}")
    listed = {}
    for number, line in enumerate(manifest.read_text().splitlines(), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise ArchiveError(f"{manifest}:{number}: not a '<sha256>  <path>' line")
        listed[rel] = digest
    present = files_under(folder)
    for rel in sorted(set(listed) | set(present)):
        if rel not in present:
            raise ArchiveError(f"{folder / rel}: listed in {MANIFEST} but missing")
        if rel not in listed:
            raise ArchiveError(f"{folder / rel}: in the archive but not in {MANIFEST}")
        if sha256(folder / rel) != listed[rel]:
            raise ArchiveError(f"{folder / rel}: its SHA-256 differs from {MANIFEST}'s")


def version_changes(theirs: dict, ours: dict) -> list[str]:
    """What renders here with other versions than the archive's report was rendered with."""
    return [
        f"{name} {theirs.get(name)} there, {ours.get(name)} here"
        for name in sorted(theirs.keys() | ours.keys())
        if theirs.get(name) != ours.get(name)
    ]


def verify(folder: Path) -> str:
    """Check the manifest, then render the report again from the records with the code in the archive's
    tarball and compare: the numbers always (to a relative 1e-9), and where the versions that rendered
    it are the ones here, the Markdown, charts and Parquet byte for byte. Says which comparison it made;
    an ArchiveError names the first difference."""
    from tiny_mlp_bench.report.model_file import first_difference  # the report's libraries, not only Python's

    check_manifest(folder)
    rendered = read_json(folder / PROVENANCE)["render"]
    if rendered["tree_modified"]:
        raise ArchiveError(
            f"{folder}: its report was rendered from a modified tree at {rendered['commit']}; "
            "that code is in no commit, so it cannot be re-rendered"
        )
    for needed in (CODE, MODEL):
        if not (folder / needed).is_file():
            raise ArchiveError(f"{folder}: no {needed} (an archive sealed before archives held it: reseal it)")
    with tempfile.TemporaryDirectory(prefix="tiny-mlp-bench-verify-") as tmp:
        code, work = Path(tmp, "code"), Path(tmp, "work")
        with tarfile.open(folder / CODE) as tar:
            tar.extractall(code, filter="data")
        for kind in (*RECORD_FOLDERS, QUOTED):
            if (folder / kind).is_dir():
                shutil.copytree(folder / kind, work / kind)
        render(code, work, rendered["command"])
        for rel in rendered["outputs"]:
            if not (work / rel).exists():
                raise ArchiveError(f"{folder / rel}: its re-rendering at {rendered['commit'][:12]} did not make it")
        archived, again = read_json(folder / MODEL), read_json(work / MODEL)
        if difference := first_difference(archived["model"], again["model"]):
            raise ArchiveError(f"{folder / MODEL}: {difference}")
        if changes := version_changes(archived["versions"], again["versions"]):
            return f"numbers recomputed and equal; bytes not compared ({'; '.join(changes)})"
        compared = [rel for rel in rendered["outputs"] if rel != MODEL]
        for rel in compared:
            if (folder / rel).read_bytes() != (work / rel).read_bytes():
                raise ArchiveError(f"{folder / rel}: differs from its re-rendering at {rendered['commit'][:12]}")
        return f"numbers recomputed and equal; {', '.join(compared)} byte for byte"
