"""docs/design.md cites code by name: each section a module, each subsection a name in it. A rename or a move that
leaves the page behind fails here."""

import ast
import re

from helpers import ROOT

DESIGN = ROOT / "docs" / "design.md"
MODULE = re.compile(r"^## \[`(?P<path>[^`]+\.py)`\]\(\.\./(?P=path)\)$")
NAME = re.compile(r"^### `(?P<name>[A-Za-z_][\w.]*)`$")


def defined(path) -> set[str]:
    """Every name a module defines: its functions, classes and assignments, and its classes' own members."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
    return names


def cited() -> list[tuple[str, str | None]]:
    """(module path, name) for every name the page cites, and (module path, None) for each module section."""
    found, module = [], None
    for line in DESIGN.read_text().splitlines():
        if line.startswith("## "):
            match = MODULE.match(line)
            module = match["path"] if match else None
            if module:
                found.append((module, None))
        elif (match := NAME.match(line)) and module:
            found.append((module, match["name"]))
    return found


def test_every_module_and_name_the_design_page_cites_exists():
    missing = []
    for path, name in cited():
        source = ROOT / path
        if not source.is_file():
            missing.append(path)
        elif name is not None and name.split(".")[-1] not in defined(source):
            missing.append(f"{path}: {name}")
    assert not missing, f"docs/design.md cites what is not there: {missing}"
    assert len(cited()) > 100  # the page is read: its sections and subsections were found
