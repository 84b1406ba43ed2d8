"""Config validation: the shipped configs are valid; each kind of mistake is named by key."""

from __future__ import annotations

import pytest
import yaml

from helpers import ROOT
from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.config_check import config_errors, set_by, with_catalogue_defaults

SCHEMA = yaml.safe_load((ROOT / "config" / "config.schema.yaml").read_text())
DEFAULT = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


@pytest.mark.parametrize(
    "path", [ROOT / "config" / "config.yaml", ROOT / "config" / "full.yaml", ROOT / "config" / "quick.yaml"]
)
def test_shipped_configs_are_valid(path):
    assert config_errors(yaml.safe_load(path.read_text()), SCHEMA) == []


def test_every_schema_key_has_type_description_and_default():
    # frameworks and rungs take their defaults from the catalogue (with_catalogue_defaults).
    for key, spec in SCHEMA["properties"].items():
        assert {"description", *(() if key in ("frameworks", "variants") else ("default",))} <= spec.keys(), key
        assert "type" in spec or "enum" in spec, key


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"epochs": 0}, "config key 'epochs': 0 is less than the minimum of 1"),
        ({"epochs": -5}, "config key 'epochs': -5 is less than the minimum of 1"),
        ({"epochs": "ten"}, "config key 'epochs': 'ten' is not of type 'integer'"),
        ({"batch_size": 6.4}, "config key 'batch_size': 6.4 is not of type 'integer'"),
        ({"learning_rate": 0}, "config key 'learning_rate': 0 is less than or equal to the minimum of 0"),
        ({"devices": ["tpu"]}, "config key 'devices.0': 'tpu' is not one of ['cpu', 'cuda'] ("),
        ({"devices": ["gpu"]}, "config key 'devices.0': 'gpu' is not one of ['cpu', 'cuda']; did you mean 'cuda'?"),
        ({"devices": ["CPUs"]}, "config key 'devices.0': 'CPUs' is not one of ['cpu', 'cuda']; did you mean 'cpu'?"),
        (
            {"frameworks": ["torch", "mxnet"]},
            (
                "config key 'frameworks.1': 'mxnet' is not one of "
                "['torch', 'tf_keras', 'keras', 'keras_jax', 'keras_torch', 'numpy', 'sklearn', 'jax']"
            ),
        ),
        ({"frameworks": []}, "config key 'frameworks': [] should be non-empty"),
        ({"require_gpu": "yes"}, "config key 'require_gpu': 'yes' is not of type 'boolean'"),
        ({"cpu_threads": -1}, "config key 'cpu_threads': -1 is less than the minimum of 0"),
        ({"gpu_request": "mig"}, "config key 'gpu_request': 'mig' is not one of ['gpus', 'gres']"),
        ({"epoch": 10}, "config key 'epoch' is not a known key; did you mean 'epochs'?"),
        ({"zzz": 1}, "config key 'zzz' is not a known key; known keys: batch_size"),
    ],
)
def test_each_mistake_is_named_by_key(change, expected):
    errors = config_errors(DEFAULT | change, SCHEMA)
    assert len(errors) == 1
    assert errors[0].startswith(expected)


def test_a_name_people_use_for_a_framework_suggests_the_one_here():
    (error,) = config_errors(DEFAULT | {"frameworks": ["pytorch"]}, SCHEMA)
    assert error.startswith("config key 'frameworks.0': 'pytorch' is not one of ['torch', ")
    assert error.endswith("; did you mean 'torch'?")


def test_an_error_names_where_its_key_was_set_as_snakemake_merges_the_sources(tmp_path):
    own, first, second = (tmp_path / name for name in ("config.yaml", "first.yaml", "second.yaml"))
    own.write_text("epochs: 1000\ndevices: [cpu]\nrepeats: 3\n")
    first.write_text("epochs: 0\ndevices: [gpu]\n")
    second.write_text("epochs: -1\n")
    message = "config key 'epochs': 0 is less than the minimum of 1"

    def source(key: str, command_line=None) -> str:
        return set_by(message.replace("epochs", key), command_line or {}, [str(first), str(second)], [str(own)])

    assert source("epochs") == str(second)  # the last --configfile that holds it
    assert source("devices") == str(first)
    assert source("repeats") == str(own)  # only the workflow's own file sets it
    assert source("devices", {"devices": ["gpu"]}) == "--config"
    assert source("cpu_threads") == "the schema's default"


def test_all_mistakes_are_reported_at_once():
    errors = config_errors(DEFAULT | {"epochs": 0, "repeats": "3"}, SCHEMA)
    assert [e.split(":")[0] for e in errors] == ["config key 'epochs'", "config key 'repeats'"]


def test_a_framework_with_an_empty_list_of_variants_is_named():
    config = DEFAULT | {"variants": {"torch": ["seed"], "tf_keras": []}}
    assert config_errors(config, SCHEMA) == [
        "config key 'variants.tf_keras': no rungs listed, but 'tf_keras' is in frameworks",
    ]


def test_what_a_config_leaves_out_is_the_catalogues_default_study_and_all_is_every_rung():
    assert "frameworks" not in DEFAULT and "variants" not in DEFAULT  # config/config.yaml leaves both out
    assert with_catalogue_defaults(DEFAULT) == DEFAULT | {
        "frameworks": catalogue.default_frameworks(),
        "variants": registry.default_rungs(),
    }
    chosen = with_catalogue_defaults(
        {"frameworks": ["torch", "keras"], "variants": {"torch": ["seed"], "keras": "all"}}
    )
    assert chosen["variants"]["torch"] == ["seed"]
    assert chosen["variants"]["keras"] == ["seed", "xla", "steps_per_execution", "epoch_blocks"]
    assert chosen["variants"]["jax"] == registry.default_rungs()["jax"]
    assert config_errors(DEFAULT | {"variants": {"keras": "all"}}, SCHEMA) == []
    (error,) = config_errors(DEFAULT | {"variants": {"keras": "every"}}, SCHEMA)
    assert error.startswith("config key 'variants.keras': 'every' is not valid under any of the given schemas")
    assert "a list, or all for every rung" in error


def test_unknown_variant_is_named():
    errors = config_errors(DEFAULT | {"variants": {"torch": ["turbo"]}}, SCHEMA)
    assert errors[0].startswith("config key 'variants.torch.0': 'turbo' is not one of")
