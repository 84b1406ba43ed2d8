"""The README's answer, run time, claims across studies and era answers are written from the archives' records,
never by hand."""

from __future__ import annotations

import json

import pytest

from helpers import write_study
from tiny_mlp_bench.generated_docs import findings
from tiny_mlp_bench.kinds import ERA_STUDY
from tiny_mlp_bench.report import claims
from tiny_mlp_bench.report.inference import Ratio
from tiny_mlp_bench.report.study import read_studies

RESOLVED = Ratio(2.1, 1.6, 2.4, 0.008, (5, 5))
KERAS_S, TORCH_S = (19.0, 19.5, 20.0, 20.5, 21.0), (9.0, 9.2, 9.5, 9.8, 10.0)


def write_archive(folder, name: str, day: str, **runs) -> None:
    """An archive of ``runs`` (write_study's), its provenance saying when it ran."""
    write_study(folder, name, day=day, **runs)
    provenance = json.loads((folder / name / "provenance.json").read_text())
    first = f"{day}T00:01:00+00:00"
    provenance["study"] |= {"first_run_started": first, "last_run_started": first}
    (folder / name / "provenance.json").write_text(json.dumps(provenance))


@pytest.fixture
def archives(tmp_path):
    folder = tmp_path / "archive"
    folder.mkdir()
    (folder / "README.md").write_text("the people's notes\n")
    write_archive(folder, "old-cpu", "2026-01-01", keras_s=KERAS_S, torch_s=TORCH_S)
    write_archive(folder, "new-cpu", "2026-02-01", keras_s=KERAS_S, torch_s=TORCH_S)
    write_archive(folder, "gpu", "2026-01-15", cuda_s=(25.0, 26.0, 27.0), gpu="Some GPU")
    return folder


def test_the_readme_findings_are_the_archives_as_make_findings_writes_them():
    assert findings.main(["--check"]) == 0, "run: make findings"


def test_a_resolved_ratio_is_a_claim_with_the_runs_on_each_side():
    text = claims.comparison(RESOLVED, "Keras", "torch", "In time to result")
    assert text == "In time to result, Keras was slower than torch: 2.1× (1.6–2.4) as long, 5 runs a side."
    faster = Ratio(0.5, 0.4, 0.6, 0.008, (5, 6))
    assert " was faster than torch: 0.50× (0.40–0.60) as long, 5 runs against 6." in claims.comparison(
        faster, "Keras", "torch", "Per step"
    )


@pytest.mark.parametrize(
    "found",
    [Ratio(1.1, 0.7, 1.3, 0.15, (3, 4)), Ratio(0.05, None, None, 0.33, (3, 4)), Ratio(2.0, 1.5, 2.5, 0.2, (3, 4))],
)
def test_an_unresolved_ratio_says_what_was_seen_and_that_its_runs_cannot_settle_it(found):
    assert not found.resolved
    text = claims.comparison(found, "Keras", "torch", "Per step")
    assert text.startswith("Per step, Keras took ") and " as long as torch" in text
    assert text.endswith(", but 3 runs against 4 cannot settle it.") and "slower" not in text and "faster" not in text
    # One run a side: the value as seen, bare, and that one run a side cannot settle it.
    once = claims.comparison(Ratio(72.0, None, None, 1.0, (1, 1)), "numba", "torch", "Per step")
    assert once == "Per step, numba took 72.0× as long as torch, but 1 run a side cannot settle it."


def test_a_stale_readme_is_found_and_rewritten_between_the_markers(archives, tmp_path, capsys):
    stale = tmp_path / "README.md"
    answer = f"{findings.ANSWER_BEGIN}\nan answer copied by hand\n{findings.ANSWER_END}"
    took = f"{findings.RUN_TIME_BEGIN}\na time copied by hand\n{findings.RUN_TIME_END}"
    each = f"{findings.ACROSS_BEGIN}\nclaims copied by hand\n{findings.ACROSS_END}"
    era = f"{findings.ERA_BEGIN}\nan era copied by hand\n{findings.ERA_END}"
    era += f"\n{findings.RELEASES_BEGIN}\nreleases copied by hand\n{findings.RELEASES_END}"
    stale.write_text(f"intro\n{answer}\n{took}\n{each}\n{era}\nafter\n")
    argv = ["--readme", str(stale), "--archives", str(archives)]
    assert findings.main(["--check", *argv]) == 1
    assert "the findings differ from the archives' records; run: make findings" in capsys.readouterr().out
    assert findings.main(argv) == 0
    studies = read_studies(archives)
    answer = f"{findings.ANSWER_BEGIN}\n{findings.front_door(studies)}\n{findings.ANSWER_END}"
    took = f"{findings.RUN_TIME_BEGIN}\n{findings.run_time(studies)}\n{findings.RUN_TIME_END}"
    each = f"{findings.ACROSS_BEGIN}\n{findings.across_section(studies)}\n{findings.ACROSS_END}"
    era = f"{findings.ERA_BEGIN}\n{findings.era_section(studies)}\n{findings.ERA_END}"
    era += f"\n{findings.RELEASES_BEGIN}\n{findings.releases_section(studies)}\n{findings.RELEASES_END}"
    assert (
        findings.releases_section(studies)
        == "No release sweep is archived yet: `make era-sweep` runs one on this machine."
    )
    assert stale.read_text() == f"intro\n{answer}\n{took}\n{each}\n{era}\nafter\n"
    assert findings.main(["--check", *argv]) == 0


