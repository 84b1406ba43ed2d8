"""Every committed archive, read by today's one reader: each claim it holds is computed and worded by its one function,
its report (resealed by today's writer) says what the README says, and no reseal changed a record."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from helpers import ROOT
from tiny_mlp_bench.archive.layout import NUMBERS, OLD_NUMBERS, numbers_file
from tiny_mlp_bench.generated_docs import findings
from tiny_mlp_bench.kinds import BUSY_STUDY, ERA_STUDY, RELEASES_STUDY
from tiny_mlp_bench.records import SCHEMA_VERSION
from tiny_mlp_bench.report import across, claims, sentences
from tiny_mlp_bench.report.busy_core import idle_label
from tiny_mlp_bench.report.model import build_report
from tiny_mlp_bench.report.study import read_studies, read_study
from tiny_mlp_bench.stacks import TODAY

ARCHIVES = ROOT / "results" / "archive"
FOLDERS = sorted(p for p in ARCHIVES.iterdir() if (p / "provenance.json").is_file())
TEST_DATA = ROOT / "tests" / "data"


@pytest.fixture(scope="module")
def studies():
    return read_studies(ARCHIVES)


def test_the_one_reader_reads_every_archive_with_records_of_versions_8_and_9(studies):
    assert [s.name for s in sorted(studies, key=lambda s: s.name)] == [p.name for p in FOLDERS]
    written = {json.loads(path.read_text())["schema_version"] for p in FOLDERS for path in (p / "runs").glob("*.json")}
    assert {8, 9} <= written
    for study in studies:
        assert study.records and all(r["schema_version"] == SCHEMA_VERSION for r in study.records)  # upgraded as read
        assert study.kind[0] in ("default", "gpu", "busy", "era", "releases") and study.kind[1][0]


def test_every_claim_of_every_archive_is_computed_and_worded_by_its_one_function(studies):
    said = 0
    for study in studies:
        for claim in across.CLAIMS:
            (found,) = across.across([study], claim) or (None,)
            if found is None:
                continue
            sentence = claims.across_claim([found], findings.link)
            assert f"[`{study.name}`]" in sentence, (study.name, claim)
            own = across.claims_of(study).ratio(claim)  # one study: its own ratio, pooled alone
            assert (found.pooled.estimate, found.pooled.low, found.pooled.high) == (own.estimate, own.low, own.high)
            assert found.pooled.p_value == pytest.approx(own.p_value)
            said += 1
    assert said >= 2 * len(studies)  # each study states at least two claims
    # The front door's three claims, over every archive, within the words the README allows.
    answer = findings.front_door(studies).split("\n\n")[0]
    assert len(answer.split()) <= 120 and len(re.findall(r"[.!?](?:\s|$)", answer)) <= 4
    idle = findings.idle_studies(studies)
    for claim, wording in (
        (across.FIXED_COST, claims.fixed_cost_answer),
        (across.GPU_RESULT, claims.gpu_answer),
        (across.KERAS_RESULT, claims.keras_answer),
    ):
        assert wording(across.across(idle, claim)) in answer


def test_each_studys_report_states_the_claims_the_readme_pools(studies):
    """The report's GPU line and Keras line are across.CLAIMS' computation, the one the README pools, for every
    archive: the idle runs' claims, and beside a busy core the busy-core study's."""
    gpu = 0
    for study in studies:
        found = across.claims_of(study)
        for machine in build_report(list(study.own_records)).machines:
            if machine.stack != TODAY:  # an era study's other stacks: its report's own claims, never pooled
                continue
            busy = machine.label != idle_label(machine.label)
            keras = across.BUSY_KERAS_RESULT if busy else across.KERAS_RESULT
            assert machine.answer.keras.ratio == found.ratio(keras), (study.name, machine.label)
            assert machine.answer.gpu.ratio == (None if busy else found.ratio(across.GPU_RESULT)), study.name
            gpu += machine.answer.gpu.ratio is not None
    assert gpu == 2  # the two H200 studies


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_an_archived_report_never_says_1_runs_misnames_its_study_or_prints_a_bound_of_1(folder):
    report = (folder / "report.md").read_text()
    assert not re.search(r"\b1 runs\b", report)
    title = report.splitlines()[0].removeprefix("# ")
    titles = {
        BUSY_STUDY: sentences.BUSY_TITLE,
        ERA_STUDY: sentences.ERA_TITLE,
        RELEASES_STUDY: sentences.RELEASES_TITLE,
    }
    expected = titles.get(read_study(folder).kind[0], sentences.TITLE)
    assert title == expected
    # A ratio's interval writes each bound to the digits that show which side of 1 it lies on.
    assert not re.search(r"×[^|\n]*?\((?:[\d.,]+–1\.00|1\.00–[\d.,]+)\)", report)


def test_no_reseal_changed_a_record():
    """Every archived record's SHA-256 as it was when its archive was added, before any reseal."""
    for line in (TEST_DATA / "archived-records.sha256").read_text().splitlines():
        digest, path = line.split("  ", 1)
        assert hashlib.sha256((ARCHIVES / path).read_bytes()).hexdigest() == digest, path


def test_an_archive_sealed_before_the_numbers_rename_is_read_by_its_old_name(tmp_path):
    # The H200 study's report/model.json as its first seal wrote it, kept since the reseal replaced it.
    (tmp_path / "report").mkdir()
    (tmp_path / OLD_NUMBERS).write_bytes((TEST_DATA / "model-json" / "model.json").read_bytes())
    assert numbers_file(tmp_path) == OLD_NUMBERS
    model = json.loads((tmp_path / OLD_NUMBERS).read_text())["model"]
    assert {"machines", "records", "archived_gpu"} <= set(model)
    (tmp_path / NUMBERS).write_text("{}")
    assert numbers_file(tmp_path) == NUMBERS  # today's name, where both are
