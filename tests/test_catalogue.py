"""The catalogue of variants is the one list: the backends, the config, the schema and the README agree with it."""

from __future__ import annotations

import re

import pytest
import yaml

from conftest import ROOT
from tiny_mlp_bench import catalogue
from tiny_mlp_bench.backends import backend


def readme_variant_table() -> list[tuple[str, str, str, str]]:
    """The rows of the README's variant table: framework, variant, devices, what it removes."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Where the time goes: the variants", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\w+) \| `(\w+)` \| ([\w, ]+) \| (.+) \|$", section, re.M)
    return [(f, v, d, removes) for f, v, d, removes in rows]


def test_the_readme_table_is_the_catalogue():
    expected = [(v.framework, v.name, ", ".join(v.devices), v.removes) for v in catalogue.VARIANTS]
    assert readme_variant_table() == expected


@pytest.mark.parametrize("framework", catalogue.framework_names())
def test_each_backend_implements_exactly_its_catalogue_variants(framework):
    assert backend(framework).name == framework
    assert list(backend(framework).variants) == catalogue.variant_names(framework)


def test_the_default_study_is_the_catalogues():
    schema = yaml.safe_load((ROOT / "config" / "config.schema.yaml").read_text())
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert schema["properties"]["variants"]["default"] == catalogue.default_variants()
    assert config["variants"] == catalogue.default_variants()
    assert schema["properties"]["frameworks"]["default"] == catalogue.default_frameworks()
    assert config["frameworks"] == catalogue.default_frameworks()


def test_full_study_runs_every_variant():
    full = yaml.safe_load((ROOT / "config" / "full.yaml").read_text())
    assert full["variants"] == {f: catalogue.variant_names(f) for f in catalogue.framework_names()}


def test_ladders_start_with_the_askers_loop_and_unknown_names_are_refused():
    assert catalogue.variant_names("torch")[0] == "seed" and catalogue.variant_names("keras")[0] == "seed"
    assert catalogue.ladder_position("torch", "graphed") == 5
    assert catalogue.ladder_position("torch", "not-listed") == len(catalogue.ladder("torch"))
    with pytest.raises(catalogue.UnknownVariant, match="unknown keras variant 'turbo'; known: seed, xla"):
        catalogue.variant("keras", "turbo")
    with pytest.raises(catalogue.UnknownVariant, match="unknown framework 'mxnet'"):
        catalogue.framework("mxnet")


def test_where_variants_run():
    assert not catalogue.variant("torch", "graphed").runs_on("cpu")
    assert catalogue.variant("numpy", "reference").why_not_on("cuda") == "numpy reference runs on cpu only"
    assert all(v.runs_on("cpu") or v.runs_on("cuda") for v in catalogue.VARIANTS)
