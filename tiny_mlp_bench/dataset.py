"""Make, write and read the question's dataset as a self-describing Parquet file."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tiny_mlp_bench.atomic import atomic_path
from tiny_mlp_bench.cli import CONFIG_EPILOG

FEATURES = ("x", "y")
TARGET = "target"
COLUMNS = (*FEATURES, TARGET)
METADATA_KEY = b"tiny_mlp_bench"
FORMAT_VERSION = 1
TEST_SHARE = 0.25  # scikit-learn's default test_size, the asker's split


class DatasetError(Exception):
    """The dataset file is missing, unreadable or not one this tool wrote."""


@dataclass(frozen=True)
class Dataset:
    """Scaled train and test rows (columns x, y, target) plus the file's metadata."""

    train: np.ndarray
    test: np.ndarray
    metadata: dict
    sha256: str


def make_dataset(seed: int, n_rows: int) -> pa.Table:
    """Return the question's dataset as an Arrow table with a ``split`` column."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import MinMaxScaler

    rng = np.random.RandomState(seed)
    x = rng.randint(10, 1000, n_rows)
    y = rng.randint(10, 1000, n_rows)
    rows = np.column_stack([x, y, 4 * x + 3 * y + 10])
    rng.shuffle(rows)
    scaler = MinMaxScaler()
    scaled = scaler.fit_transform(rows)
    train, test = train_test_split(scaled, test_size=TEST_SHARE, random_state=seed)

    values = np.vstack([train, test])
    split = ["train"] * len(train) + ["test"] * len(test)
    metadata = {
        "format_version": FORMAT_VERSION,
        "generator": "seed question: randint(10, 1000) x and y, target 4x+3y+10",
        "seed": seed,
        "n_rows": n_rows,
        "n_train": len(train),
        "n_test": len(test),
        "columns": list(COLUMNS),
        "scaler_min": dict(zip(COLUMNS, scaler.data_min_.tolist(), strict=True)),
        "scaler_max": dict(zip(COLUMNS, scaler.data_max_.tolist(), strict=True)),
    }
    table = pa.table({name: values[:, i] for i, name in enumerate(COLUMNS)} | {"split": split})
    return table.replace_schema_metadata({METADATA_KEY: json.dumps(metadata, sort_keys=True)})


def train_rows(n_rows: int) -> int:
    """Training rows of a dataset of ``n_rows``, without making it: scikit-learn's split rounds the test rows up."""
    return n_rows - math.ceil(n_rows * TEST_SHARE)


def write_dataset(table: pa.Table, path: Path) -> None:
    """Write the table so that equal tables give byte-identical files; never half-written."""
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", write_statistics=False)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def read_dataset(path: Path) -> Dataset:
    """Read a dataset written by :func:`write_dataset`; raise DatasetError naming what is wrong."""
    path = Path(path)
    hint = "delete it and rerun the make_dataset rule (snakemake regenerates it)"
    if not path.is_file():
        raise DatasetError(f"dataset file {path} does not exist: run the make_dataset rule first")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as err:
        raise DatasetError(f"dataset file {path} is not a readable Parquet file ({err}); {hint}") from err
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    missing = [c for c in (*COLUMNS, "split") if c not in table.column_names]
    if raw is None or missing:
        raise DatasetError(
            f"dataset file {path} was not written by tiny-mlp-bench (missing metadata or columns {missing}); {hint}"
        )
    metadata = json.loads(raw)
    if metadata.get("format_version") != FORMAT_VERSION:
        raise DatasetError(
            f"dataset file {path} has format_version {metadata.get('format_version')}, "
            f"this code reads {FORMAT_VERSION}; {hint}"
        )
    values = np.column_stack([table[c].to_numpy() for c in COLUMNS])
    split = np.asarray(table["split"].to_pylist())
    return Dataset(
        train=values[split == "train"],
        test=values[split == "test"],
        metadata=metadata,
        sha256=file_sha256(path),
    )


def parse_args(argv=None, prog=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Write the question's dataset (x, y in randint(10, 1000); 4x + 3y + 10) as one Parquet file.",
        epilog=CONFIG_EPILOG,
    )
    parser.add_argument("--seed", type=int, required=True, help="seed of the NumPy generator: the config's seed")
    parser.add_argument("--n-rows", type=int, required=True, help="rows before the split: the config's n_rows")
    parser.add_argument("--output", type=Path, required=True, help="Parquet file to write")
    args = parser.parse_args(argv)
    if args.n_rows < 4:
        parser.error(f"--n-rows must be at least 4 (got {args.n_rows})")
    return args


def main(argv=None, prog=None) -> int:
    """`tiny-mlp-bench dataset` (scripts/make_dataset.py, the dataset rule's program)."""
    args = parse_args(argv, prog)
    write_dataset(make_dataset(args.seed, args.n_rows), args.output)
    print(f"wrote {args.output} (sha256 {file_sha256(args.output)})", file=sys.stderr)
    return 0
