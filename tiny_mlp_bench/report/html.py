"""The Markdown report as one web page with its charts inside: Snakemake's HTML report shows it inline."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from markdown_it import MarkdownIt

STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222 }
table { border-collapse: collapse; margin: 1rem 0; font-size: 13px }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem }
th { background: #f3f3f3 }
img { max-width: 100% }
code { background: #f3f3f3; padding: 0 0.2rem }
"""


def report_page(markdown: str, folder: Path) -> str:
    """``markdown`` as a self-contained HTML page, each image (a path relative to ``folder``) a data URI."""
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = parser.parse(markdown)
    for token in tokens:
        for child in token.children or ():
            if child.type == "image":
                image = folder / str(child.attrs["src"])
                child.attrs["src"] = "data:image/png;base64," + base64.b64encode(image.read_bytes()).decode()
    title = next((line[2:] for line in markdown.splitlines() if line.startswith("# ")), "report")
    body = parser.renderer.render(tokens, parser.options, {})
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
        f"<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )
