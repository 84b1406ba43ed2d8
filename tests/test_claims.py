"""The answer's claims are written once (tiny_mlp_bench/report/claims.py): a study's report and the README's
findings, read back from that study's report/numbers.json, word each claim alike."""

from __future__ import annotations

import json

from helpers import synthetic_record, synthetic_study
from tiny_mlp_bench.generated_docs import findings
from tiny_mlp_bench.report import sentences
from tiny_mlp_bench.report.cells import duration
from tiny_mlp_bench.report.inference import Interval
from tiny_mlp_bench.report.model import build_report
from tiny_mlp_bench.report.numbers_file import numbers_json


def report_and_model(records: list[dict]):
    """The report's one machine, and the same machine as an archive's report/numbers.json holds it."""
    report = build_report(records)
    (machine,) = report.machines
    return machine, json.loads(numbers_json(report))["model"]["machines"][0]


def test_the_report_and_the_readme_word_each_claim_alike():
    twins = [synthetic_record("numpy", "cpu", r, 1.1, variant="reference_twin", step_ms=0.08) for r in (1, 2)]
    pausing = synthetic_study() + twins
    for record in pausing:
        if record["identity"]["framework"] == "tf_keras":
            record["timings"]["phases_s"]["fit_end"] = 1.5
    machine, model = report_and_model(pausing)
    assert sentences.keras_line(machine) == f"on the CPU, {findings.keras_claim(model)}"
    assert "paused after its last epoch, up to 1.50 s" in sentences.keras_line(machine)
    assert findings.aa_bullet(model) == f"The A/A control: {sentences.aa_line(machine)}"
    # The GPU against the CPU, where one machine ran the original loop on both.
    cuda = [synthetic_record("torch", "cuda", r, 17.0 + r, step_ms=1.4) for r in (1, 2, 3, 4, 5)]
    cpu = [synthetic_record("torch", "cpu", r, 7.0 + 0.1 * r) for r in (1, 2, 3, 4, 5)]
    rest = [
        r
        for r in synthetic_study()
        if r["identity"]["device"] == "cpu" and r["identity"]["run_id"][:10] != "torch-cpu-"
    ]
    machine, model = report_and_model(rest + cpu + cuda)
    assert sentences.gpu_line(None, machine) == findings.gpu_claim(model)
    assert findings.gpu_claim(model).startswith(
        "the original torch loop was slower on the GPU than on the same machine's CPU, as in the question: 2."
    )
    assert findings.gpu_claim(model).endswith("as long to a result, 5 runs a side.")


def test_a_time_is_written_one_way_in_its_own_unit():
    assert duration(Interval(9.2, 8.7, 11.5, 5)) == "9.2 s (8.7–11.5)"
    assert duration(Interval(4.4e-5, None, None, 1)) == "44.0 µs (1 run)"
    assert duration(4.4) == "4.40 s" and duration(2.7e-6) == "2.70 µs"
    assert duration(1112.0) == "18 min 32 s" and duration(59.6) == "59.6 s"
    assert duration(206.0, approximate=True) == "3 min" and duration(27.3, approximate=True) == "27 s"
    assert duration(None) == "–" and duration(float("nan")) == "–"
