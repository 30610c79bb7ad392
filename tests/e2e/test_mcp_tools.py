"""`torch mcp`'s tools through the official SDK's client, over stdio and streamable HTTP: at most 12 tools
whose definitions fit 3,000 cl100k tokens, yet every command is reachable (search finds verbs and ops of many
categories, help gives every command's compact schema), run answers handles the user's shell can use,
inspect summarizes without the data, objects pages through the census with a cursor."""
import json
import re

import pytest
import torch

from support.mcpclient import RESULT_MAX, connect, mcp, sh, tokens  # noqa: F401  (fixtures)

TOOLS_MAX, DEFINITION_TOKENS_MAX, HELP_SAMPLE = 12, 3000, 150
PLANNED = {"search", "help", "run", "inspect", "objects", "jobs", "runs", "plot", "history"}


def definitions(session):
    """The tools as an agent is given them: name, description and inputSchema, as tools/list sent them."""
    return [{k: t[k] for k in ("name", "description", "inputSchema") if k in t} for t in session.tools()]


def test_at_most_12_tools_whose_definitions_total_at_most_3000_tokens(mcp):
    tools = mcp.tools()
    assert len(tools) <= TOOLS_MAX, [t["name"] for t in tools]
    assert PLANNED <= {t["name"] for t in tools}
    assert all(t["description"] and "outputSchema" not in t for t in tools), tools
    count = tokens(json.dumps(definitions(mcp)))
    print("tool definitions: %d tools, %d cl100k tokens" % (len(tools), count))
    assert count <= DEFINITION_TOKENS_MAX


def test_python_m_torchsh_agents_serves_the_same_tools_as_torch_mcp(sh, mcp):
    with connect(sh, "module") as direct:
        assert definitions(direct) == definitions(mcp)


def named(text, name):
    """Whether a search's text lists NAME (a verb shows as words: nn.save -> `nn save`)."""
    return re.search(r"(^|\n)(%s|%s)\b" % (re.escape(name), re.escape(name.replace(".", " "))), text) is not None


def test_search_finds_ops_and_verbs_of_many_categories_in_one_line_each(sh, mcp):
    expected = {"softmax": "softmax", "matmul": "matmul", "adam": "optim.adam", "fit": "fit",
                "fft": "fft.fft", "save": "nn.save", "loader": "data.loader", "history": "history",
                "mse": "nn.mse_loss", "qr": "linalg.qr", "sigmoid": "sigmoid", "free": "free"}
    for query, name in expected.items():
        is_error, text, _ = found = mcp.call("search", query=query)
        assert not is_error and found.nbytes <= RESULT_MAX
        assert named(text, name), (query, text)
        assert all(re.match(r"\S+( \S+)*: ", line) for line in text.splitlines()), text  # NAME: summary
    rows = {r["name"]: r for r in json.loads(sh("torch ops --json"))}
    assert len({rows[name]["category"] for name in expected.values()}) >= 8
    assert {rows[name]["verb"] for name in expected.values()} == {True, False}
    limited = mcp.call("search", query="linalg", limit=5).text
    assert 1 <= len(limited.strip().splitlines()) <= 5


def help_sample(sh):
    """Every verb and HELP_SAMPLE of the generated ops, spread evenly over their sorted names."""
    rows = json.loads(sh("torch ops --json"))
    verbs = sorted(r["name"] for r in rows if r["verb"])
    ops = sorted(r["name"] for r in rows if not r["verb"])
    step = max(1, len(ops) // HELP_SAMPLE)
    return verbs + ops[::step][:HELP_SAMPLE]


@pytest.mark.slow  # ~450 help and search calls: 10-13 s per transport on 2 cores
def test_search_finds_and_help_describes_every_verb_and_a_spread_of_ops(sh, mcp):
    names = help_sample(sh)
    assert len(names) > HELP_SAMPLE
    for name in names:
        is_error, text, _ = got = mcp.call("help", command=name)
        assert not is_error, (name, text)
        assert got.nbytes <= RESULT_MAX and not got.links, (name, got.nbytes)
        assert name.split(".")[-1] in text, (name, text)
        assert named(mcp.call("search", query=name.replace(".", " "), limit=50).text, name), name
    assert mcp.call("help", command="no_such_command").error()["code"] == "unknown_op"


def test_run_answers_handles_that_the_users_shell_holds_too(sh, mcp):
    is_error, text, _ = made = mcp.run("arange", "6", "--dtype", "float32")
    assert not is_error and len(made.handles()) == 1, text
    handle = made.handles()[0]
    assert torch.equal(sh.fetch(handle), torch.arange(6, dtype=torch.float32))
    viewed = mcp.run("reshape", handle, "2", "3").handles()
    assert json.loads(sh("torch shape %s" % viewed[0])) == [2, 3]
    from_stdin = mcp.run("mul", "-", "2", stdin=handle + "\n").handles()
    assert torch.equal(sh.fetch(from_stdin[0]), torch.arange(6, dtype=torch.float32) * 2)


def test_inspect_summarizes_a_tensor_without_its_data(sh, mcp):
    values = torch.linspace(-1, 1, 1_000_000).reshape(1000, 1000)
    values[500, 500], values[999, 998] = 0.123456789, float("nan")
    handle = sh.put(values)
    is_error, text, _ = seen = mcp.call("inspect", handle=handle)
    assert not is_error and seen.nbytes <= RESULT_MAX and not seen.links, text
    assert "0.123456" not in text  # an element that is neither min nor max nor in the corner
    facts = json.loads(text)
    assert facts["shape"] == [1000, 1000] and facts["dtype"] == "float32" and facts["nan"] == 1
    finite = values[~values.isnan()]
    assert (facts["min"], facts["max"]) == (finite.min().item(), finite.max().item())
    assert abs(facts["mean"] - finite.double().mean().item()) < 1e-6
    assert len(str(facts["corner"]).split(",")) < 40  # a corner, not the tensor


def test_inspect_names_a_models_layers_and_refuses_a_bad_handle(mcp):
    model = mcp.run("nn", "sequential", "linear 3 4", "relu", "linear 4 1").handles()[0]
    is_error, text, _ = mcp.call("inspect", handle=model)
    assert not is_error and "Sequential" in text and "21 parameters" in text, text
    assert mcp.call("inspect", handle="tensor://nonsense").is_error


def pages(session, **args):
    """Every page of the objects tool, following next_cursor; [(text, nbytes)]."""
    out, cursor = [], None
    while True:
        got = session.call("objects", **args, **({"cursor": cursor} if cursor else {}))
        assert not got.is_error, got.text
        out.append((got.text, got.nbytes))
        more = re.search(r"next_cursor\W+(\S+)", got.text)
        if not more:
            return out
        cursor = more.group(1)
        assert len(out) < 1000, "the cursor does not end"


def test_objects_pages_through_more_objects_than_a_page_with_its_cursor(sh, mcp):
    made = sh("for i in $(seq 45); do torch zeros 2 --dtype int8; done").split()
    listed = pages(mcp, limit=20)
    assert len(listed) >= 3
    seen = [h for text, nbytes in listed for h in re.findall(r"^(\S+://\S+)", text, re.M)]
    assert all(nbytes <= RESULT_MAX for _, nbytes in listed)
    assert all(len(re.findall(r"^\S+://", text, re.M)) <= 20 for text, _ in listed)
    assert len(seen) == len(set(seen)) and set(made) <= set(seen)
    models = [h for text, _ in pages(mcp, kind="nn") for h in re.findall(r"^(\S+://\S+)", text, re.M)]
    assert all(h.startswith("nn://") for h in models)
    sh("torch free " + " ".join(made))
