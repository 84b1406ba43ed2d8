"""The backends' registry: which Backend runs a framework, and the loop of each of its rungs."""

from __future__ import annotations

import importlib

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.backends.contract import Backend, Loop

_BACKENDS: dict[str, Backend] = {}


class NotRegistered(LookupError):
    """A framework the catalogue lists whose backend module registers no backend for it."""


def register_backend(backend: Backend) -> None:
    """Make ``backend`` the one that runs its framework; a second one for the same framework is an error."""
    if backend.name in _BACKENDS:
        raise ValueError(f"a backend for {backend.name} is registered already")
    catalogue.framework(backend.name)  # only what the catalogue lists
    _BACKENDS[backend.name] = backend


def import_backend_module(framework: str) -> None:
    """Import the module the catalogue names for ``framework``, which registers what it implements."""
    importlib.import_module(f"{__name__}.{catalogue.framework(framework).backend}")


def backend(framework: str) -> Backend:
    import_backend_module(framework)
    if framework not in _BACKENDS:
        raise NotRegistered(f"{catalogue.framework(framework).backend} registers no backend for {framework}")
    return _BACKENDS[framework]


def loop(framework: str, variant: str) -> Loop:
    return catalogue.variant(framework, variant).loop
