"""The catalogue as data: each framework's label, each rung's role and epochs per call, and the report
and the GPU study's plan finding the rungs they single out by role, never by a rung's name."""

from __future__ import annotations

import ast
import re

import pytest

from helpers import ROOT
from tiny_mlp_bench import catalogue, registry
from tiny_mlp_bench.catalogue import Role
from tiny_mlp_bench.report.markdown import TEMPLATE, environment

NAMES = {v.name for v in registry.rungs()}
SOURCES = [
    *sorted((ROOT / "tiny_mlp_bench" / "report").glob("*.py")),
    ROOT / "tiny_mlp_bench" / "gpu_study" / "plan.py",
]


def names_in(text: str) -> set[str]:
    """The rung names a string spells as a lookup: the whole string, or a part of a pair or run id
    (``torch-cpu-seed``, ``-seed``). Prose that mentions a rung is wording, not a lookup."""
    return NAMES & set(text.split("-")) if re.fullmatch(r"[\w-]+", text) else set()


def python_strings(source: str) -> list[tuple[int, str]]:
    """A module's string constants, the parts of its f-strings among them, but not its docstrings."""
    tree = ast.parse(source)
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, documented) and node.body and isinstance(node.body[0], ast.Expr)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def template_strings() -> list[tuple[int, str]]:
    """The string literals inside the template's expressions and statements, as Jinja reads them
    (its lexer gives each with its quotes)."""
    tokens = environment().lex(TEMPLATE.read_text())
    return [(line, value[1:-1]) for line, kind, value in tokens if kind == "string"]


def test_the_finder_sees_names_as_lookups_and_leaves_prose_alone():
    assert names_in("seed") == {"seed"} and names_in("torch-cpu-seed") == {"seed"} and names_in("-fused") == {"fused"}
    assert names_in("torch-cpu") == set() and names_in("fused_epoch_call") == set()
    assert names_in("the numba `fused` rung") == set()
    found = python_strings('"""A docstring: seed."""\n\nX = ("seed",\n "fused")\nY = f"{X}-scan"\n')
    assert [(line, text) for line, text in found if names_in(text)] == [(3, "seed"), (4, "fused"), (5, "-scan")]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_the_report_and_the_plan_spell_no_rung_name(path):
    # They find a rung by its role in the catalogue, so that renaming a rung is an edit there alone.
    found = [f"line {line}: {text!r}" for line, text in python_strings(path.read_text()) if names_in(text)]
    assert not found, f"{path.relative_to(ROOT)} names rungs: {'; '.join(found)}"


def test_the_report_template_spells_no_rung_name():
    found = [f"line {line}: {text!r}" for line, text in template_strings() if names_in(text)]
    assert template_strings() and not found, f"{TEMPLATE.name} names rungs: {'; '.join(found)}"


def test_each_role_is_one_rung_of_a_framework_and_the_askers_loop_starts_its_ladder():
    assert {v.role for v in registry.rungs()} - {None} == set(catalogue.Role)
    for framework in catalogue.framework_names():
        roles = [v.role for v in registry.ladder(framework) if v.role]
        assert len(roles) == len(set(roles)), framework
        if askers := registry.rung_with_role(framework, Role.ASKERS):
            assert registry.ladder(framework)[0] == askers
    for role in (Role.REFERENCE, Role.FLOOR, Role.COMPILED_EPOCH):
        assert registry.sole_rung(role) in registry.rungs()
    assert [v.framework for v in registry.rungs_with_role(Role.ONE_CALL_PER_EPOCH)] == [
        "tf_keras",
        "keras",
        "keras_jax",
    ]


def test_roles_are_looked_up_by_rung_and_by_framework():
    assert registry.role_of("torch", "seed") is Role.ASKERS and registry.role_of("torch", "resident") is None
    assert registry.role_of("torch", "not-listed") is None and registry.role_of("mxnet", "seed") is None
    assert registry.rung_with_role("numpy", Role.FLOOR).name == "fused"
    assert registry.rung_with_role("sklearn", Role.ASKERS) is None  # scikit-learn's own loop, not the asker's
    with pytest.raises(ValueError):
        registry.sole_rung(Role.ASKERS)  # every framework but two has one


def test_epochs_per_call_may_differ_by_device():
    per_call = {
        (v.framework, v.name, device): v.epochs_per_call(device) for v in registry.rungs() for device in v.devices
    }
    assert per_call.pop(("numpy", "fused", "cpu")) == 20 and per_call.pop(("numpy", "fused", "cuda")) == 100
    assert per_call.pop(("keras", "epoch_blocks", "cpu")) == per_call.pop(("keras", "epoch_blocks", "cuda")) == 50
    assert per_call.pop(("jax", "scan", "cpu")) == per_call.pop(("jax", "scan", "cuda")) == 50
    assert set(per_call.values()) == {1}
    with pytest.raises(ValueError, match="numpy reference runs on cpu only"):
        registry.rung("numpy", "reference").epochs_per_call("cuda")


def test_the_descriptions_state_the_epochs_per_call():
    assert "one numba CUDA kernel per 100 epochs on cuda" in registry.rung("numpy", "fused").removes
    assert "50 epochs per `fit` epoch" in registry.rung("keras", "epoch_blocks").removes
    assert "each block of 50 epochs" in registry.rung("jax", "scan").removes


def test_frameworks_have_labels_and_keras_says_which_and_on_what():
    labels = {f.name: f.label for f in catalogue.FRAMEWORKS}
    assert len(set(labels.values())) == len(labels) and all(labels.values())
    assert labels["tf_keras"] == "Keras 2" and labels["keras"] == "Keras 3 on TensorFlow"
    for framework in catalogue.keras_frameworks(3):
        assert framework.label == f"Keras 3 on {framework.keras_backend}"
    assert [f.name for f in catalogue.keras_frameworks(2)] == ["tf_keras"]
    assert catalogue.pair_name("keras_jax", "cuda") == "keras_jax-cuda"
