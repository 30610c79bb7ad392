"""TAB for `torch lm` in bash, zsh and Nushell: after `torch lm open ` the model folders in the cwd (a folder
holding config.json, and those one level down), not other folders or files; after `torch lm info ` and
`torch lm generate ` the held lm:// handles only, each with its class and folder."""
import json
import os
import subprocess

import pytest
from support.required import require_tool

from test_completion_scripts import bash_complete


@pytest.fixture(scope="module")
def cwd(sh):
    """A folder with two model folders (one under models/), a plain folder and a file."""
    top = os.path.join(sh.folder, "lm-tab")
    for model in ("tiny", os.path.join("models", "qwen")):
        os.makedirs(os.path.join(top, model), exist_ok=True)
        with open(os.path.join(top, model, "config.json"), "w") as f:
            json.dump({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}, f)
    os.makedirs(os.path.join(top, "notes"), exist_ok=True)
    open(os.path.join(top, "tokens.txt"), "w").close()
    return top


@pytest.fixture(scope="module")
def model(sh):
    from support import tinylm
    return sh("torch lm open %s" % tinylm.folder("llama"))


def test_bash_offers_the_model_folders_after_lm_open(sh, cwd):
    assert bash_complete(sh, "torch lm open ", setup="cd %s" % cwd) == ["models/qwen", "tiny"]
    assert bash_complete(sh, "torch lm open mo", setup="cd %s" % cwd) == ["models/qwen"]


def test_bash_offers_lm_handles_after_lm_info_and_generate(sh, model):
    for line in ("torch lm info ", "torch lm generate "):
        got = bash_complete(sh, line)
        assert model in got and all(c.startswith("lm://") for c in got), got
    # bash replaces the word after its last ':' only: the candidates come back without `lm:`
    assert bash_complete(sh, "torch lm info %s" % model) == [model[len("lm:"):]]


def _zsh_candidates(sh, cwd, words):
    zsh = require_tool("zsh")
    script = ('cd %s\nautoload -U compinit && compinit -u -d "%s/.zcompdump"\neval "$(torch completions zsh)"\n'
              'compadd() { print -rl -- $cands }\nwords=(%s); CURRENT=%d; _torch\n'
              % (cwd, sh.folder, " ".join(json.dumps(w) for w in words), len(words)))
    p = subprocess.run([zsh, "-f", "-c", script], env=sh.env, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    return [line for line in p.stdout.split("\n") if line]


def test_zsh_offers_the_model_folders_after_lm_open_and_lm_handles_after_lm_info(sh, cwd, model):
    assert _zsh_candidates(sh, cwd, ["torch", "lm", "open", ""]) == ["models/qwen", "tiny"]
    handles = _zsh_candidates(sh, cwd, ["torch", "lm", "info", ""])
    assert model in handles and all(h.startswith("lm://") for h in handles)


def test_nushell_offers_the_model_folders_after_lm_open_and_lm_handles_after_lm_info(nu, sh, cwd, model):
    # nu --ide-complete parses the script, runs no `cd`: its cwd is the session's folder, holding lm-tab/
    assert nu.tab("torch lm open %s/" % os.path.basename(cwd)) == ["lm-tab/models/qwen", "lm-tab/tiny"]
    handles = nu.tab("torch lm info ")
    assert model in handles and all(h.startswith("lm://") for h in handles)
    described = {r["value"]: r["description"] for r in nu.completer('nu-complete torch "torch lm info "')}
    assert described[model].startswith("lm LlamaForCausalLM ") and described[model].endswith(" parameters llama")
