"""What every client pays in every conversation: at most 12 tools, at most 3,000 cl100k tokens of definitions."""
import anyio
from torchsh.agents import main


def test_the_tool_definitions_fit_the_budget():
    definitions = anyio.run(main.tool_definitions, main.parser().parse_args([]))
    names = {d["name"] for d in definitions}
    assert {"search", "help", "run", "inspect", "objects", "runs", "plot", "history"} <= names
    assert len(definitions) <= 12
    count = main.tokens(main.json.dumps(definitions, separators=(",", ":")))
    assert count is not None and count <= 3000
    assert main.budget_line(definitions) == "%d tools, %d tokens (cl100k)" % (len(definitions), count)
