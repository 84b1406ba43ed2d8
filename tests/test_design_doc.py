"""docs/design.md is organised by topic and cites code by name: each `## ` section a topic, in TOPICS' order; each
`### ` section under it a module, headed by a link to it; each `#### ` subsection under a module a name in it. A
rename or a move that leaves the page behind fails here, and so do a module outside the topics, a module under two,
and a heading at a level the page does not use."""

import ast
import re

from helpers import ROOT

DESIGN = ROOT / "docs" / "design.md"
TOPICS = ("The run", "The window", "The report", "The archive", "The GPU study")
HEADING = re.compile(r"^(?P<level>#{1,6}) ")
MODULE = re.compile(r"^### \[`(?P<path>[^`]+\.py)`\]\(\.\./(?P=path)\)$")
NAME = re.compile(r"^#### `(?P<name>[A-Za-z_][\w.]*)`$")


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


def outline() -> tuple[list[str], list[tuple[str | None, str, str | None]], list[str]]:
    """The page's topics in order; (topic, module path, name) for every name the page cites and (topic, module path,
    None) for each module section, topic None before the first topic; and every heading (but the title) that is
    neither a topic, a module section nor a name under one, as "line N: heading"."""
    topics, found, stray = [], [], []
    topic = module = None
    fenced = False
    for number, line in enumerate(DESIGN.read_text().splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else HEADING.match(line)
        if heading is None or len(heading["level"]) == 1:
            continue
        level = len(heading["level"])
        if level == 2:
            topic, module = line[3:], None
            topics.append(topic)
        elif level == 3 and (match := MODULE.match(line)):
            module = match["path"]
            found.append((topic, module, None))
        elif level == 4 and module and (match := NAME.match(line)):
            found.append((topic, module, match["name"]))
        else:
            if level == 3:
                module = None
            stray.append(f"line {number}: {line}")
    return topics, found, stray


def test_every_module_and_name_the_design_page_cites_exists():
    _, cited, _ = outline()
    missing = []
    for _, path, name in cited:
        source = ROOT / path
        if not source.is_file():
            missing.append(path)
        elif name is not None and name.split(".")[-1] not in defined(source):
            missing.append(f"{path}: {name}")
    assert not missing, f"docs/design.md cites what is not there: {missing}"
    assert len(cited) > 100  # the page is read: its module sections and name subsections were found


def test_the_design_page_puts_every_module_under_one_topic_in_order():
    topics, cited, stray = outline()
    assert topics == list(TOPICS), f"docs/design.md's topics are {topics}, not {list(TOPICS)}"
    assert not stray, f"docs/design.md has headings that are no topic, module or name under a module: {stray}"
    modules = [(topic, path) for topic, path, name in cited if name is None]
    outside = [path for topic, path in modules if topic not in TOPICS]
    assert not outside, f"docs/design.md has module sections under no topic: {outside}"
    paths = [path for _, path in modules]
    twice = sorted({path for path in paths if paths.count(path) > 1})
    assert not twice, f"docs/design.md has a section for these modules more than once: {twice}"
    empty = [topic for topic in TOPICS if topic not in {topic for topic, _ in modules}]
    assert not empty, f"docs/design.md's topics hold no module: {empty}"
