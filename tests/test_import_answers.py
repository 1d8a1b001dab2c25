"""Answers file import (SPEC §6): atomic, idempotent,
every bad line reported, fabricated citations kept, sentence claims split."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from labeling.importers.load import run_import
from labeling.importers.records import ImportFailed
from labeling.models import Answer, Citation, Claim, Label, Passage, Question, Reviewer, Run
from tests.factories import ProjectFactory


def jsonl(*rows) -> io.BytesIO:
    return io.BytesIO("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode())


def answer_row(question_id="q1", run="r1", **overrides):
    row = {
        "question_id": question_id,
        "question": "How does the sync client handle failures?",
        "run": run,
        "answer": "It retries five times [P1]. It logs runs [P3].",
        "passages": [
            {"id": "P1", "source": "manual.md", "text": "The client retries five times."},
            {"id": "P3", "source": "manual.md", "text": "Runs are logged locally."},
        ],
        "claims": [
            {"text": "It retries five times [P1].", "citations": [{"passage_id": "P1"}]},
            {"text": "It logs runs [P3].", "citations": [{"passage_id": "P3"}]},
        ],
    }
    row.update(overrides)
    return row


def table_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count()
            for model in (Question, Run, Answer, Passage, Claim, Citation, Label, Reviewer)}


@pytest.fixture
def project(db):
    return ProjectFactory(slug="p")


def import_expert_label(project) -> dict:
    """Import ``answer_row()`` into ``project`` with its first claim labeled SUPPORTED
    by ``expert``; return the row, for the test to change and import again."""
    row = answer_row()
    row["claims"][0].update(label="SUPPORTED", reviewer="expert")
    run_import(project=project, source=jsonl(row))
    return row


@pytest.mark.django_db
def test_expertqa_file_imports_every_answer_claim_citation_and_label(expertqa_path):
    """The real file: 118 answers, 735 claims, 720 citations, 715 labels
    (735 claims minus the 20 the experts could not judge), 4 runs."""
    project = ProjectFactory(slug="expertqa")
    report = run_import(project=project, source=expertqa_path)
    assert (report.answers_created, report.claims_created, report.citations_created, report.labels_created) == (
        118, 735, 720, 715)
    assert report.runs == ["post_hoc_gs_gpt4", "post_hoc_sphere_gpt4", "rr_gs_gpt4", "rr_sphere_gpt4"]
    assert Claim.objects.filter(answer__run__name="rr_gs_gpt4").count() == 162
    assert Reviewer.objects.get(username="expertqa-annotator").kind == "external"


@pytest.mark.django_db
def test_reimporting_the_same_file_creates_no_duplicates(expertqa_path):
    project = ProjectFactory(slug="expertqa")
    run_import(project=project, source=expertqa_path)
    before = table_counts()
    report = run_import(project=project, source=expertqa_path)
    assert table_counts() == before
    assert (report.answers_created, report.answers_unchanged, report.labels_created) == (0, 118, 0)


@pytest.mark.django_db
def test_malformed_file_names_each_bad_line_and_writes_nothing(project, tmp_path, capsys):
    """Five bad lines among good ones: bad JSON (2), missing field (3), unknown
    label (4), UNCITED on a cited claim (5), duplicate claim index (6)."""
    run_import(project=project, source=jsonl(answer_row("q0")))
    before = table_counts()
    from django.core import serializers
    dump_before = serializers.serialize("json", [*Answer.objects.all(), *Claim.objects.all(), *Label.objects.all()])

    bad_label = answer_row("q3")
    bad_label["claims"][0]["label"] = "MAYBE"
    uncited_on_cited = answer_row("q4")
    uncited_on_cited["claims"][1]["label"] = "UNCITED"
    duplicate_index = answer_row("q5")
    duplicate_index["claims"][0]["index"] = 1
    duplicate_index["claims"][1]["index"] = 1
    missing = answer_row("q2")
    del missing["question"]
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join([
        json.dumps(answer_row("q1")),
        '{"question_id": "qx", "question": ',
        json.dumps(missing),
        json.dumps(bad_label),
        json.dumps(uncited_on_cited),
        json.dumps(duplicate_index),
        json.dumps(answer_row("q6")),
    ]) + "\n")

    with pytest.raises(CommandError, match="5 problem"):
        call_command("import_answers", str(path), "--project", "p")
    err = capsys.readouterr().err
    assert "line 2: (line): invalid JSON" in err
    assert "line 3: question: missing" in err
    assert "line 4: claims[0].label: unknown label 'MAYBE'" in err
    assert "line 5: claims[1].label: UNCITED on a claim with 1 citation(s)" in err
    assert "line 6: claims[1].index: duplicate claim index 1" in err
    assert "line 1:" not in err and "line 7:" not in err
    assert table_counts() == before
    dump_after = serializers.serialize("json", [*Answer.objects.all(), *Claim.objects.all(), *Label.objects.all()])
    assert dump_after == dump_before


@pytest.mark.django_db
def test_claims_without_citations_count_as_uncited_without_reviewer_effort(project):
    row = answer_row()
    row["claims"].append({"text": "Nothing else is known.", "citations": []})
    run_import(project=project, source=jsonl(row))
    from labeling.scores.metrics import resolved_claims_frame

    frame, _ = resolved_claims_frame(Run.objects.get(name="r1"))
    assert frame["label"].tolist() == [None, None, "UNCITED"]
    assert Label.objects.count() == 0


@pytest.mark.django_db
def test_fabricated_citation_is_kept_flagged_and_counted(project):
    """Claim 2 cites P9, which was not sent with the answer: kept, flagged,
    reported; fabricated rate = 1 fabricated / 2 distinct cited ids."""
    row = answer_row()
    row["claims"][1]["citations"] = [{"passage_id": "P9"}]
    report = run_import(project=project, source=jsonl(row))
    assert report.fabricated_citations == 1
    assert any("P9" in str(w) and "fabricated" in str(w) for w in report.warnings)
    citation = Citation.objects.get(cited_id="P9")
    assert citation.fabricated and citation.passage is None
    from labeling.scores.metrics import run_scores

    ids = run_scores(Run.objects.get(name="r1")).citation_ids.to_dict()
    assert (ids["fabricated"], ids["distinct_cited"], ids["fabricated_rate"]) == (1, 2, 0.5)


@pytest.mark.django_db
def test_answer_without_claims_is_split_into_sentence_claims_with_marker_citations(project):
    text = "Retries happen five times [P1]. Backoff is exponential. [1][2] Both hold【4】. Ranges work too [2-3]."
    row = answer_row(answer=text)
    del row["claims"]
    row["passages"] = [{"id": str(i), "source": "m.md", "text": f"passage {i}"} for i in (1, 2, 3, 4)]
    run_import(project=project, source=jsonl(row))
    claims = list(Claim.objects.order_by("index"))
    assert [c.text for c in claims] == [
        "Retries happen five times [P1].",
        "Backoff is exponential. [1][2]",
        "Both hold【4】.",
        "Ranges work too [2-3].",
    ]
    cited = [list(c.citations.order_by("position").values_list("cited_id", "fabricated")) for c in claims]
    assert cited == [[("P1", True)], [("1", False), ("2", False)], [("4", False)], [("2", False), ("3", False)]]
    assert [(c.start, c.end) for c in claims][0] == (0, 31)


@pytest.mark.django_db
def test_unparseable_marker_is_reported_not_dropped(project):
    row = answer_row(answer="Retries happen [3-1].")
    del row["claims"]
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=jsonl(row))
    assert [str(i) for i in failure.value.issues] == [
        "line 1: answer: unparseable citation marker '[3-1]' at character 15: range '3-1' runs backwards"
    ]
    assert Answer.objects.count() == 0


@pytest.mark.django_db
def test_changed_answer_under_the_same_run_is_rejected_not_overwritten(project):
    run_import(project=project, source=jsonl(answer_row()))
    changed = answer_row()
    changed["claims"][0]["text"] = "It retries six times [P1]."
    with pytest.raises(ImportFailed, match="already has a different answer"):
        run_import(project=project, source=jsonl(changed))
    assert Claim.objects.filter(text__contains="six").count() == 0
    report = run_import(project=project, source=jsonl(changed), run_name="r2")
    assert report.answers_created == 1 and Question.objects.count() == 1


@pytest.mark.django_db
def test_reimport_with_a_changed_label_keeps_the_old_one_as_history(project):
    row = import_expert_label(project)
    row["claims"][0].update(label="UNSUPPORTED", justification="P1 says five, not always.")
    report = run_import(project=project, source=jsonl(row))
    assert report.labels_created == 1
    history = list(Label.objects.order_by("id").values_list("value", "is_current"))
    assert history == [("SUPPORTED", False), ("UNSUPPORTED", True)]


@pytest.mark.django_db
def test_duplicate_answer_in_one_file_and_conflicting_gold_are_reported(project):
    first = answer_row("q1", gold={"supporting_ids": ["P1"]})
    second = answer_row("q1", run="r2", gold={"supporting_ids": ["P3"]})
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=jsonl(first, answer_row("q1"), second))
    assert [str(i) for i in failure.value.issues] == [
        "line 2: question_id: run 'r1' answers question 'q1' twice (also line 1)",
        "line 3: gold: gold for question 'q1' differs from line 1",
    ]


@pytest.mark.django_db
def test_gold_is_stored_per_question_with_given_flags(project):
    row = answer_row(gold={"supporting_ids": ["P1"], "references": [{"source": "manual.md", "text": ""}],
                           "expected_sources": ["manual.md"]}, answerable=True)
    run_import(project=project, source=jsonl(row, answer_row("q2")))
    q1, q2 = Question.objects.order_by("question_id")
    assert (q1.gold_ids_given, q1.gold_references_given, q1.gold_sources_given) == (True, True, True)
    assert (q2.gold_ids_given, q2.gold_references_given, q2.gold_sources_given) == (False, False, False)
    assert list(q1.gold_ids.values_list("passage_id", flat=True)) == ["P1"]
    assert list(q1.gold_references.values_list("source", "text")) == [("manual.md", "")]
    assert q1.answerable is True


@pytest.mark.django_db
def test_import_command_requires_project_when_several_exist(tmp_path):
    ProjectFactory(slug="a")
    ProjectFactory(slug="b")
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(answer_row()) + "\n")
    with pytest.raises(CommandError, match="several projects exist"):
        call_command("import_answers", str(path))
    call_command("import_answers", str(path), "--project", "b", "--run", "override")
    assert Run.objects.get().name == "override"


@pytest.mark.django_db
def test_reimport_after_a_split_applies_labels_by_claim_text_not_position(project):
    """Claim 1 is split in Citelab after the import; the file is re-imported with one
    justification edited (claim 2). Only claim 2's changed label is written, on the
    claim with that text; claim 1's label (its claim changed) is reported, not applied."""
    from labeling.review.claim_edits import claim_split

    row = answer_row()
    row["claims"][0].update(label="SUPPORTED", justification="P1 states it.", reviewer="expert")
    row["claims"][1].update(label="SUPPORTED", justification="P3 states it.", reviewer="expert")
    run_import(project=project, source=jsonl(row))
    first = Claim.objects.get(index=1)
    claim_split(claim=first, at=len("It retries"),
                first_citation_ids=list(first.citations.values_list("pk", flat=True)), second_citation_ids=[],
                base_revision=first.revision)
    assert list(Claim.objects.order_by("index").values_list("text", flat=True)) == [
        "It retries", "five times [P1].", "It logs runs [P3]."]
    row["claims"][1]["justification"] = "P3 says runs are logged locally."
    report = run_import(project=project, source=jsonl(row))
    assert report.labels_created == 1
    assert [str(w) for w in report.warnings] == [
        "line 1: claims[0].label: claim was split, merged or edited in Citelab since the import; "
        "its label from the file was not applied"]
    current = {c: (v, j) for c, v, j in Label.objects.filter(is_current=True).values_list(
        "claim__text", "value", "justification")}
    assert current == {"It logs runs [P3].": ("SUPPORTED", "P3 says runs are logged locally.")}


