# bash completion for torch (torchsh): ops, namespaces, nn/optim/sched kinds, flags, dtypes,
# devices and held handles. Load: eval "$(torch completions bash)", or source this file.
# `torch completions bash` prints this file (shells/completions.py); the daemon answers `torch __complete`.
_torch_complete() {
    local line=${COMP_LINE:0:COMP_POINT} cur out reply=() c
    local -a words
    # Split the line here: COMP_WORDS cuts tensor://x at ':' (COMP_WORDBREAKS).
    read -ra words <<< "$line"
    if [[ ${#words[@]} -le 1 || $line == *[[:space:]] ]]; then words+=(""); fi
    cur=${words[${#words[@]}-1]}
    out=$(command torch __complete -- "${words[@]:1}" 2>/dev/null) || return 0
    if [[ $out == ":files" ]]; then
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return 0
    fi
    while IFS= read -r c; do [[ -n $c ]] && reply+=("${c%%$'\t'*}"); done <<< "$out"
    # bash replaces only the text after the last ':' of the word: drop what comes before it.
    if [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then
        local keep=${cur%"${cur##*:}"} i
        for i in "${!reply[@]}"; do reply[i]=${reply[i]#"$keep"}; done
    fi
    COMPREPLY=("${reply[@]}")
}
complete -F _torch_complete torch
