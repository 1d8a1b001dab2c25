"""Size limits shared by the browser forms, the services and the importers,
so that a file can never carry what the review page would refuse."""

# A justification is a reviewer's note; 10,000 characters is several pages of it.
MAX_JUSTIFICATION_CHARS = 10_000
# An answer, claim, passage or question text (a long report fits; a runaway file does not).
MAX_TEXT_CHARS = 1_000_000
