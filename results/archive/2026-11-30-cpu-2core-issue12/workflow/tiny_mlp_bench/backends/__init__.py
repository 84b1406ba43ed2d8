"""One module per framework, each with a ``BACKEND`` (tiny_mlp_bench.driver.Backend); keras_fit has
``BACKENDS``, one per Keras backend (keras, keras_jax, keras_torch).

A backend is imported only when its framework runs, so the keras image never imports torch and
the torch image never imports TensorFlow.
"""

from __future__ import annotations

import importlib

from tiny_mlp_bench import catalogue


def backend(framework: str):
    """The Backend of a framework the catalogue lists."""
    module = importlib.import_module(f"tiny_mlp_bench.backends.{catalogue.framework(framework).backend}")
    return module.BACKENDS[framework] if hasattr(module, "BACKENDS") else module.BACKEND
