# fish completion for torch (torchsh): ops, namespaces, nn/optim/sched kinds, flags, dtypes, devices
# and held handles. Load: torch completions fish | source, or save as ~/.config/fish/completions/torch.fish
# `torch completions fish` prints this file (shells/completions.py); the daemon answers `torch __complete`.
function __torch_complete
    set -l words (commandline -opc)
    set -e words[1]
    set -l out (command torch __complete -- $words (commandline -ct) 2>/dev/null)
    if test "$out[1]" = ":files"
        __fish_complete_path (commandline -ct)
        return
    end
    printf '%s\n' $out
end
complete -c torch -f -a '(__torch_complete)'
