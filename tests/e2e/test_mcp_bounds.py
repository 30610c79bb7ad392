"""Every `torch mcp` tool result is at most 8 KB (8192 bytes of the JSON of its content), through the official
SDK's client over stdio and streamable HTTP: a bigger answer is a resource (torchsh://out/N) with a one-line
summary, whose resources/read gives the whole text; one too big for the store is refused (too_large) with a
hint. The fuzz runs EVERY command of the op table with a 10^8-element tensor in its first tensor slot (and
inspect and objects around it): no result over 8 KB, every error JSON {code, message, hint}, never
internal_error, the daemon alive and its objects back to where they were."""
import contextlib
import json
import os
import shutil
import time

import pytest

from support.mcpclient import RESULT_MAX, TRANSPORTS, connect, mcp, sh  # noqa: F401  (fixtures)
from support.mcpfuzz import argv_for

# 10^8 float32 elements (400 MB), shaped so that no command is cubic or one huge transform: the last two dims
# make every matrix 10000x2 (linalg's square-only ops refuse it at once, the others are linear in its size)
# and every FFT of the default dims short; reductions, sorts and pointwise ops still see all 10^8 elements.
BIG_SHAPE = ("5000", "10000", "2")
# Commands that would end the daemon under the fuzz: denied by the server's own --deny (they answer
# not_allowed through `run`, a bounded error like any other)
ENDS_THE_DAEMON = ("daemon.stop", "daemon.restart")


def test_a_big_answer_is_a_resource_with_a_summary_line_whose_read_gives_the_whole_text(sh, mcp):
    held = sh("torch arange 4000 --dtype float32")
    whole = sh.run("torch value %s" % held).out
    assert len(whole.encode()) > RESULT_MAX
    got = mcp.run("value", held)
    assert not got.is_error and got.nbytes <= RESULT_MAX and len(got.links) == 1, got.text[:300]
    summary = got.text.splitlines()[0]
    assert got.links[0] in summary and len(summary) < 200, summary
    assert mcp.read(got.links[0]) == whole


def test_an_answer_too_big_to_keep_is_refused_with_a_hint_not_held(sh, mcp):
    held = sh("torch zeros 3000 1000")
    got = mcp.run("value", held)
    error = got.error()
    assert error["code"] == "too_large" and error["hint"], error
    assert got.nbytes <= RESULT_MAX


def checked(answer, what):
    """ANSWER within the bound; when an error, the house's JSON and not internal_error. Returns it."""
    assert answer.nbytes <= RESULT_MAX, (what, answer.nbytes, answer.text[:300])
    if answer.is_error:
        code = answer.error()["code"]
        assert code != "internal_error", (what, answer.text)
    return answer


def census(session):
    """The census rows {handle: row} through `run tensors --json` (read whole even when kept as a resource)."""
    got = checked(session.run("tensors", "--json"), "tensors")
    return {row["handle"]: row for row in json.loads(session.read(got.links[0]) if got.links else got.text)}


class Fixture:
    """The fuzz's objects: the big tensor (remade when a command changed or freed it), a small one for the
    other tensor slots, a small model and its optimizer; `others`: every handle held at the start but the big
    tensor's."""

    def __init__(self, session):
        self.session = session
        self.small = session.run("zeros", "1").handles()[0]
        self.model = session.run("nn", "linear", "2", "2").handles()[0]
        self.optimizer = session.run("optim", "sgd", self.model).handles()[0]
        self.big = self.make_big()
        self.others = set(census(session)) - {self.big}

    def make_big(self):
        big = self.session.run("zeros", *BIG_SHAPE).handles()[0]
        checked(self.session.call("inspect", handle=big), "inspect big")
        return big

    def tidy(self, rows):
        """Free what the last command made; remake the big tensor when it is gone or no longer zeros of
        BIG_SHAPE without grad. Returns the handles freed."""
        made = [h for h in rows if h not in self.others and h != self.big]
        big = rows.get(self.big)
        if big is None or big.get("shape") != [int(s) for s in BIG_SHAPE] or big.get("requires_grad"):
            made += [self.big] if big is not None else []
            self.big = None
        if made:
            checked(self.session.run("free", *made), "free")
        if self.big is None:
            self.big = self.make_big()
        return made


def fuzz_one(session, fixture, row, inspected, folder):
    """One command: run it, objects, inspect what it made (a tensor once per dtype and rank). Help's answer does
    not depend on the tensor: test_mcp_tools.py bounds it for every verb and a spread of ops."""
    argv = argv_for(row, fixture.big, fixture.small,
                    {"module": fixture.model, "optimizer": fixture.optimizer}, folder)
    checked(session.run(*argv), argv)
    rows = census(session)
    for handle, made in rows.items():
        if handle in fixture.others or handle == fixture.big:
            continue
        key = (made["kind"], made.get("dtype"), len(made.get("shape") or ()))
        if key not in inspected:
            inspected.add(key)
            checked(session.call("inspect", handle=handle), "inspect %s after %s" % (handle, argv))
    checked(session.call("objects", sort="bytes", limit=50), "objects")
    fixture.tidy(rows)
    for name in os.listdir(folder):  # the files and folders its path arguments named
        if name.startswith("fuzz-"):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(folder, name))


@pytest.mark.slow  # every command of the op table on 10^8 elements: minutes on 2 cores
def test_every_command_with_a_1e8_element_tensor_answers_within_8kb_and_never_internal_error(fresh_sh):
    sh = fresh_sh()
    rows = json.loads(sh("torch ops --json"))
    pid = sh("torch daemon status | grep ^pid")
    deny = [w for name in ENDS_THE_DAEMON for w in ("--deny", name)]
    started = time.time()
    with connect(sh, TRANSPORTS[0], *deny) as first, connect(sh, TRANSPORTS[1], *deny) as second:
        fixture, inspected, failures, took = Fixture(first), set(), [], {}
        for i, row in enumerate(rows):  # each command once, the transports taking turns
            began = time.time()
            try:
                fuzz_one((first, second)[i % 2], fixture, row, inspected, sh.folder)
            except (AssertionError, ValueError) as e:  # every command's fate in one run (ValueError: not JSON)
                failures.append("%s: %s" % (row["name"], str(e)[:300]))
            took[row["name"]] = time.time() - began
        checked(first.call("objects"), "objects at the end")
        left = census(first)
    slowest = sorted(took, key=took.get, reverse=True)[:12]
    print("fuzz: %d commands in %.0f s; slowest: %s" % (len(rows), time.time() - started,
                                                        ", ".join("%s %.1fs" % (n, took[n]) for n in slowest)))
    assert not failures, "%d of %d commands:\n%s" % (len(failures), len(rows), "\n".join(failures[:30]))
    assert sh("torch daemon status | grep ^pid") == pid  # the same daemon, alive
    assert set(left) == fixture.others | {fixture.big}  # what each command made was freed
