"""The `jobs` tool's pure parts (torchsh/agents/jobs.py): the command a start sends, what a cancel says about
resuming a fit, an ended job's answer, and the waiting loop's progress notifications against a scripted link."""
import json
from types import SimpleNamespace

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install 'torchsh[mcp]')")

from torchsh.agents import jobs  # noqa: E402
from torchsh.errors import TorchshError  # noqa: E402


def test_start_runs_the_command_detached_once_without_a_leading_torch():
    assert jobs.detached(["torch", "fit", "nn1", "o", "L"]) == ["fit", "nn1", "o", "L", "--detach"]
    assert jobs.detached(["fit", "m", "--detach", "--epochs", "2"]) == ["fit", "m", "--detach", "--epochs", "2"]
    with pytest.raises(TorchshError) as refused:
        jobs.detached(["torch"])
    assert refused.value.code == "missing_argument"


def test_a_stopped_fit_with_log_names_its_checkpoint_and_the_argv_that_resumes_it():
    argv = ["fit", "m", "o", "L", "--epochs", "9", "--log", "runs/a/", "--overwrite", "--resume", "x.safetensors"]
    advice = jobs.resume_advice(argv)
    assert advice["checkpoint"] == "runs/a/last.safetensors"
    assert advice["resume_argv"] == ["fit", "m", "o", "L", "--epochs", "9", "--log", "runs/a/", "--resume", "auto"]
    assert jobs.resume_advice(["fit", "m", "o", "L", "--log=d"])["resume_argv"][-3:] == ["--log=d", "--resume", "auto"]


def test_a_fit_without_log_or_a_job_started_elsewhere_gets_what_holds_for_it():
    assert "no checkpoint" in jobs.resume_advice(["fit", "m", "o", "L"])["resume"]
    assert "--resume auto" in jobs.resume_advice(None)["resume"]
    assert "version_N" in jobs.resume_advice(["fit", "m", "o", "L", "--log", "d", "--version"])["checkpoint"]


def test_an_ended_jobs_answer_is_one_summary_line_then_its_rows():
    rows = '{"epoch":1,"loss":0.5}\n{"epoch":2,"loss":0.25}\n'
    outcome = SimpleNamespace(stdout=rows, stderr="torch: fit: note\ntorch: fit: stopped at epoch 2 step 8\n", exit=130)
    head, *rest = jobs.ended_text({"job": "job://x", "state": "stopped"}, outcome).splitlines()
    assert json.loads(head) == {"job": "job://x", "state": "stopped", "exit": 130, "rows": 2,
                                "line": "torch: fit: stopped at epoch 2 step 8"}
    assert [json.loads(r)["epoch"] for r in rest] == [1, 2]


class ScriptedLink:
    """A link whose `job list --json` walks through STATES, one a call."""

    def __init__(self, states):
        self.states, self.calls = list(states), []

    async def cli(self, argv, stdin=None):
        self.calls.append(argv)
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        listing = [{"handle": "job://a", "verb": "fit", "state": state, "progress": "epoch 1 batch 2/4",
                    "elapsed_s": 0.1}]
        return SimpleNamespace(exit=0, stdout=json.dumps(listing), stderr="", error=None)


class Progress:
    def __init__(self):
        self.sent = []

    async def report_progress(self, progress, total=None, message=None):
        self.sent.append((progress, total, message))


def test_waiting_reports_progress_each_poll_and_ends_when_the_job_has(monkeypatch):
    monkeypatch.setattr(jobs, "POLL_S", 0.01)
    tool, ctx = jobs.JobsTool(ScriptedLink(["queued", "running", "running", "done"]), None), Progress()
    row = anyio.run(tool.wait, "job://a", 30.0, ctx)
    assert row["state"] == "done" and len(ctx.sent) == 3
    assert [p for p, _, _ in ctx.sent] == sorted(p for p, _, _ in ctx.sent) and ctx.sent[0][1] == 30.0
    assert ctx.sent[-1][2] == "fit job://a: running, epoch 1 batch 2/4"


def test_waiting_gives_up_at_wait_s_and_leaves_the_job_alone(monkeypatch):
    monkeypatch.setattr(jobs, "POLL_S", 0.01)
    link = ScriptedLink(["running"])
    row = anyio.run(jobs.JobsTool(link, None).wait, "job://a", 0.05, Progress())
    assert row["state"] == "running"
    assert all(argv == ["job", "list", "--json"] for argv in link.calls)  # never a `job stop`


class FailedJobLink:
    """A link to a daemon whose job job://a failed: `job list` says so, `job wait` answers its error line."""

    async def cli(self, argv, stdin=None):
        if argv[:2] == ["job", "list"]:
            row = {"handle": "job://a", "verb": "fit", "state": "failed", "progress": "epoch 2 batch 1/4",
                   "elapsed_s": 1.0}
            return SimpleNamespace(exit=0, stdout=json.dumps([row]), stderr="", error=None)
        error = {"code": "shape_mismatch", "message": "mat1 and mat2 shapes cannot be multiplied", "hint": None}
        return SimpleNamespace(exit=4, stdout='{"epoch":1,"loss":0.5}\n', error=error,
                               stderr="torch: fit: mat1 and mat2 shapes cannot be multiplied [shape_mismatch]\n")


def test_the_result_of_a_failed_job_is_a_tool_error_with_its_code_and_its_rows():
    got = anyio.run(jobs.JobsTool(FailedJobLink(), None).result, "job://a", 0, None)
    row = json.loads(got.content[0].text)  # bounded.error: {code, message, hint, output}
    assert got.is_error and row["code"] == "shape_mismatch"
    head = json.loads(row["output"].splitlines()[0])
    assert head["state"] == "failed" and head["rows"] == 1 and head["line"].endswith("[shape_mismatch]")