def four_studies(folder):
    """Two default studies of Keras 2 and torch on one CPU kind, two GPU studies of one run a side."""
    write_study(folder, "cpu-1", (8.1, 8.3, 8.6, 8.8, 9.0), (5.4, 5.5, 5.7, 5.8, 6.0), day="2026-12-03")
    write_study(folder, "cpu-2", (8.0, 8.4, 8.5, 8.9, 9.1), (5.3, 5.6, 5.7, 5.9, 6.1), day="2026-12-05")
    write_study(folder, "gpu-1", (), (16.8,), cuda_s=(26.6,), gpu="Some GPU", day="2026-12-04")
    write_study(folder, "gpu-2", (), (17.0,), cuda_s=(25.0,), gpu="Some GPU", day="2026-12-04")
    return read_studies(folder)


def test_every_claim_across_the_studies_pools_each_kind_and_says_what_the_runs_do_not_settle(tmp_path):
    gpu, fit, costs, keras_step, keras_result, *rest = findings.across_section(four_studies(tmp_path)).split("\n")
    assert gpu.startswith("- To a result, the original torch loop on the GPU against the same loop")
    assert "the studies cannot settle it: [`gpu-1`](results/archive/gpu-1/report.md) 1.58×" in gpu
    # Said whether or not it resolves: the pooled estimate, its interval, p and runs; then the fit phase alone.
    assert gpu.endswith("(pooled: 1.5× (unbounded), p = 0.5, 2 runs a side).")
    assert fit.startswith("- In the fit phase alone, the original torch loop on the GPU against the same loop on the")
    # The one-time cost of today's torch on each device, beside that device's time to a result.
    assert costs.startswith("- Today's torch pays a one-time cost on every device that the asker's 2020 torch did not")
    assert "of the GPU runs' 25.0 s to 26.6 s to a result and 50.0 ms of the CPU runs' 16.8 s to 17.0 s" in costs
    assert keras_step.startswith("- Per step, Keras 2's `fit` was slower than the original torch loop: 1.5")
    assert "over 2 studies ([`cpu-1`](results/archive/cpu-1/report.md) 1.5" in keras_result
    assert keras_result.startswith("- To a result, Keras 2 was slower than the original torch loop")
    assert rest == []  # no floor rung ran: the fixed cost is not claimed


def test_the_front_door_answers_in_three_sentences_and_one_table_within_120_words(tmp_path):
    said = findings.front_door(four_studies(tmp_path), TODAYS_WORK)
    answer, table, compare, own = said.split("\n\n")
    assert answer.startswith("**The answer.** No study has yet set the original torch loop's step beside")
    assert (
        "Both Some GPU studies saw the torch loop slower on the GPU than on its own CPU (1.58× and 1.47× as long to "
        "a result, as the asker saw); 1 run a side each cannot settle it, as the exact test needs at least 4 runs a "
        "side."
    ) in answer
    assert answer.endswith(
        "Keras 2 did not reproduce the asker's order: to a result it was slower than the torch loop on the one "
        "machine kind that ran both, 1.50× as long."
    )
    assert len(answer.split()) <= 120 and answer.count(". ") + 1 <= 4
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()]
    assert rows[0] == ["machine kind", *claims.FRONT_COLUMNS.values()]
    assert rows[2] == ["the asker (2020, one run each)", "1.55 (17 s / 11 s)", "0.82 (9 s / 11 s)", "–"]
    assert rows[3] == ["Test CPU with 2 logical CPUs", "–", "1.50× (1.43–1.58): 2 studies, 10 runs a side", "–"]
    assert rows[4][:2] == [
        "Some GPU (Test CPU with 2 logical CPUs)",
        "1.58×, 1.47×: 2 studies, 1 run a side each, unsettled",
    ]
    assert compare.startswith("Compare within a column")
    assert own == "Your own machine's answer: `make run` ([Quickstart](#quickstart))."  # no study timed it
    time_make_run(tmp_path, "cpu-2", (278, 68, 210))
    own = findings.front_door(read_studies(tmp_path), TODAYS_WORK).split("\n\n")[3]
    assert own.endswith("([Quickstart](#quickstart), 4 min 38 s on a 2-core machine from a fresh clone).")


