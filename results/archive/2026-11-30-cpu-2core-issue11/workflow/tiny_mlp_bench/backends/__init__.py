"""One module per framework, each with a ``BACKEND`` (tiny_mlp_bench.driver.Backend).

A backend is imported only when its framework runs, so the keras image never imports torch and
the torch image never imports TensorFlow.
"""

from __future__ import annotations

import importlib

from tiny_mlp_bench import catalogue


def backend(framework: str):
    """The Backend of a framework the catalogue lists."""
    module = catalogue.framework(framework).backend
    return importlib.import_module(f"tiny_mlp_bench.backends.{module}").BACKEND
