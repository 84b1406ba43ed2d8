"""Archives of finished studies: pack, seal (provenance, RO-Crate, SHA-256 manifest) and verify.

An archive is a folder under results/archive/ that holds a study's records, logs (with Snakemake's
own logs of the invocations that made the study, in logs/snakemake/), dataset, config as run and
lock files; the report, table, charts and the report's numbers (report/model.json) rendered from
its records; the workflow's code that rendered them, as one ``git archive`` tarball
(workflow.tar.gz); ``provenance.json`` (commits, modified trees, hosts, images, the render
command, the Snakemake logs it holds or a note that none was found); ``ro-crate-metadata.json``
(the Workflow Run Crate profiles, written with the ``rocrate`` library); and ``MANIFEST.sha256``
(``sha256sum -c`` reads it). README.md, the people's notes on the study, is the one file the
manifest leaves out: it is written after the archive is sealed. Where the report quotes another
archive's GPU answer, the records it quotes are packed too (gpu-archive/<name>/runs/).

Verifying needs neither git nor the repository: the report is rendered again from the records
with the code in the tarball, and its numbers compared with model.json's; its bytes are compared
too where the versions that rendered it are the ones here.

The parts, each its own module: layout (the archive's file names, reading them, ArchiveError),
repository (git: changed files, code at a commit), provenance (what the records say of the study),
rendering (the report's render command), crate (RO-Crate metadata), manifest (MANIFEST.sha256),
snakemake_logs (which of .snakemake/log/ are the study's), sealing (seal and publish), packing
(pack a study, reseal an archive) and verifying (verify).
Importing the package needs only the standard library: rocrate and the report's libraries are
imported where they are used.
"""

from tiny_mlp_bench.archive.crate import PROFILES, write_crate
from tiny_mlp_bench.archive.layout import (
    CODE,
    CRATE_METADATA,
    MANIFEST,
    MODEL,
    NOTES,
    OLD_CODE_FOLDER,
    PROVENANCE,
    QUOTED,
    QUOTED_RECORDS,
    RECORD_FOLDERS,
    RENDER_SCRIPT,
    RENDERED,
    SNAKEMAKE_LOGS,
    ArchiveError,
    files_under,
    quoted_archive,
    read_json,
    record_files,
    sha256,
)
from tiny_mlp_bench.archive.manifest import check_manifest, write_manifest
from tiny_mlp_bench.archive.packing import archive_name, copy_quoted, pack, reseal, slug
from tiny_mlp_bench.archive.provenance import study_commit, study_facts
from tiny_mlp_bench.archive.rendering import render, render_command
from tiny_mlp_bench.archive.repository import extract, git, modified_files, write_code
from tiny_mlp_bench.archive.sealing import build, publish, seal
from tiny_mlp_bench.archive.snakemake_logs import archived_logs, study_logs
from tiny_mlp_bench.archive.verifying import verify, version_changes

__all__ = [
    "CODE",
    "CRATE_METADATA",
    "MANIFEST",
    "MODEL",
    "NOTES",
    "OLD_CODE_FOLDER",
    "PROFILES",
    "PROVENANCE",
    "QUOTED",
    "QUOTED_RECORDS",
    "RECORD_FOLDERS",
    "RENDERED",
    "RENDER_SCRIPT",
    "SNAKEMAKE_LOGS",
    "ArchiveError",
    "archive_name",
    "archived_logs",
    "build",
    "check_manifest",
    "copy_quoted",
    "extract",
    "files_under",
    "git",
    "modified_files",
    "pack",
    "publish",
    "quoted_archive",
    "read_json",
    "record_files",
    "render",
    "render_command",
    "reseal",
    "seal",
    "sha256",
    "slug",
    "study_commit",
    "study_facts",
    "study_logs",
    "verify",
    "version_changes",
    "write_code",
    "write_crate",
    "write_manifest",
]
