"""search ranks the op table's rows by the query's words; help shows one row's compact schema."""
from torchsh.agents import catalog

ROWS = [
    {"name": "addmm", "summary": "Performs a matrix multiplication of mat1 and mat2, then adds input.",
     "category": "linalg", "aliases": [], "verb": False, "replies": []},
    {"name": "add", "summary": "Adds other, scaled by alpha, to input.", "category": "pointwise",
     "aliases": [], "verb": False, "replies": [], "read_only": True,
     "signatures": ["add(Tensor input, Tensor other, *, Scalar alpha=1) -> Tensor"]},
    {"name": "nn.linear", "summary": "Applies an affine linear transformation to the incoming data.",
     "category": "nn", "aliases": ["Linear"], "verb": True, "replies": [], "read_only": False},
    {"name": "nn.rnn", "summary": "Apply a multi-layer Elman RNN with non-linearity to an input sequence.",
     "category": "nn", "aliases": ["RNN"], "verb": True, "replies": []},
    {"name": "session.load", "summary": "Load what session save wrote.", "category": "objects", "aliases": [],
     "verb": True, "replies": []},
    {"name": "nn.save", "summary": "Write a model's state dict to a file.", "category": "nn", "aliases": [],
     "verb": True, "replies": []},
    {"name": "fit", "summary": "Train a model on a dataset.", "category": "optim", "aliases": [], "verb": True,
     "replies": ["follow"], "signatures": ["fit(Module model, Dataset data) -> None"]},
]


def names(hits):
    return [row["name"] for row in hits]


def test_an_exact_name_comes_before_longer_names_that_contain_it():
    assert names(catalog.rank(ROWS, "add", 5))[:2] == ["add", "addmm"]


def test_a_name_word_beats_words_found_only_in_summaries():
    assert names(catalog.rank(ROWS, "save", 5)) == ["nn.save", "session.load"]
    assert names(catalog.rank(ROWS, "linear layer", 5))[0] == "nn.linear"


def test_the_limit_and_a_query_matching_nothing():
    assert len(catalog.rank(ROWS, "input", 1)) == 1
    assert catalog.rank(ROWS, "zebra", 5) == [] and catalog.rank(ROWS, "  ", 5) == []


def test_a_hit_line_names_the_command_as_typed_and_marks_jobs():
    assert catalog.line(ROWS[2]) == "nn linear: Applies an affine linear transformation to the incoming data."
    assert catalog.line(ROWS[-1]).endswith("[job]") and catalog.line(ROWS[1]).endswith("[read-only]")


def test_a_schema_says_signatures_facts_and_an_example():
    text = catalog.schema(ROWS[-1], catalog.example_of("usage: torch fit\n\nexample:\n  torch fit $m $d\n"))
    assert text.splitlines() == ["torch fit: Train a model on a dataset.", "fit(Module model, Dataset data) -> None",
                                 "starts a job: use the jobs tool, or add --detach", "example: torch fit $m $d"]
    assert "read-only" in catalog.schema(ROWS[1]) and "may change state" in catalog.schema(ROWS[2])


def test_a_typed_command_is_the_tables_name():
    assert catalog.op_name("torch nn save") == "nn.save" and catalog.op_name("linalg.qr") == "linalg.qr"
