"""Check a workflow config against its JSON schema and say, key by key, what is wrong.

Snakemake's own ``validate`` (which also fills defaults) reports one error with the whole
config dumped; this finds every error first and names each key in one line.
"""

from __future__ import annotations

import difflib

import jsonschema


def config_errors(config: dict, schema: dict) -> list[str]:
    """One message per problem, each naming the key; empty when the config is valid."""
    known = sorted(schema.get("properties", {}))
    messages = []
    validator = jsonschema.Draft202012Validator(schema)
    for error in sorted(validator.iter_errors(config), key=lambda e: [str(p) for p in e.path]):
        if error.validator == "additionalProperties":
            for key in sorted(set(error.instance) - set(known)):
                close = difflib.get_close_matches(key, known, n=1)
                hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(known)}"
                messages.append(f"config key '{key}' is not a known key; {hint}")
            continue
        key = ".".join(str(p) for p in error.path) if error.path else "(top level)"
        description = schema.get("properties", {}).get(str(error.path[0]) if error.path else "", {})
        about = f" ({description['description']})" if "description" in description else ""
        messages.append(f"config key '{key}': {error.message}{about}")
    if not messages:
        messages += cross_key_errors(config, schema)
    return messages


def cross_key_errors(config: dict, schema: dict) -> list[str]:
    """Rules that span keys: every framework asked for must have variants to run."""
    variants = config.get("variants", schema["properties"]["variants"]["default"])
    return [
        f"config key 'variants.{framework}': no variants listed, but '{framework}' is in frameworks"
        for framework in config.get("frameworks", [])
        if not variants.get(framework)
    ]
