"""TAB completion: `torch __complete` answers from the op table and the registry; the bash script is
driven through COMP_LINE/COMP_WORDS like bash's own completion; zsh and fish get smoke tests (fish
for real with `complete -C`); without those shells they skip with the reason, and fail under CI."""
from support.required import require_tool


def bash_complete(sh, line, setup=""):
    """COMPREPLY for the command line `line` (cursor at its end), one candidate per output line."""
    script = """%s
eval "$(torch completions bash)"
line=%s
COMP_LINE=$line; COMP_POINT=${#line}
read -ra COMP_WORDS <<< "$line"; [[ $line == *' ' ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_torch_complete
printf '%%s\\n' "${COMPREPLY[@]}"
""" % (setup, _quote(line))
    return [x for x in sh(script).split("\n") if x]


def _quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def test_completion_script_is_registered_for_torch(sh):
    assert "_torch_complete" in sh('eval "$(torch completions bash)"; complete -p torch')


def test_bash_completes_op_names_and_namespaces(sh):
    got = bash_complete(sh, "torch lin")
    assert "linalg" in got and "linspace" in got and "linear" in got
    assert bash_complete(sh, "torch linalg q") == ["qr"]
    assert "rfft" in bash_complete(sh, "torch fft r")


def test_bash_completes_nn_optim_and_sched_kinds(sh):
    assert "linear" in bash_complete(sh, "torch nn li") and "conv2d" in bash_complete(sh, "torch nn conv")
    assert {"sgd", "adam", "adamw"} <= set(bash_complete(sh, "torch optim "))
    assert any(k.startswith("cosine") for k in bash_complete(sh, "torch sched cos"))


def test_bash_completes_flags_of_the_op_being_typed(sh):
    assert set(bash_complete(sh, "torch sum --")) >= {"--dim", "--keepdim", "--dtype", "--no_grad"}
    assert bash_complete(sh, "torch add --al") == ["--alpha"]
    assert "--momentum" in bash_complete(sh, "torch optim sgd nn://x --mo")


def test_bash_completes_dtypes_and_devices_after_their_flags(sh):
    assert set(bash_complete(sh, "torch zeros [2] --dtype float")) >= {"float32", "float64", "float16"}
    assert "cpu" in bash_complete(sh, "torch zeros [2] --device c")


def test_bash_completes_held_handles_through_the_colon(sh):
    h = sh("torch ones '[3]'")
    got = bash_complete(sh, "torch add ")
    assert h in got
    # bash splits words at ':'; the candidates come back without the part before the last colon
    partial = h[:len("tensor://") + 2]
    assert h[len("tensor:"):] in bash_complete(sh, "torch add %s" % partial)


def test_bash_completes_file_names_for_path_arguments(sh):
    sh.run("mkdir -p cmpl && touch cmpl/weights.safetensors")
    assert "cmpl/weights.safetensors" in bash_complete(sh, "torch load cmpl/w")


def test_complete_verb_lines_carry_descriptions(sh):
    out = sh("torch __complete -- linalg q")
    assert out.startswith("qr\t") and "QR" in out


def test_zsh_script_registers_and_offers_candidates(sh):
    require_tool("zsh")
    out = sh("""zsh -c '
autoload -U compinit && compinit -u -d "$PWD/.zcompdump"
eval "$(torch completions zsh)"
print -r -- "registered=${_comps[torch]}"
compadd() { print -rl -- $cands }
words=(torch linalg q); CURRENT=3; _torch
words=(torch sum --ke); CURRENT=3; _torch
'""")
    lines = out.split("\n")
    assert lines[0] == "registered=_torch"
    assert "qr" in lines and "--keepdim" in lines


def test_fish_completes_ops_flags_and_handles(sh):
    require_tool("fish")
    h = sh("torch ones '[2]'")
    out = sh("""fish -c 'torch completions fish | source
complete -C "torch linalg q"
complete -C "torch sum --keep"
complete -C "torch add tensor:"'""")
    cands = [line.split("\t")[0] for line in out.split("\n")]
    assert "qr" in cands and "--keepdim" in cands and h in cands
