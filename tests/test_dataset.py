"""The dataset: faithful to the question, deterministic to the byte, and loud when corrupt."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import MinMaxScaler

from helpers import run_script
from tiny_mlp_bench.dataset import DatasetError, file_sha256, make_dataset, read_dataset, train_rows, write_dataset

# sha256 of the default dataset (seed 42, 1000 rows) written with the versions pinned in
# requirements/runtime.txt. If a lock update changes it, the Parquet bytes changed: check
# read_dataset still gives the same rows, then update this value in the same commit.
DEFAULT_DATASET_SHA256 = "f674afb042ea185931769bd6591158f73db16639bcf7c200ddc66600063b0da6"


def asker_dataset(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The question's create_dataset() and train_test_split, step by step, seeded globally."""
    np.random.seed(seed)
    random_x = np.random.randint(10, 1000, 1000)
    random_y = np.random.randint(10, 1000, 1000)
    rows = [(x, y, 4 * x + 3 * y + 10) for x, y in zip(random_x, random_y, strict=True)]
    np.random.shuffle(rows)
    df = pd.DataFrame(MinMaxScaler().fit_transform(pd.DataFrame(rows)))
    df_train, df_test = train_test_split(df, random_state=seed)
    return df_train.to_numpy(), df_test.to_numpy()


def test_rows_match_the_question_step_by_step(tmp_path):
    path = tmp_path / "d.parquet"
    write_dataset(make_dataset(seed=3, n_rows=1000), path)
    data = read_dataset(path)
    train, test = asker_dataset(seed=3)
    np.testing.assert_array_equal(data.train, train)
    np.testing.assert_array_equal(data.test, test)


def test_split_sizes_and_batches_follow_scikit_learn_defaults(tmp_path):
    path = tmp_path / "d.parquet"
    write_dataset(make_dataset(seed=42, n_rows=1000), path)
    data = read_dataset(path)
    assert (len(data.train), len(data.test)) == (750, 250)
    assert -(-len(data.train) // 64) == 12  # 12 batches of 64 per epoch, as in the question


@pytest.mark.parametrize("n_rows", [10, 101, 1000, 1003])
def test_train_rows_counts_the_splits_training_rows_without_making_it(n_rows):
    assert train_rows(n_rows) == make_dataset(seed=42, n_rows=n_rows)["split"].to_pylist().count("train")


def test_metadata_inverts_the_scaling_to_the_question_formula(tmp_path):
    path = tmp_path / "d.parquet"
    write_dataset(make_dataset(seed=42, n_rows=1000), path)
    data = read_dataset(path)
    meta = data.metadata
    assert (meta["seed"], meta["n_rows"], meta["n_train"], meta["n_test"]) == (42, 1000, 750, 250)
    rows = np.vstack([data.train, data.test])
    assert rows.min() == 0.0 and rows.max() == 1.0
    lo = np.array([meta["scaler_min"][c] for c in ("x", "y", "target")])
    hi = np.array([meta["scaler_max"][c] for c in ("x", "y", "target")])
    raw = np.rint(rows * (hi - lo) + lo)
    assert raw[:, :2].min() >= 10 and raw[:, :2].max() <= 999
    np.testing.assert_array_equal(raw[:, 2], 4 * raw[:, 0] + 3 * raw[:, 1] + 10)


def test_same_seed_gives_byte_identical_files(tmp_path):
    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    write_dataset(make_dataset(seed=42, n_rows=1000), first)
    write_dataset(make_dataset(seed=42, n_rows=1000), second)
    assert file_sha256(first) == file_sha256(second) == DEFAULT_DATASET_SHA256


def test_another_seed_gives_other_rows():
    assert not make_dataset(seed=1, n_rows=100).equals(make_dataset(seed=2, n_rows=100))


def test_command_line_writes_the_file_and_reports_its_hash(tmp_path):
    out = tmp_path / "sub" / "d.parquet"
    result = run_script("make_dataset.py", "--seed", 42, "--n-rows", 1000, "--output", out)
    assert result.returncode == 0, result.stderr
    assert DEFAULT_DATASET_SHA256 in result.stderr
    assert [p.name for p in out.parent.iterdir()] == ["d.parquet"]  # no temporary file left


def test_command_line_rejects_too_few_rows(tmp_path):
    result = run_script("make_dataset.py", "--seed", 1, "--n-rows", 2, "--output", tmp_path / "d.parquet")
    assert result.returncode == 2
    assert "--n-rows must be at least 4" in result.stderr
    assert not (tmp_path / "d.parquet").exists()


def test_corrupt_file_is_named_with_the_fix(tmp_path):
    path = tmp_path / "dataset.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(DatasetError, match=r"dataset\.parquet is not a readable Parquet file.*rerun"):
        read_dataset(path)


def test_truncated_file_is_refused(tmp_path):
    path = tmp_path / "dataset.parquet"
    write_dataset(make_dataset(seed=42, n_rows=100), path)
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DatasetError, match="not a readable Parquet file"):
        read_dataset(path)


def test_foreign_parquet_file_is_refused(tmp_path):
    path = tmp_path / "other.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0]}), path)
    with pytest.raises(DatasetError, match="not written by tiny-mlp-bench"):
        read_dataset(path)


def test_missing_file_says_which_rule_makes_it(tmp_path):
    with pytest.raises(DatasetError, match="does not exist: run the make_dataset rule"):
        read_dataset(tmp_path / "nope.parquet")
