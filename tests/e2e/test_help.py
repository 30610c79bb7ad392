"""Help a PyTorch user expects: the overview, every group's listing, and op help with PyTorch's argument
descriptions and one runnable example per op (every example shown is run here)."""
import itertools
import json
import os
import subprocess
import sys

import pytest
from support.cleanup import FREE_NEW_NAMES, NAMES_BEFORE

GROUPS = ("nn", "nn functional", "optim", "sched", "daemon", "scope", "checkpoint", "linalg", "fft", "special")


@pytest.fixture(scope="module")
def rows(sh):
    return json.loads(sh("torch ops --json"))


@pytest.mark.parametrize("argv", ["", "help", "-h", "--help"])
def test_overview_lists_the_groups_and_the_common_commands(sh, argv):
    out = sh("torch " + argv)
    groups = out.split("command groups")[1].split("\n\n")[0]
    for group in ("nn", "optim", "sched", "daemon", "scope", "checkpoint", "linalg", "fft", "special"):
        assert "\n  %s " % group in groups
    common = out.split("common commands:")[1].split("\n\n")[0]
    for name in ("tensor", "value", "print", "forward", "train_step", "fit", "predict", "plot", "runs", "sweep",
                 "serve"):
        assert "\n  %s " % name in common


@pytest.mark.parametrize("words", ["add", "nn linear", "dist sample", "nn", "checkpoint save"])
def test_help_op_is_op_help(sh, words):
    assert sh("torch help " + words) == sh("torch %s --help" % words)


def test_help_of_an_unknown_op_is_unknown_op(sh):
    r = sh.run("torch help nosuchop")
    assert r.code == 2 and r.err.rstrip().endswith("[unknown_op]")


def test_every_group_in_the_overview_says_what_it_is(sh):
    groups = sh("torch help").split("command groups")[1].split("\n\n")[0].split("\n")[1:]
    assert len(groups) >= 14 and all(len(line.split(None, 1)) == 2 for line in groups)
    assert not [line for line in groups if line.rstrip().endswith(" commands")], groups


# each one imports PyTorch in a process of its own (~2.5 s): one per path through the client
@pytest.mark.parametrize("script", ["torch", "torch help add", "torch nn -h", "torch tensors --help",
                                    "torch daemon status --help"])
def test_help_never_starts_a_daemon(fresh_sh, script):
    s = fresh_sh(start=False)
    r = s.run(script)
    assert r.code == 0 and r.out.startswith("usage: torch"), r.err
    assert not os.path.exists(s.socket)
    assert s.run("torch daemon status").code == 5  # still none


def test_help_without_a_daemon_ignores_a_scope_of_a_daemon_gone(fresh_sh):
    s = fresh_sh(start=False)
    r = s.run("TORCHSH_SCOPE=scope://abc00001 TORCHSH_COLUMNS=100 torch nn --help")
    assert r.code == 0 and r.out.startswith("usage: torch nn"), r.err
    assert not os.path.exists(s.socket)


def test_help_without_a_daemon_is_the_daemons_help(fresh_sh, sh):
    s = fresh_sh(start=False)
    assert s("torch help fit") == sh("torch help fit")