TODAYS_WORK = {key: None for key in findings.WORK_KEYS} | {"epochs": 1000, "variants": {"torch": ["seed"]}}


def time_make_run(archives, name: str, took: tuple[int, int, int], work: dict = TODAYS_WORK) -> None:
    """An archive's make_run_time.json, and its config as run doing ``work``."""
    (archives / name / "logs").mkdir()
    make_run = dict(zip(("total_s", "setup_s", "study_s"), took, strict=True))
    (archives / name / "logs" / "make_run_time.json").write_text(json.dumps(make_run))
    (archives / name / "config.yaml").write_text(json.dumps(work))  # JSON is YAML


def test_the_run_time_is_the_timed_default_studies_and_says_whether_they_met_the_aim(archives):
    said = findings.run_time(read_studies(archives), TODAYS_WORK)
    assert said == "No archived study of today's default config timed its `make run` as a whole."
    time_make_run(archives, "old-cpu", (1112, 166, 946))
    said = findings.run_time(read_studies(archives), TODAYS_WORK)
    assert said.startswith(
        "`make run` of today's default study took, from a fresh clone, 18 min 32 s on Test CPU with 2 "
    )
    assert "(one run: 2 min 46 s to set up `.venv`, 15 min 46 s for the study and its report)" in said
    assert "[`old-cpu`](results/archive/old-cpu/README.md)): over the 15 minutes" in said


def test_the_run_time_spans_the_studies_of_todays_default_config_only(archives):
    time_make_run(archives, "new-cpu", (278, 68, 210))
    time_make_run(archives, "old-cpu", (1112, 166, 946), TODAYS_WORK | {"variants": {"torch": ["seed", "fused_epoch"]}})
    said = findings.run_time(read_studies(archives), TODAYS_WORK)
    assert "4 min 38 s on Test CPU with 2 logical CPUs (one run: 1 min 8 s to set up `.venv`" in said
    assert "old-cpu" not in said and "18 min" not in said  # an older, larger default's time is not today's
    assert said.endswith("within the 15 minutes it aims at on a 2-core machine.")


def test_todays_default_work_is_the_committed_configs_with_the_catalogues_rungs():
    work = findings.todays_default_work()
    assert set(work) == set(findings.WORK_KEYS)
    assert work["epochs"] == 1000 and "seed" in work["variants"]["torch"]


def test_an_earlier_era_study_is_read_beside_the_newest_and_make_era_comes_from_the_one_that_timed_it(tmp_path):
    from test_era import era_records

    folder = tmp_path / "archive"
    # The first study timed `make era`, its replication did not; Keras 2 on the era stack took 0.5 of torch's step,
    # then 0.6.
    for name, day, keras_on_era in (("era-1", "2026-01-01", 0.5), ("era-2", "2026-02-01", 0.6)):
        (folder / name / "runs").mkdir(parents=True)
        for record in era_records({"today": 1.0, "era": 1.0}, {"today": 2.0, "era": keras_on_era}):
            (folder / name / "runs" / f"{record['identity']['run_id']}.json").write_text(json.dumps(record))
        study = {"kind": ERA_STUDY, "first_run_started": f"{day}T00:01:00+00:00"}
        (folder / name / "provenance.json").write_text(json.dumps({"study": study}))
    took = {"total_s": 1545, "setup_s": 61, "images_s": 19, "study_s": 1465, "images_first_build_s": {"era": 83}}
    (folder / "era-1" / "logs").mkdir()
    (folder / "era-1" / "logs" / "make_run_time.json").write_text(json.dumps(took))
    answer, _, source, _, earlier, _, make_era = findings.era_section(read_studies(folder)).split("\n")
    assert answer.startswith("**On the oldest stack that installs here") and "0.600× (" in answer
    assert source.startswith("From [`era-2`](results/archive/era-2/report.md) on ")
    assert earlier.startswith("An earlier era study, [`era-1`](results/archive/era-1/report.md) on ")
    assert ": On the oldest stack that installs here" in earlier and "0.500× (" in earlier
    assert make_era.startswith("`make era` took 25 min 45 s")
    assert "[`era-1`](results/archive/era-1/README.md)" in make_era
