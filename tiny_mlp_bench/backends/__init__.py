"""The backends' registry: which :class:`~tiny_mlp_bench.backends.contract.Backend` runs a framework and
which loop runs each of its variants.

The catalogue names each framework's backend module; importing that module registers its backends
and loops (``register_backend``, ``register_loops``), and imports no framework, so the keras image never
imports torch and the torch image never imports TensorFlow. A test imports every backend module in one
process and holds the registry equal to the catalogue.
"""

from __future__ import annotations

import importlib

from tiny_mlp_bench import catalogue
from tiny_mlp_bench.backends.contract import Backend, Loop

_BACKENDS: dict[str, Backend] = {}
_LOOPS: dict[tuple[str, str], Loop] = {}


class NotRegistered(LookupError):
    """A framework or variant the catalogue lists but its backend module does not implement."""


def register_backend(backend: Backend) -> None:
    """Make ``backend`` the one that runs its framework; a second one for the same framework is an error."""
    if backend.name in _BACKENDS:
        raise ValueError(f"a backend for {backend.name} is registered already")
    catalogue.framework(backend.name)  # only what the catalogue lists
    _BACKENDS[backend.name] = backend


def register_loops(framework: str, loops: dict[str, Loop]) -> None:
    """Register the loop of each of ``framework``'s variants named in ``loops``."""
    for variant, loop in loops.items():
        catalogue.variant(framework, variant)  # only what the catalogue lists
        if (framework, variant) in _LOOPS:
            raise ValueError(f"a loop for {framework} {variant} is registered already")
        _LOOPS[framework, variant] = loop


def import_backend_module(framework: str) -> None:
    """Import the module the catalogue names for ``framework``, which registers what it implements."""
    importlib.import_module(f"{__name__}.{catalogue.framework(framework).backend}")


def backend(framework: str) -> Backend:
    """The Backend of a framework the catalogue lists."""
    import_backend_module(framework)
    if framework not in _BACKENDS:
        raise NotRegistered(f"{catalogue.framework(framework).backend} registers no backend for {framework}")
    return _BACKENDS[framework]


def loop(framework: str, variant: str) -> Loop:
    """The loop that runs ``framework``'s ``variant``."""
    import_backend_module(framework)
    if (framework, variant) not in _LOOPS:
        raise NotRegistered(f"{catalogue.framework(framework).backend} registers no loop for {framework} {variant}")
    return _LOOPS[framework, variant]


def registered() -> dict[str, list[str]]:
    """What the imported backend modules registered: each framework's variants, in registration order."""
    found: dict[str, list[str]] = {name: [] for name in _BACKENDS}
    for framework, variant in _LOOPS:
        found.setdefault(framework, []).append(variant)
    return found
