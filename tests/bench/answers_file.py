"""The synthetic answers file the import and label-table benchmarks start from."""

from __future__ import annotations

import json

CLAIMS_PER_ANSWER = 6


def write_answers(path, answers: int, *, spans_and_justifications: bool = False) -> None:
    """Write ``answers`` answers as JSONL to ``path``: 3 passages of ~300 characters
    and 6 claims each; 4 of 5 claims cited, labeled alternately SUPPORTED and
    UNSUPPORTED by ``bench-annotator``, the rest UNCITED. With
    ``spans_and_justifications`` every citation also carries a span and every
    UNSUPPORTED label a justification (what a label table round-trips)."""
    with path.open("w") as handle:
        for n in range(answers):
            passages = [{"id": f"P{k}", "source": f"https://example.org/doc{n % 500}/{k}",
                         "text": f"Passage {k} of answer {n}: " + "retrieved evidence text " * 12} for k in (1, 2, 3)]
            claims = []
            for c in range(CLAIMS_PER_ANSWER):
                citation = {"passage_id": f"P{c % 3 + 1}"}
                claim = {"text": f"Claim {c} of answer {n} states a checkable fact [P{c % 3 + 1}].",
                         "citations": [citation] if c % 5 else [],
                         "label": ("SUPPORTED" if c % 2 else "UNSUPPORTED") if c % 5 else "UNCITED"}
                if spans_and_justifications:
                    citation["span"] = "evidence text"
                    claim["justification"] = "" if c % 2 else "The passage says something weaker."
                claims.append(claim | {"reviewer": "bench-annotator"})
            handle.write(json.dumps({"question_id": f"q{n:06d}", "question": f"Question {n}?", "run": "bench",
                                     "answer": " ".join(c["text"] for c in claims), "passages": passages,
                                     "claims": claims}) + "\n")
