"""The text of `torch init zsh`: the fast-path `torch` function for zsh (see init_bash.py, docs/fast-path.md).

zsh's own modules do the I/O: zsh/net/tcp (`ztcp`) opens the loopback connection, zsh/system
(`sysread`, `syswrite`) moves exact byte counts. zsh variables hold NUL bytes, so the request body
is one string; `nomultibyte` makes ${#x} count bytes. Same wire, the same replies carried out (stdin,
exec, follow with Ctrl-C stopping a foreground run, handover to the real client), the same fallback to the
real client as the bash function, and the same trust rule for the token file (zsh/stat's zstat is a
builtin lstat). A named context's command goes to its forwarder's fast door, as in bash: which daemon a
command goes to (the client's order, its name rule) is text the two functions share (named_context.py).
Builtins only (protocol): the client prints it with no daemon.
"""
from torchsh import protocol
from torchsh.shells import init_bash, named_context

_TEMPLATE = r'''# torchsh fast path for zsh (torch init zsh): `torch` runs in this shell, no process per command.
zmodload zsh/net/tcp zsh/system || return 1
zmodload -F zsh/stat b:zstat || return 1
typeset -g __torchsh_port= __torchsh_ctok= __torchsh_stok= __torchsh_kind= __torchsh_n1= __torchsh_out= __torchsh_err=
typeset -g __torchsh_held=
typeset -ga __torchsh_lines

__torchsh_load() {  # read "PORT CLIENT_TOKEN SERVER_TOKEN" from the 0600 token file $1, if it is ours
    emulate -L zsh
    local p= c= k= d=. fm= fu= dm= du=
    __torchsh_port= __torchsh_ctok= __torchsh_stok=
    [[ -e $1 || -L $1 ]] || return 1
    [[ $1 == */* ]] && { d=${1%/*}; d=${d:-/} }
    # Trust the file only when it and its folder are ours and not symlinks, and the folder is writable
    # by us alone: another user's file would send our argv to their port. zstat -L is lstat, a builtin.
    zstat -L -A fm +mode -- $1 2>/dev/null; zstat -L -A fu +uid -- $1 2>/dev/null
    zstat -L -A dm +mode -- $d 2>/dev/null; zstat -L -A du +uid -- $d 2>/dev/null
    if (( (fm & 8#170000) != 8#100000 || fu != EUID || (dm & 8#170000) != 8#040000 || du != EUID || dm & 8#022 )); then
        print -ru2 -- "torch: the fast path token file $1 or its folder is not yours and private; ignoring it [untrusted]"
        return 1
    fi
    { read -r p c k < $1 } 2>/dev/null
    (( ${#k} == @TOKEN_LEN@ )) && [[ -n $c ]] || return 1
    __torchsh_port=$p __torchsh_ctok=$c __torchsh_stok=$k
}

__torchsh_readn() {  # exactly $2 bytes from fd $1 into REPLY, each read waiting $3 seconds at most (4: it ran out)
    local chunk
    local -a limit
    (( $# > 2 )) && limit=(-t $3)
    REPLY=
    while (( ${#REPLY} < $2 )); do
        sysread $limit -i $1 -s $(( $2 - ${#REPLY} > 1048576 ? 1048576 : $2 - ${#REPLY} )) chunk || return $?
        REPLY+=$chunk
    done
}

__torchsh_write() {  # all of $2 to fd $1
    local n data=$2
    while (( ${#data} )); do
        syswrite -o $1 -c n -- $data 2>/dev/null || return 1
        data=${data[n+1,-1]}
    done
}

__torchsh_rpc() {  # $1 tty, $2 env text, $3 has-stdin, $4 stdin text, then argv. 0 reply, 1 nothing ran, 2 lost
    emulate -L zsh
    setopt nomultibyte
    local fd body head len n2 a REPLY rs=0
    [[ -n $__torchsh_port ]] || return 1
@CONTEXT_HEADER@    ztcp 127.0.0.1 $__torchsh_port 2>/dev/null || return 1
    fd=$REPLY
    body="torchsh-cli-1"$'\0'$PWD$'\0'$1$'\0'$2$'\0'$3$'\0'$4
    for a in "${(@)argv[5,-1]}"; do body+=$'\0'$a; done
    if ! __torchsh_write $fd "POST /v1/cli HTTP/1.1"$'\r\n'"Torchsh-Token: $__torchsh_ctok"$'\r\n'"Torchsh-Replies: @REPLIES@"$'\r\n'"$__ch""Expect: 100-continue"$'\r\n'"Content-Length: ${#body}"$'\r\n\r\n'; then
        ztcp -c $fd; return 1
    fi
    __torchsh_readn $fd @CONTINUE_LEN@ @CONTINUE_S@ || rs=$?  # the server proves itself before we send argv
    if [[ ${REPLY[@CONTINUE_TOKEN_AT1@,@CONTINUE_TOKEN_END@]} != $__torchsh_stok ]]; then
        ztcp -c $fd; (( rs == 4 )) && return 3; return 1  # sysread timed out (4): not our daemon's port
    fi
    if ! __torchsh_write $fd $body; then ztcp -c $fd; return 2; fi
    __torchsh_readn $fd @HEAD_LEN@; head=$REPLY
    if [[ -z $head ]]; then ztcp -c $fd; return 2; fi
    if [[ ${head[@TOKEN_AT1@,@TOKEN_END@]} != $__torchsh_stok ]]; then ztcp -c $fd; return 1; fi
    len=$(( ${head[@LENGTH_AT1@,@LENGTH_END@]} )) __torchsh_kind=${head[@KIND_AT1@]}
    __torchsh_n1=$(( ${head[@NUM1_AT1@,@NUM1_END@]} )) n2=$(( ${head[@NUM2_AT1@,@NUM2_END@]} ))
    REPLY=
    if (( len > 0 )) && ! __torchsh_readn $fd $len; then ztcp -c $fd; return 2; fi
    # An exec reply's connection is held until the block's command has ended: its drop ends the block's scope
    if [[ $__torchsh_kind == x ]]; then __torchsh_held=$fd; else ztcp -c $fd; fi
    __torchsh_out=${REPLY[1,n2]} __torchsh_err=${REPLY[n2+1,-1]}
}

__torchsh_call() {  # rpc, and once more with fresh tokens when the daemon changed under us
    local r=0
    __torchsh_rpc "$@" || r=$?
    if (( r == 1 )) && [[ -n $__torchsh_port ]] && __torchsh_load $__torchsh_file; then r=0; __torchsh_rpc "$@" || r=$?; fi
    (( r == 3 )) && r=1  # no proof in time: the same port again would be no better; the real client runs it
    return $r
}

@REMOTE@
__torchsh_stdin() {  # read $1 non-empty lines (-1: all) into __torchsh_lines, as the client does
    emulate -L zsh
    setopt extendedglob
    local l more=1
    __torchsh_lines=()
    while (( more && ($1 < 0 || ${#__torchsh_lines} < $1) )); do
        IFS= read -r l || more=0
        l=${${l##[[:space:]]#}%%[[:space:]]#}
        [[ -n $l ]] && __torchsh_lines+=("$l")
    done
    return 0
}

__torchsh_exec() {  # an exec directive (block forms): run argv with env added, send then-argv, exit with argv's
    emulate -L zsh
    setopt localtraps
    local x st=0 ne nt
    local -a f envs then cmd
    for x in "${(@f)__torchsh_out}"; do printf -v x '%b' "$x"; f+=("$x"); done
    ne=$f[1]; nt=$f[ne+2]
    envs=("${(@)f[2,ne+1]}"); then=("${(@)f[ne+3,ne+2+nt]}"); cmd=("${(@)f[ne+3+nt,-1]}")
    if [[ $cmd[1] == */* && -x $cmd[1] && ! -d $cmd[1] ]] || (( ${+commands[$cmd[1]]} )); then
        trap '' INT  # Ctrl-C goes to the command; this function still sends the clean-up command
        ( exec {__torchsh_held}>&-; trap - INT; for x in $envs; do [[ $x == TORCHSH_* ]] && export "$x"; done
          exec "${(@)cmd}" ) || st=$?
    else
        print -ru2 -- "torch: cannot run $cmd[1]: No such file or directory"; st=127
    fi
    local held=$__torchsh_held
    if (( $#then )); then
        if ! __torchsh_call $1 $2 0 "" "${(@)then}"; then
            print -ru2 -- "torch: the daemon went away while the command ran; its objects are gone [daemon_unavailable]"
            ztcp -c $held; return 5
        fi
        print -rn -- "$__torchsh_out" 2>/dev/null  # the closing command's output (`profile finish`: a table)
        print -rn -u2 -- $__torchsh_err
    fi
    ztcp -c $held
    return $st
}

__torchsh_follow() {  # a follow reply (a job's output): print, send the poll it names, until a final reply
    emulate -L zsh
    setopt localtraps
    local line int= sent=
    local -a w
    (( __torchsh_n1 == 1 )) && trap 'int=1' INT  # a leased foreground run: Ctrl-C stops it at a step boundary
    while [[ $__torchsh_kind == f ]]; do
        line=${__torchsh_out%%$'\n'*} __torchsh_out=${__torchsh_out#*$'\n'}
        print -rn -u2 -- "$__torchsh_err"; print -rn -- "$__torchsh_out"  # stderr first: it clears a live line
        w=(${(s: :)line})
        if [[ -n $int && -z $sent ]]; then w+=(--interrupt); sent=1; fi
        if ! __torchsh_call $1 $2 0 "" "${(@)w}"; then
            print -ru2 -- "torch: the daemon went away while following a job; its objects are gone [daemon_unavailable]"
            return 5
        fi
    done
    print -rn -u2 -- "$__torchsh_err"; print -rn -- "$__torchsh_out"
    return $__torchsh_n1
}

torch() {
    emulate -L zsh
    local __s __f __t tty=0 envtext= v r=0 __torchsh_file __torchsh_ctx=
    local -a e argv2
    if __torchsh_remote "$@"; then command torch "$@"; return; fi  # `torch context …`, or what the client must refuse
@WHERE@    for v in ${(k)parameters[(I)TORCHSH_*]}; do
        [[ ${parameters[$v]} == *export* && $v != TORCHSH_CONTEXT ]] && e+=("$v=${(P)v}")
    done
    if [[ ${1-} == --socket && $# -ge 2 ]]; then e+=("TORCHSH_SOCKET=$2"); fi
    if [[ -n $__torchsh_ctx ]]; then e+=("TORCHSH_CONTEXT=$__torchsh_ctx"); fi  # as the client: the one it runs on
    argv2=("$@")
    if [[ ${1-} == (--socket|--context) && $# -ge 2 ]]; then argv2=("${(@)argv2[3,-1]}"); fi
    __torchsh_file=$__f
    __torchsh_load $__f
    [[ -t 0 ]] && tty=1
    if [[ -t 2 ]]; then tty+=1; else tty+=0; fi  # a terminal on stderr: a job's progress is a live line
    envtext=${(pj:\n:)e}
    __torchsh_call $tty "$envtext" 0 "" "${(@)argv2}" || r=$?
    if (( r == 0 )) && [[ $__torchsh_kind == i ]]; then
        __torchsh_stdin $__torchsh_n1
        __torchsh_call $tty "$envtext" 1 "${(pj:\n:)__torchsh_lines}" "${(@)argv2}" || r=$?
    fi
    if (( r == 1 )); then  # no fast path here: the real client runs it (starting torchd if need be)
        TORCHSH_FASTPATH=1 command torch "$@"
        return
    fi
    if (( r == 0 )) && [[ $__torchsh_kind == h ]]; then command torch "$@"; return; fi  # handover: the client's reply
    if (( r == 2 )); then
        print -ru2 -- "torch: lost the daemon mid-request: connection closed; retry; see the daemon log [daemon_unavailable]"
        return 5
    fi
    if [[ $__torchsh_kind == x ]]; then __torchsh_exec $tty "$envtext"; return; fi
    if [[ $__torchsh_kind == f ]]; then __torchsh_follow $tty "$envtext"; return; fi
    if [[ $__torchsh_kind == b ]]; then printf '%b' "$__torchsh_out" 2>/dev/null
    else print -rn -- "$__torchsh_out" 2>/dev/null; fi
    print -rn -u2 -- "$__torchsh_err"
    return $__torchsh_n1
}
'''