def test_the_overview_without_a_daemon_is_the_daemons_and_imports_no_pytorch(sh):
    """`torch` alone with no daemon prints the overview the last table built kept (cachefiles.py): the same
    text, in a process that never imports torch."""
    env = dict(sh.env, TORCHSH_SOCKET=os.path.join(sh.folder, "none", "torchd.sock"))
    os.makedirs(os.path.dirname(env["TORCHSH_SOCKET"]), mode=0o700, exist_ok=True)
    first = subprocess.run(["torch"], env=env, capture_output=True, text=True, timeout=300)  # keeps it if none is
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "torchsh.cli.offline_help"], env=env,
                       capture_output=True, text=True, timeout=60)
    imported = [line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")]
    assert p.returncode == 0 and "torchsh.cachefiles" in imported and "torch" not in imported
    assert p.stdout == first.stdout == sh("torch") + "\n"
    assert not os.path.exists(env["TORCHSH_SOCKET"])


def _sections(text):
    return {part.split(":\n")[0]: part for part in text.split("\n\n")}


def test_fit_help_fits_80_columns_and_keeps_distributed_flags_apart(sh):
    out = sh("torch fit --help")
    examples = out.split("\nexamples:\n")[1].split("\n\n")[0]
    long = [ln for ln in out.split("\n") if len(ln) > 80 and ln not in examples.split("\n")]
    assert not long, long
    sections = _sections(out)
    arguments = sections["arguments"]
    distributed = next(v for k, v in sections.items() if k.startswith("distributed"))
    for flag in ("--nproc_per_node", "--nnodes", "--rdzv", "--strategy"):
        assert "  %s " % flag in distributed and flag + " " not in arguments
    assert "  --epochs " in arguments and "  --loss " in arguments


def test_help_is_wrapped_to_the_callers_terminal_width(sh):
    wide = sh("TORCHSH_COLUMNS=140 torch fit --help").split("\n")
    assert max(len(ln) for ln in wide if not ln.startswith("  m=")) > 100
    assert all(len(ln) <= 140 for ln in wide if not ln.startswith("  m="))


def _members(rows, group):
    """The next word of every row under a group, from `torch ops --json`."""
    prefix = group.replace(" ", ".") + "."
    return {r["name"][len(prefix):].split(".")[0] for r in rows if r["name"].startswith(prefix)}


# `torch fft` alone is no listing: it is torch.fft.fft (its bare name), reading a piped tensor
GROUP_LISTINGS = [(g, f) for f in ("", "-h", "--help") for g in GROUPS if (g, f) != ("fft", "")]


@pytest.mark.parametrize("group,flag", GROUP_LISTINGS)
def test_group_alone_or_with_help_lists_each_subcommand_on_one_line(sh, rows, group, flag):
    r = sh.run("torch %s %s" % (group, flag))
    assert r.code == 0 and r.err == ""
    assert r.out.startswith("usage: torch %s COMMAND" % group)
    lines = r.out.split("\n")
    members = _members(rows, group)
    assert members
    for word in members:
        listed = [ln for ln in lines if ln.startswith("  %s " % word) or ln == "  " + word]
        assert len(listed) == 1, (word, r.out)


def test_scope_listing_shows_its_block_form_and_the_block_form_still_runs(sh):
    out = sh("torch scope")
    assert "torch scope -- CMD" in out and "\n  begin " in out and "\n  end " in out
    assert sh("torch scope -- true; echo $?") == "0"


def test_fft_alone_is_still_the_fft_op(sh):
    assert sh("torch tensor '[1.0, 2.0]' | torch fft | torch value") == "[[3.0,0.0],[-1.0,0.0]]"


# -- op help: PyTorch's argument descriptions and a runnable example ----------------------------------

def _section(text, title):
    """The indented lines under `title:` in help output."""
    lines = text.split("\n")
    start = lines.index(title + ":") + 1
    out = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        out.append(line)
    return out


@pytest.mark.parametrize("argv, arg, owner", [
    ("add", "alpha", "torch.add"),
    ("sum", "dim", "torch.sum"),
    ("nn.functional.mse_loss", "target", "torch.nn.functional.mse_loss"),
    ("linalg solve", "B", "torch.linalg.solve"),
    ("nn linear", "in_features", "torch.nn.Linear"),
    ("optim adam", "betas", "torch.optim.Adam"),
    ("sched cosine", "T_max", "torch.optim.lr_scheduler.CosineAnnealingLR"),
])
def test_op_help_describes_each_argument_in_pytorchs_words(sh, argv, arg, owner):
    """The description is the entry of PyTorch's own "Args:" section, parsed in-process here too."""
    import inspect

    import torch  # noqa: F401 - `owner` names an object of it
    doc = inspect.getdoc(eval(owner))
    lines = doc[doc.index("\n    %s" % arg) + 1:].split("\n")  # `    T_max (int): Maximum number of iterations.`
    entry = [lines[0]] + [ln for ln in itertools.takewhile(lambda ln: ln.startswith("     "), lines[1:])]
    first_words = " ".join(entry).split(":", 1)[1].split()[:3]
    lines = _section(sh("torch %s --help" % argv), "arguments")
    at = next(i for i, ln in enumerate(lines) if ln.split()[0] == "--" + arg)
    described = []
    for ln in lines[at + 1:]:
        if ln.strip().startswith("--"):
            break
        described.append(ln.strip())
    assert " ".join(described).split()[:3] == [w.replace("`", "").replace(":attr:", "") for w in first_words]


def _help_examples(sh, names):
    """{op name: the example its --help shows}, asking `torch NAME --help` for every name."""
    script = "\n".join("printf '%%s\\t' %s; torch %s --help | sed -n '/^example:$/{n;p;}' | sed 's/^  //'; echo"
                       % (n, n) for n in names)
    out = {}
    for line in sh(script, timeout=600).split("\n"):
        name, _, example = line.partition("\t")
        if example.strip():
            out[name] = example.strip()
    return out


@pytest.mark.slow
def test_every_example_shown_by_help_runs(sh, rows):
    names = sorted(r["name"] for r in rows if not r["name"].startswith("_"))
    shown = _help_examples(sh, names)
    ops = [r["name"] for r in rows if not r["verb"]]
    assert len([n for n in ops if n in shown]) >= 0.9 * len(ops), "most PyTorch ops show an example"
    for kind in ("nn.linear", "optim.adam", "sched.cosine_annealing_lr", "matmul", "linalg.solve"):
        assert kind in shown
    failures = []
    shown.pop("session.push", None)  # pushes to another daemon: tests/e2e/test_session_cp.py runs it against one
    items = sorted(shown.items())
    for i in range(0, len(items), 100):  # one bash script per chunk
        chunk = items[i:i + 100]
        script = "\n".join("( %s ) >/dev/null 2>$TMPDIR_ERR || echo \"FAIL %s: $(head -c 300 $TMPDIR_ERR)\""
                           % (example, name) for name, example in chunk)
        r = sh.run(NAMES_BEFORE + "\nTMPDIR_ERR=$(mktemp)\n" + script + "\nrm -f $TMPDIR_ERR\n"
                   + FREE_NEW_NAMES, timeout=600)
        failures += [ln for ln in r.out.split("\n") if ln.startswith("FAIL")]
    assert not failures, "\n".join(failures[:30])


def test_help_leaves_the_random_stream_alone(sh):
    """Examples are tried in the daemon; asking for help between seeding and drawing changes nothing."""
    import torch
    torch.manual_seed(7)
    want = torch.randn(4)
    got = sh.fetch(sh("torch manual_seed 7; torch randn --help >/dev/null; torch dropout --help >/dev/null;"
                      " torch manual_seed --help >/dev/null; torch randn 4"))
    assert torch.equal(got, want)


def test_the_usage_line_brackets_optional_flags_only(sh):
    usage = " ".join(sh("torch serve --help").split("\n\n")[0].split())
    assert usage.startswith("usage: torch serve MODEL --name NAME [--port PORT]"), usage
