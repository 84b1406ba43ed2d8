"""The answer's claims are written once (tiny_mlp_bench/report/claims.py): the report's first screen words each
claim through them, and a time is written one way."""

from __future__ import annotations

from helpers import synthetic_record, synthetic_study
from tiny_mlp_bench.report import claims, sentences
from tiny_mlp_bench.report.cells import duration
from tiny_mlp_bench.report.inference import Interval
from tiny_mlp_bench.report.model import build_report


def test_the_first_screen_words_the_gpu_verdict_keras_and_the_aa_control_through_the_claims():
    twins = [synthetic_record("numpy", "cpu", r, 1.1, variant="reference_twin", step_ms=0.08) for r in (1, 2)]
    cuda = [synthetic_record("torch", "cuda", r, 17.0 + r, step_ms=1.4) for r in (1, 2, 3, 4, 5)]
    cpu = [synthetic_record("torch", "cpu", r, 7.0 + 0.1 * r) for r in (1, 2, 3, 4, 5)]
    rest = [r for r in synthetic_study() if r["identity"]["run_id"][:10] != "torch-cpu-"]
    for record in rest:
        if record["identity"]["framework"] == "tf_keras":
            record["timings"]["phases_s"]["fit_end"] = 1.5
    report = build_report([*rest, *twins, *cpu, *cuda])
    (machine,) = report.machines
    gpu = sentences.gpu_line(report, machine)
    assert gpu == claims.gpu_claim(machine.answer.gpu.ratio)
    assert gpu.startswith("the original torch loop was slower on the GPU than on the same machine's CPU, as in the ")
    assert gpu.endswith("as long to a result, 5 runs a side.")
    keras = sentences.keras_line(machine)
    assert keras == f"on the CPU, {sentences.keras_claim_of(machine)}"
    assert "paused after its last epoch, up to 1.50 s" in keras
    assert sentences.aa_line(machine).startswith("numpy-cpu `reference_twin` runs `reference`'s very code under")


def test_a_time_is_written_one_way_in_its_own_unit():
    assert duration(Interval(9.2, 8.7, 11.5, 5)) == "9.2 s (8.7–11.5)"
    assert duration(Interval(4.4e-5, None, None, 1)) == "44.0 µs (1 run)"
    assert duration(4.4) == "4.40 s" and duration(2.7e-6) == "2.70 µs"
    assert duration(1112.0) == "18 min 32 s" and duration(59.6) == "59.6 s"
    assert duration(206.0, approximate=True) == "3 min" and duration(27.3, approximate=True) == "27 s"
    assert duration(None) == "–" and duration(float("nan")) == "–"
