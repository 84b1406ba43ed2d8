"""Claims across studies (tiny_mlp_bench/report/across.py): each study's ratio from its own run records, pooled
over the studies of one kind, and the one rule for when a claim holds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from helpers import write_study
from tiny_mlp_bench.kinds import DEFAULT_STUDY
from tiny_mlp_bench.records import read_record
from tiny_mlp_bench.report import across, claims
from tiny_mlp_bench.report.inference import SIGNIFICANCE
from tiny_mlp_bench.report.model import build_report
from tiny_mlp_bench.report.study import read_studies

SLOWER = (8.1, 8.3, 8.6, 8.8, 9.0)  # Keras 2's runs: about 1.5x torch's
TORCH = (5.4, 5.5, 5.7, 5.8, 6.0)


def keras_result(root) -> list[across.Across]:
    return across.across(read_studies(root), across.KERAS_RESULT)


def test_a_claim_holds_where_the_pooled_test_resolves_it_and_no_study_resolves_it_the_other_way(tmp_path):
    write_study(tmp_path, "a", SLOWER, TORCH)
    write_study(tmp_path, "b", [s * 1.1 for s in SLOWER], [s * 1.1 for s in TORCH])
    (found,) = keras_result(tmp_path)
    assert found.holds and not found.one_study and not found.against
    assert [s.name for s, _ in found.studies] == ["a", "b"]
    assert found.pooled.runs == (10, 10) and 1.4 < found.pooled.estimate < 1.6
    assert found.pooled.p_value < SIGNIFICANCE and found.pooled.low > 1
    sentence = claims.across_claim([found], lambda s: s.name)
    assert sentence.startswith("To a result, Keras 2 was slower than the original torch loop: 1.5")
    assert "over 2 studies (a 1.5" in sentence


def test_a_study_resolving_the_other_way_breaks_the_claim_and_each_value_is_said(tmp_path):
    write_study(tmp_path, "a", SLOWER, TORCH)
    write_study(tmp_path, "b", SLOWER, TORCH)
    write_study(tmp_path, "c", TORCH, SLOWER)  # the reverse, resolved
    (found,) = keras_result(tmp_path)
    assert [s.name for s in found.against] == ["c"]
    assert not found.holds and found.runs_needed is None
    sentence = claims.across_claim([found], lambda s: s.name)
    assert sentence.startswith("To a result, Keras 2 against the original torch loop: on Test CPU with 2 ")
    assert "it depends on the study: a 1.5× (1.4–1.6), b 1.5× (1.4–1.6), c 0.66× (0.61–0.72);" in sentence
    assert sentence.endswith("as studies resolve it both ways, more runs a side would not settle it.")


def test_where_no_study_resolves_it_the_power_line_says_how_many_runs_would(tmp_path):
    write_study(tmp_path, "a", (7.0, 9.0, 5.5), (5.0, 7.5, 6.0))
    write_study(tmp_path, "b", (6.0, 8.0), (5.5, 7.0))
    (found,) = keras_result(tmp_path)
    assert not found.holds and not found.against and found.runs_needed > 5
    sentence = claims.across_claim([found], lambda s: s.name)
    assert "the studies cannot settle it: a 1.2× (" in sentence
    assert sentence.endswith(f"; at the spread seen, about {found.runs_needed} runs a side would resolve it.")


def test_a_study_of_one_run_a_side_adds_its_runs_but_never_disagrees(tmp_path):
    write_study(tmp_path, "a", SLOWER, TORCH)
    write_study(tmp_path, "b", SLOWER, TORCH)
    write_study(tmp_path, "c", TORCH[:1], SLOWER[:1])  # the reverse, but 1 run against 1 cannot resolve anything
    (found,) = keras_result(tmp_path)
    assert found.holds and found.pooled.runs == (11, 11) and not found.against


def test_a_study_that_ran_one_side_only_is_left_out_and_one_study_is_its_own_finding(tmp_path):
    write_study(tmp_path, "a", SLOWER, TORCH)
    write_study(tmp_path, "torch-only", (), TORCH)
    (found,) = keras_result(tmp_path)
    assert found.one_study and found.holds and [s.name for s, _ in found.studies] == ["a"]
    assert ", one study's finding (a)." in claims.across_claim([found], lambda s: s.name)


def test_studies_pool_only_with_their_own_kind_of_study_and_machine(tmp_path):
    write_study(tmp_path, "cpu", SLOWER, TORCH)
    write_study(tmp_path, "gpu-1", (), TORCH[:1], cuda_s=SLOWER[:1], gpu="Some GPU")
    write_study(tmp_path, "gpu-2", (), TORCH[1:2], cuda_s=SLOWER[1:2], gpu="Some GPU")
    studies = read_studies(tmp_path)
    assert [kind.kind[0] for kind in across.across(studies, across.KERAS_RESULT)] == [DEFAULT_STUDY]
    (gpu,) = across.across(studies, across.GPU_RESULT)
    assert gpu.kind[1][2] == "Some GPU" and len(gpu.studies) == 2 and not gpu.holds
    assert gpu.runs_needed is None  # no spread was seen: each study ran 1 run a side
    sentence = claims.across_claim([gpu], lambda s: s.name)
    assert sentence.startswith("To a result, the original torch loop on the GPU against the same loop on the same ")
    assert "the studies cannot settle it: gpu-1 1.50×, gpu-2 1.51× (1 run a side in each)" in sentence
    assert sentence.endswith(
        "; the exact test needs 4 runs a side at least (pooled: 1.5× (unbounded), p = 0.5, 2 runs a side)."
    )


def test_a_study_without_run_records_of_its_machine_is_refused_by_name(tmp_path):
    (tmp_path / "empty" / "runs").mkdir(parents=True)
    (tmp_path / "empty" / "provenance.json").write_text(json.dumps({"study": {}}))
    with pytest.raises(ValueError, match="empty: no run records in runs/"):
        read_studies(tmp_path)


def test_the_power_line_names_runs_that_resolve_the_ratio_about_as_often_as_it_says():
    rng = np.random.default_rng(7)
    estimate = 1.3
    seen = [np.exp(rng.normal(0, 0.25, 5)) for _ in range(4)]
    needed = across.runs_needed([(seen[0], seen[1]), (seen[2], seen[3])], estimate)
    spread = np.sqrt(sum(np.sum((np.log(s) - np.log(s).mean()) ** 2) for s in seen) / 16)  # within the studies

    def resolved_share(n: int) -> float:
        """How often a study of ``n`` runs a side, at the spread seen, resolves the ratio with the exact test."""
        hits = 0
        for _ in range(400):
            a, b = rng.normal(np.log(estimate), spread, n), rng.normal(0, spread, n)
            hits += stats.mannwhitneyu(a, b, method="exact").pvalue < SIGNIFICANCE
        return hits / 400

    assert 0.7 < resolved_share(needed) < 0.92  # about POWER, as the normal approximation promises
    assert resolved_share(max(needed // 2, across.fewest_runs())) < 0.6
    assert across.fewest_runs() == 4  # 2 / C(8, 4) = 0.029: the fewest runs a side at which p < 0.05 is possible


def test_a_busy_core_studys_claims_come_from_its_busy_runs_and_never_pool_with_an_idle_study(tmp_path):
    write_study(tmp_path, "idle", SLOWER, TORCH)
    write_study(tmp_path, "busy", SLOWER, TORCH)  # its idle runs
    write_study(tmp_path, "busy", TORCH, SLOWER, condition="busy")  # beside the busy core, the order turns
    studies = read_studies(tmp_path)
    assert {s.name: s.kind[0] for s in studies} == {"idle": "default", "busy": "busy"}
    (busy,) = across.across(studies, across.BUSY_KERAS_RESULT)
    assert [s.name for s, _ in busy.studies] == ["busy"] and busy.pooled.estimate < 1 and busy.one_study
    # Its idle runs still give its idle claims, a kind of their own: never pooled with the default study's.
    assert [len(kind.studies) for kind in across.across(studies, across.KERAS_RESULT)] == [1, 1]
    sentence = claims.busy_answer([busy], lambda s: s.name)
    assert sentence.startswith(
        "Beside one busy core, to a result, Keras 2 was faster than the original torch loop: 0.6"
    )
    assert sentence.endswith("one study's finding (busy).")


def test_the_gpu_verdict_pools_only_runs_alone_converged_at_one_thread_count_of_todays_records(tmp_path):
    folder = write_study(tmp_path, "gpu", (), (10.0, 11.0, 12.0, 13.0), cuda_s=(20.0, 21.0, 22.0, 23.0), gpu="G")
    runs = folder / "runs"

    def change(run_id: str, edit) -> None:
        record = json.loads((runs / f"{run_id}.json").read_text())
        edit(record)
        (runs / f"{run_id}.json").write_text(json.dumps(record))

    # A run beside another job (the side-by-side lanes of an older GPU study), one not converged, one at
    # another thread count, one written before the per-step window replayed the question's epochs.
    log = {"jobs": [{"name": "torch-cuda-seed-1", "beside": {"numpy-cpu-fused-1": 3.0}}, {"name": "torch-cpu-seed-1"}]}
    (folder / "logs").mkdir()
    (folder / "logs" / "gpu_study.json").write_text(json.dumps(log))
    change("torch-cuda-seed-2", lambda r: r["quality"].update(converged=False))
    change("torch-cpu-seed-2", lambda r: r["parameters"].update(threads=r["parameters"]["threads"] + 1))
    version_7_window = {
        "window_s": 1.0,
        "epochs": 40,
        "block_target_s": 0.05,
        "block_s": [0.1, 0.1],
        "block_cpu_s": [0.1, 0.1],
        "block_epochs": [20, 20],
    }  # trained on past the question's epochs: no canary beside its blocks
    change("torch-cpu-seed-3", lambda r: r["timings"].update(steady=version_7_window))
    study = across.claims_of(*read_studies(tmp_path))
    cuda, cpu = study.sides[across.GPU_RESULT]
    assert sorted(cuda) == [22.0, 23.0] and sorted(cpu) == [10.0, 13.0]
    fit_cuda, fit_cpu = study.sides[across.GPU_FIT]
    assert len(fit_cuda) == 2 and len(fit_cpu) == 2 and all(f < r for f, r in zip(fit_cuda, cuda, strict=True))
    assert study.one_time["cuda"]["result"] == cuda and len(study.one_time["cuda"]["optimizer"]) == 2
    assert study.one_time["cpu"]["result"] == cpu and len(study.one_time["cpu"]["optimizer"]) == 2
    # A study without such a log ran one timed job at a time: every run counts.
    (folder / "logs" / "gpu_study.json").unlink()
    study = across.claims_of(*read_studies(tmp_path))
    assert sorted(study.sides[across.GPU_RESULT][0]) == [20.0, 22.0, 23.0]
    # The study's own report states the very verdict the README pools: one rule, one computation.
    records = [read_record(path) for path in sorted(runs.glob("*.json"))]
    assert build_report(records).machines[0].answer.gpu.ratio == study.ratio(across.GPU_RESULT)
