"""The scripted 10-task agent suite (issue 39): every task succeeds through `torch mcp` (the SDK's client over
stdio) and through a plain bash tool, and the MCP transcripts together are at least 30 % smaller in
cl100k_base tokens than the bash ones.

Each task runs twice, each side on a fresh private daemon of its own with the same files and objects to start
from (support/agenttasks.py says how the two sides' calls were chosen). A transcript is what the agent's model
reads: the tool definitions it is given (bash: a one-tool definition written out in support/agentsides.py;
MCP: tools/list), then every call's arguments and every result's content as JSON. Both accountings must be
30 % smaller: ten fresh agents (each task pays its definitions and its look-ups: the bash agent's `torch --help`,
the MCP agent's tools/list), and one agent doing the ten in order (definitions once, each look-up once).
`pytest -s` prints the table the closing note quotes.
"""
import pytest

from conftest import own_daemon
from support import agenttasks as first
from support import agenttasks_more as more
from support.agentsides import BashTool, McpAgent
from support.mcpclient import connect, sdk, sh  # noqa: F401  (fixture: the module's own daemon)

pytestmark = pytest.mark.slow

NO_SETUP = None
# name: (setup, bash side, MCP side, check); every task starts from flowers.csv in its folder
TASKS = {
    "csv_classifier": (NO_SETUP, first.csv_bash, first.csv_mcp, first.csv_check),
    "sweep": (NO_SETUP, first.sweep_bash, first.sweep_mcp, first.sweep_check),
    "resume_stopped_run": (NO_SETUP, first.resume_bash, first.resume_mcp, first.resume_check),
    "onnx_export": (first.onnx_setup, first.onnx_bash, first.onnx_mcp, first.onnx_check),
    "biggest_tensor": (first.many_setup, first.biggest_bash, first.biggest_mcp, first.biggest_check),
    "large_tensor_stats": (more.big_setup, more.stats_bash, more.stats_mcp, more.stats_check),
    "compare_runs": (more.runs_setup, more.runs_bash, more.runs_mcp, more.runs_check),
    "plot_loss": (more.plot_setup, more.plot_bash, more.plot_mcp, more.plot_check),
    "replay_history": (more.xy_setup, more.history_bash, more.history_mcp, more.history_check),
    "tiny_lm_generate": (more.lm_setup, more.lm_bash, more.lm_mcp, more.lm_check),
}
RATIO = 0.7
SIDES = ("bash", "mcp")
MEASURED = {}  # name -> {side: its Transcript}


def run_side(name, side):
    """One side of one task on a daemon of its own, checked: its Transcript."""
    setup, bash_side, mcp_side, check = TASKS[name]
    with own_daemon() as sh:
        first.flowers_csv(sh.folder)
        if setup:
            setup(sh, sh.folder)
        if side == "bash":
            tool = BashTool(sh.folder, sh.env)
            try:
                outcome = bash_side(tool)
            finally:
                tool.close()
            transcript = tool.transcript
        else:
            with connect(sh, "stdio") as session:
                agent = McpAgent(session, sh.folder)
                outcome = mcp_side(agent)
            transcript = agent.transcript
        check(outcome, folder=sh.folder, sh=sh)
    return transcript


def measure(name):
    if name not in MEASURED:
        MEASURED[name] = {side: run_side(name, side) for side in SIDES}
    return MEASURED[name]


def fresh(name, side):
    """A fresh agent for this task alone: its definitions, then every call and result."""
    t = MEASURED[name][side]
    return t.definition_tokens() + t.tokens()


def session(names, side):
    """One agent doing the tasks in order: definitions once, each look-up once."""
    known = set()
    return MEASURED[names[0]][side].definition_tokens() + sum(MEASURED[n][side].tokens(known) for n in names)


def table(names):
    lines = ["%-20s %6s %6s %6s  %s" % ("task (fresh agent)", "bash", "mcp", "ratio", "calls")]
    for name in names:
        b, m = fresh(name, "bash"), fresh(name, "mcp")
        lines.append("%-20s %6d %6d %6.2f  %d vs %d" % (name, b, m, m / b, MEASURED[name]["bash"].calls(),
                                                       MEASURED[name]["mcp"].calls()))
    b, m = (sum(fresh(n, side) for n in names) for side in SIDES)
    lines.append("%-20s %6d %6d %6.2f" % ("10 fresh agents", b, m, m / b))
    b, m = (session(names, side) for side in SIDES)
    lines.append("%-20s %6d %6d %6.2f  (definitions once, each look-up once)" % ("one agent, in order", b, m, m / b))
    return "\n".join(lines)


@pytest.mark.parametrize("name", list(TASKS))
def test_each_task_succeeds_through_mcp_and_through_bash(name):
    sdk()
    got = measure(name)
    print("\n" + table([name]))
    assert got["mcp"].calls() >= 1 and got["bash"].calls() >= 1


def test_the_suite_through_mcp_is_at_least_30_percent_smaller_in_tokens():
    sdk()
    names = list(TASKS)
    for name in names:
        measure(name)
    print("\n" + table(names))
    bash, mcp = (sum(fresh(n, side) for n in names) for side in SIDES)
    assert mcp <= RATIO * bash, "10 fresh agents: MCP %d tokens > %.1f x bash %d\n%s" % (mcp, RATIO, bash, table(names))
    bash, mcp = (session(names, side) for side in SIDES)
    assert mcp <= RATIO * bash, "one agent: MCP %d tokens > %.1f x bash %d\n%s" % (mcp, RATIO, bash, table(names))