@pytest.mark.django_db
def test_reimporting_an_old_label_never_reverts_a_newer_one(project):
    row = import_expert_label(project)
    changed = dict(row, claims=[dict(row["claims"][0], label="UNSUPPORTED", justification="no"), row["claims"][1]])
    run_import(project=project, source=jsonl(changed))
    report = run_import(project=project, source=jsonl(row))
    assert report.labels_created == 0
    assert Label.objects.get(is_current=True).value == "UNSUPPORTED"


@pytest.mark.django_db
def test_undecodable_nested_nul_and_overlong_lines_are_reported_not_raised(project):
    long_gold = answer_row("q4", gold={"supporting_ids": ["x" * 201], "expected_sources": ["s" * 1001]})
    source = io.BytesIO(
        b"\xef\xbb\xbf" + json.dumps(answer_row("q1")).encode() + b"\n"
        + b'{"question_id": "q2", "question": "caf\xe9"}\n'
        + b"[" * 100_000 + b"\n"
        + json.dumps(answer_row("q3", answer="a\u0000b")).encode() + b"\n"
        + json.dumps(long_gold).encode() + b"\n"
    )
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=source)
    assert [str(i) for i in failure.value.issues] == [
        "line 2: (line): not UTF-8: invalid continuation byte at byte 39",
        "line 3: (line): invalid JSON: nested too deeply",
        "line 4: answer: contains the control character U+0000 at character 2, which cannot be stored: remove it",
        "line 5: gold.supporting_ids[0]: longer than 200 characters",
        "line 5: gold.expected_sources[0]: longer than 1000 characters",
    ]


@pytest.mark.django_db
def test_citation_by_source_alone_keeps_a_long_source_url(project):
    url = "https://example.org/" + "a" * 400
    row = answer_row(passages=[{"id": "1", "source": url, "text": "t"}],
                     claims=[{"text": "It retries five times [P1].", "citations": [{"source": url}]}])
    run_import(project=project, source=jsonl(row))
    citation = Citation.objects.get()
    assert (citation.cited_id, citation.fabricated) == ("1", False)
    row2 = answer_row("q2", claims=[{"text": "x", "citations": [{"source": url + "/other"}]}])
    run_import(project=project, source=jsonl(row2))
    assert Citation.objects.get(fabricated=True).cited_id == url + "/other"


@pytest.mark.django_db
def test_failed_import_into_a_new_project_leaves_no_project_behind(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"question_id": 1}\n')
    with pytest.raises(CommandError):
        call_command("import_answers", str(path), "--project", "fresh")
    from labeling.models import Project

    assert not Project.objects.filter(slug="fresh").exists()
