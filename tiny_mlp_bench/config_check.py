"""Check a workflow config against its JSON schema and the catalogue, and say, key by key, what is wrong."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import jsonschema
import yaml

from tiny_mlp_bench import catalogue, registry


def config_errors(config: dict, schema: dict) -> list[str]:
    """One message per problem, each naming the key; empty when the config is valid."""
    known = sorted(schema.get("properties", {}))
    messages = []
    validator = jsonschema.Draft202012Validator(schema)
    for error in sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.path]):
        if error.validator == "additionalProperties":
            for key in sorted(set(error.instance) - set(known)):
                messages.append(f"config key '{key}' is not a known key; {hint(key, known)}")
            continue
        key = ".".join(str(p) for p in error.path) if error.path else "(top level)"
        description = schema.get("properties", {}).get(str(error.path[0]) if error.path else "", {})
        about = f" ({description['description']})" if "description" in description else ""
        if error.validator == "enum" and isinstance(error.instance, str):
            about = suggestion(error.instance, [str(v) for v in error.validator_value]) + about
        messages.append(f"config key '{key}': {error.message}{about}")
    if not messages:
        messages += catalogue_errors(config)
    return messages


# What people write for a value (difflib alone finds 'cpu' nearer to 'gpu'); None: nothing here means it (a TPU).
MEANT = {
    "gpu": "cuda",
    "cuda:0": "cuda",
    "nvidia": "cuda",
    "tpu": None,
    "mps": None,
    "pytorch": "torch",
    "tensorflow": "tf_keras",
    "tf.keras": "tf_keras",
    "keras2": "tf_keras",
    "keras3": "keras",
}


def suggestion(value: str, known: list[str]) -> str:
    """ "; did you mean 'cuda'?" for a value that is not one of ``known``, or nothing."""
    if value.lower() in MEANT:
        meant = MEANT[value.lower()]
        return f"; did you mean '{meant}'?" if meant in known else ""
    close = difflib.get_close_matches(value.lower(), known, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def set_by(message: str, command_line: dict, override_files: list, workflow_files: list) -> str:
    """Where an error's key was set, in Snakemake's order: ``--config``, the last ``--configfile``, the workflow's."""
    key = message.split("'")[1].split(".")[0]  # every message begins "config key 'name..."
    if key in command_line:
        return "--config"
    for path in [*reversed(override_files), *reversed(workflow_files)]:
        if key in (yaml.safe_load(Path(path).read_text()) or {}):
            relative = os.path.relpath(path)
            return str(path) if relative.startswith("..") else relative
    return "the schema's default"


def hint(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(known)}"


def catalogue_errors(config: dict) -> list[str]:
    """Frameworks and rungs the catalogue does not list, and frameworks left without rungs."""
    frameworks = catalogue.framework_names()
    messages = [
        f"config key 'frameworks.{i}': '{name}' is not one of {frameworks}{suggestion(name, frameworks)}"
        for i, name in enumerate(config.get("frameworks", []))
        if name not in frameworks
    ]
    variants = config.get("variants", {})
    for framework, names in variants.items():
        if framework not in frameworks:
            messages.append(f"config key 'variants.{framework}': '{framework}' is not one of {frameworks}")
            continue
        known = registry.rung_names(framework)
        messages += [
            f"config key 'variants.{framework}.{i}': '{name}' is not one of {known}"
            for i, name in enumerate([] if names == catalogue.ALL else names)
            if name not in known
        ]
    messages += [
        f"config key 'variants.{framework}': no rungs listed, but '{framework}' is in frameworks"
        for framework in config.get("frameworks", catalogue.default_frameworks())
        if variants.get(framework) == []
    ]
    return messages


def with_catalogue_defaults(config: dict) -> dict:
    """The config with the catalogue's defaults filled in: frameworks, and each one's
    rungs (`variants`) as the study runs."""
    return config | {
        "frameworks": config.get("frameworks", catalogue.default_frameworks()),
        "variants": registry.study_rungs(config.get("variants")),
    }
