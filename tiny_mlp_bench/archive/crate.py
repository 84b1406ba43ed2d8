"""The archive's RO-Crate metadata (ro-crate-metadata.json), written with the ``rocrate`` library."""

from __future__ import annotations

from pathlib import Path

from tiny_mlp_bench.archive.layout import CODE, CRATE_METADATA, files_under, sha256

PROFILES = {
    "https://w3id.org/ro/wfrun/process/0.5": ("Process Run Crate", "0.5"),
    "https://w3id.org/ro/wfrun/workflow/0.5": ("Workflow Run Crate", "0.5"),
}


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
