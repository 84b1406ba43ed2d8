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

Callers import from the module that does what they need (docs/layout.md maps them). The GPU study's
command imports layout, repository and rendering on a bare Python, so those use only the standard
library; rocrate and the report's libraries are imported where they are used.
"""
