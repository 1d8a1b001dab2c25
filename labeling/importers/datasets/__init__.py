"""Readers of public attribution datasets (SPEC §6), one module per format:
each turns a dataset's own files into answers-file drafts
(``labeling.importers.datasets.common``), keeps every annotator as their own
reviewer where the dataset names them, keeps the dataset's graded label in
the justification (or the citation judgment's evidence), and declares its
``SOURCE`` (name, repository, commit, licence, what is lost) for the run's
provenance. No ORM: ``labeling.importers.datasets.load`` writes.
"""

from __future__ import annotations

from types import ModuleType

from labeling.importers.datasets import alce, expertqa, hagrid, lfqa_verification, liu2023, ragtruth

FORMATS: dict[str, ModuleType] = {
    "expertqa": expertqa,
    "alce": alce,
    "liu2023": liu2023,
    "lfqa-verification": lfqa_verification,
    "hagrid": hagrid,
    "ragtruth": ragtruth,
}
# Other names the datasets go by.
ALIASES: dict[str, str] = {"salad": "lfqa-verification", "verifiability": "liu2023"}


def dataset_reader(name: str) -> ModuleType:
    """The reader module of format ``name`` (or an alias); ValueError naming the formats."""
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    if key not in FORMATS:
        known = ", ".join([*FORMATS, *ALIASES])
        raise ValueError(f"unknown dataset format {name!r}: use one of {known}")
    return FORMATS[key]