CARRIES = init_bash.CARRIES  # the same replies as bash's function: output, stdin, exec, follow, handover


def script():
    """The zsh text that `eval "$(torch init zsh)"` runs; zsh strings index from 1, ranges inclusive.

    Comments are stripped: an interactive zsh without INTERACTIVE_COMMENTS would run them as commands.
    """
    p = protocol
    fields = {"TOKEN": (p.FAST_TOKEN_AT, p.FAST_TOKEN_LEN), "LENGTH": (p.FAST_LENGTH_AT, 10),
              "KIND": (p.FAST_KIND_AT, 1), "NUM1": (p.FAST_NUM1_AT, 11), "NUM2": (p.FAST_NUM2_AT, 11),
              "CONTINUE_TOKEN": (p.FAST_CONTINUE_TOKEN_AT, p.FAST_TOKEN_LEN)}
    text = named_context.filled(_TEMPLATE, named_context.ZSH_EXPORTED)  # which daemon: bash's text
    text = text.replace("@TOKEN_LEN@", str(p.FAST_TOKEN_LEN)).replace("@HEAD_LEN@", str(p.FAST_HEAD_LEN))
    text = text.replace("@REPLIES@", p.replies_header(CARRIES).decode())
    text = text.replace("@CONTINUE_LEN@", str(p.FAST_CONTINUE_LEN)).replace("@CONTINUE_S@", str(p.FAST_CONTINUE_S))
    for name, (at, width) in fields.items():
        text = text.replace("@%s_AT1@" % name, str(at + 1)).replace("@%s_END@" % name, str(at + width))
    lines = (line.split("  # ", 1)[0].rstrip() for line in text.splitlines() if not line.lstrip().startswith("#"))
    return "\n".join(lines) + "\n"
