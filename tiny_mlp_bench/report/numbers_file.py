"""The report model as report/numbers.json (report/model.json in archives sealed by older code): every number the
report states, and the versions that computed them."""

from __future__ import annotations

import dataclasses
import json
import math
import platform
from importlib import metadata

import numpy as np
import pandas as pd

# What the rendered bytes depend on besides the records and the code.
RENDER_PACKAGES = ("numpy", "pandas", "pyarrow", "matplotlib", "pillow", "tabulate", "jinja2")
RELATIVE_TOLERANCE = 1e-9


def versions() -> dict[str, str]:
    return {"python": platform.python_version(), **{name: metadata.version(name) for name in RENDER_PACKAGES}}


def plain(value):
    """``value`` as JSON's types: dataclasses and dicts as objects, tables as row lists, NaN, inf and NA as null."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, pd.DataFrame):
        return [plain(row) for row in value.astype(object).to_dict(orient="records")]
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [plain(item) for item in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, bool | int | str):
        return value
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return str(value)


def numbers_json(report) -> str:
    return json.dumps({"versions": versions(), "model": plain(report)}, indent=1, allow_nan=False) + "\n"


def is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def row(item, index: int):
    """A table row by its run's id where it has one (that run's record is what changed), else by its index."""
    return item["run_id"] if isinstance(item, dict) and isinstance(item.get("run_id"), str) else index


def first_difference(ours, theirs, where: str = "model") -> str | None:
    """Where two plain models first differ, and how; None where numbers agree to RELATIVE_TOLERANCE, all else equal."""
    if is_number(ours) and is_number(theirs):
        same = math.isclose(ours, theirs, rel_tol=RELATIVE_TOLERANCE, abs_tol=0.0)
    elif isinstance(ours, dict) and isinstance(theirs, dict):
        if ours.keys() != theirs.keys():
            keys = ", ".join(sorted(ours.keys() ^ theirs.keys())[:5])
            return f"{where}: the archive and the recomputation hold different entries ({keys})"
        return next((d for k in ours if (d := first_difference(ours[k], theirs[k], f"{where}.{k}"))), None)
    elif isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return f"{where} has {len(ours)} items in the archive, {len(theirs)} recomputed from its records"
        pairs = enumerate(zip(ours, theirs, strict=True))
        return next((d for i, (a, b) in pairs if (d := first_difference(a, b, f"{where}[{row(a, i)}]"))), None)
    else:
        same = ours == theirs
    return None if same else f"{where} is {ours!r} in the archive, {theirs!r} recomputed from its records"
