"""Which daemon a fast-path function's command goes to: shell text shared by bash's function and launcher
(init_bash.py) and zsh's function (init_zsh.py), one source for the client's order and its name rule.

REMOTE (__torchsh_remote) picks a named context as client/wire.py's select() does (`--context NAME` as the
first words, an exported TORCHSH_CONTEXT, an exported TORCHSH_SOCKET, the current-context file, when it is
ours and no symlink), checks the name by the client's rule (wire.checked_name: it becomes a path,
contexts/NAME.sock) and leaves it in __torchsh_ctx; or answers 0, "the real client runs it": `torch
context …`, both flags, a name the client must refuse, a current-context file that is not ours. WHERE then
names the socket (__s) and the token file of the door to speak to (__f): a context forwarder's fast door
(contexts/NAME.fast, client/contexts/fastdoor.py), `--socket`'s or TORCHSH_SOCKET's daemon, or the default
daemon's torchd.fast; CONTEXT_HEADER is the head line that tells the daemon which context it serves.

The text is what bash and zsh read alike ([[ ]], ${x-}, ${x%"…"}, read, the -O and -L tests); the one thing
they spell differently, whether a variable is exported, each shell fills in (`exported`: bash ${X@a} has x,
zsh ${(t)X} has export).
"""

REMOTE = r'''__torchsh_remote() {  # 0: the real client runs it (`torch context …`, both flags, a name it must refuse). Else a
    local __c          # named context (client/main.py's order) is __torchsh_ctx, served by its forwarder's fast door
    if [[ ${1-} == context || ${3-} == context || ( ${1-} == --context && ${3-} == --socket ) ]]; then return 0; fi
    if [[ ${1-} == --socket && ${3-} == --context ]]; then return 0; fi
    if [[ ${1-} == --socket ]]; then return 1; fi
    if [[ ${1-} == --context ]]; then (( $# >= 2 )) || return 0; __c=$2
    elif [[ -n ${TORCHSH_CONTEXT-} && @EXPORTED:TORCHSH_CONTEXT@ ]]; then __c=$TORCHSH_CONTEXT
    elif [[ -n ${TORCHSH_SOCKET-} && @EXPORTED:TORCHSH_SOCKET@ ]]; then return 1
    else
        __c=${XDG_CONFIG_HOME:-$HOME/.config}/torchsh/current-context
        [[ -f $__c ]] || return 1  # `torch context use default` removes the file: one stat on the common path
        if [[ -L $__c || ! -O $__c ]]; then return 0; fi  # not ours: the real client refuses it, saying why
        { read -r __c < "$__c"; } 2>/dev/null || true
    fi
    if [[ -z $__c || $__c == default ]]; then [[ ${1-} == --context ]]; return; fi  # (the client drops the flag)
    # The name becomes a path (contexts/NAME.sock): the client's rule (wire.checked_name), else it says why.
    if (( ${#__c} > 63 )) || [[ $__c == [.-]* || $__c == *[!A-Za-z0-9_.-]* ]]; then return 0; fi
    __torchsh_ctx=$__c; return 1
}
'''

# Lines of torch(), after __torchsh_remote: its locals __t, __s, __f (paths.py's folders, as the client finds them).
WHERE = r'''    if [[ -n ${XDG_RUNTIME_DIR-} ]]; then __t=$XDG_RUNTIME_DIR/torchsh
    else __t=${TMPDIR:-/tmp}; __t=${__t%"${__t##*[!/]}"}/torchsh-$UID; fi
    if [[ -n $__torchsh_ctx ]]; then __s=$__t/contexts/$__torchsh_ctx.sock  # its forwarder's; NAME.fast beside it
    elif [[ ${1-} == --socket && $# -ge 2 ]]; then __s=$2
    elif [[ -n ${TORCHSH_SOCKET-} && @EXPORTED:TORCHSH_SOCKET@ ]]; then __s=$TORCHSH_SOCKET
    else __s=$__t/torchd.sock; fi
    if [[ $__s == *.sock ]]; then __f=${__s%.sock}.fast; else __f=$__s.fast; fi
'''

# Lines of __torchsh_rpc, before its head is written: __ch, the head line a named context's command carries
# (its fast door passes it on; the daemon prints and checks kind://NAME/… handles). The name passed the rule.
CONTEXT_HEADER = r'''    local __ch=  # a named context's head line (shells/named_context.py)
    if [[ -n ${__torchsh_ctx-} ]]; then __ch="Torchsh-Context: $__torchsh_ctx"$'\r\n'; fi
'''

BASH_EXPORTED = "${%s@a} == *x*"
ZSH_EXPORTED = "${(t)%s} == *export*"


def filled(text, exported):
    """`text` (the shell function text that holds these pieces) with @REMOTE@, @WHERE@ and @CONTEXT_HEADER@
    put in and every @EXPORTED:NAME@ spelled by `exported` (BASH_EXPORTED or ZSH_EXPORTED)."""
    text = text.replace("@REMOTE@", REMOTE).replace("@WHERE@", WHERE).replace("@CONTEXT_HEADER@", CONTEXT_HEADER)
    for name in ("TORCHSH_CONTEXT", "TORCHSH_SOCKET"):
        text = text.replace("@EXPORTED:%s@" % name, exported % name)
    return text
