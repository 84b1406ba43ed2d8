"""The package read from its source: no import cycle, importlib's included, no tie from a lower layer to a
higher one (docs/layout.md names the layers), and one class to a name."""

from __future__ import annotations

import ast
import fnmatch
import functools

from helpers import ROOT

PACKAGE = "tiny_mlp_bench"

# From the bottom up: a module may tie itself to modules of its own layer and of the layers below, never above. A
# module takes the first layer with a pattern that matches its name (without the package's), so a new module must
# be placed here, and where a package spans layers its lower modules are named before it.
LAYERS = (
    (
        "base: facts, formats and the clock",
        (
            "",
            "atomic",
            "cli",
            "timing",
            "era_runner",
            "stacks",
            "machine",
            "neighbour",
            "initial_weights",
            "catalogue",
            "records",
            "dataset",
            "kinds",
            "containers",
            "archive",
            "archive.layout",
            "generated_docs.markers",
            "gpu_study",
            "gpu_study.environment",
            "gpu_study.runner",
            "locks",
            "locks.pip_index",
            "probes",
            "probes.measure",
            "report",
        ),
    ),
    ("backends: one module per framework, the rungs and what runs them", ("backends", "backends.*")),
    ("registry: the one loader of the backends' rungs", ("registry",)),
    (
        "jobs: the timed jobs and their plan",
        ("question", "jobs", "jobs.*", "probes.*", "config_check", "gpu_study.preflight"),
    ),
    ("report: the report's numbers and words", ("report.*",)),
    (
        "studies: archives, generated docs, estimates and the GPU study's plan",
        ("archive.*", "generated_docs", "generated_docs.*", "expected_time", "gpu_study.*", "locks.*"),
    ),
    ("commands: the command line", ("__main__",)),
)


def module_name(path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def package_modules() -> dict[str, object]:
    return {module_name(path): path for path in (ROOT / PACKAGE).rglob("*.py")}


def type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the import nodes under ``if TYPE_CHECKING:``: they never run."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            skipped |= {id(child) for stmt in node.body for child in ast.walk(stmt)}
    return skipped


def ties(name: str, path) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in it: its import statements; importlib.import_module of
    an f-string, as every module under its literal prefix; and, in a module that imports a computed name, every
    string naming a module (a command table's "module:function")."""
    modules = package_modules()
    tree = ast.parse(path.read_text())
    skipped = type_checking_only(tree)
    found, computed, strings = set(), False, set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args:
            argument = node.args[0]
            if isinstance(argument, ast.JoinedStr):
                prefix = ""
                for part in argument.values:
                    if isinstance(part, ast.Constant):
                        prefix += part.value
                    elif isinstance(part.value, ast.Name) and part.value.id == "__name__" and not prefix:
                        prefix = name
                    else:
                        break
                found |= {module for module in modules if module.startswith(prefix)}
            elif not isinstance(argument, ast.Constant):
                computed = True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value.split(":")[0])
    if computed:
        found |= strings
    return {module for module in found if module in modules and module != name}


@functools.cache
def tie_graph() -> dict[str, frozenset[str]]:
    return {name: frozenset(ties(name, path)) for name, path in package_modules().items()}


def cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def layer_of(name: str) -> int | None:
    short = name.removeprefix(PACKAGE).removeprefix(".")
    for number, (_, patterns) in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(short, pattern) for pattern in patterns):
            return number
    return None


def test_the_package_has_no_import_cycle():
    found = cycles(tie_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(component) for component in found)


def test_no_module_ties_itself_to_a_higher_layer_and_each_has_one():
    graph = tie_graph()
    unplaced = sorted(name for name in graph if layer_of(name) is None)
    assert not unplaced, f"place these modules in a layer of tests/test_layers.py: {', '.join(unplaced)}"
    upward = [
        f"{name} ({LAYERS[layer_of(name)][0].split(':')[0]}) imports {tie} ({LAYERS[layer_of(tie)][0].split(':')[0]})"
        for name, tied in sorted(graph.items())
        for tie in sorted(tied)
        if layer_of(tie) > layer_of(name)
    ]
    assert not upward, "ties to a higher layer:\n" + "\n".join(upward)


def test_the_tie_reader_sees_importlib_ties_and_cycles():
    # The test's own reader: an f-string import is a tie to each module under its prefix, a cycle is found.
    assert {f"{PACKAGE}.backends.torch_loops", f"{PACKAGE}.backends.keras_fit"} <= tie_graph()[f"{PACKAGE}.registry"]
    assert f"{PACKAGE}.jobs.run" in tie_graph()[f"{PACKAGE}.__main__"]  # its command table's "module:function"
    looped = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}
    assert cycles(looped) == [["a", "b", "c"]]


def test_docs_layout_names_every_layer_in_order():
    layout = (ROOT / "docs" / "layout.md").read_text()
    named = [line for line in layout.splitlines() if line.startswith("1. **")]
    wanted = [f"1. **{name.split(': ')[0]}**: {name.split(': ')[1]}" for name, _ in LAYERS]
    assert [line.split(" (")[0].rstrip(".") for line in named] == wanted


def test_each_class_name_names_one_class():
    homes: dict[str, list[str]] = {}
    for name, path in sorted(package_modules().items()):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                homes.setdefault(node.name, []).append(name)
    shared = {cls: where for cls, where in homes.items() if len(where) > 1}
    assert not shared, f"one name, several classes: {shared}"
