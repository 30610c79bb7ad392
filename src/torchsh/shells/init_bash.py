"""The text of `torch init bash`: a `torch` shell function that talks to torchd with no process.

Its functions (functions()) are also the bash part of the installed `torch` launcher (shells/launcher.py),
which differs only in how it runs the real client (exec), checks the folder (a stamp on disk) and runs a
block's command (as a child it waits for, passing signals on): one protocol text for both.

The function speaks the daemon's fast path (daemon/fastpath.py) over bash's own /dev/tcp: it
builds the same POST /v1/cli body the real client sends (argv, cwd, tty, TORCHSH_* environment),
lists the replies it carries out (CARRIES: output and stdin, exec, follow, handover of protocol.REPLIES)
and carries them out: "send N stdin lines", a block form's command, a job followed to its end (a
foreground run's Ctrl-C stops it at a step boundary, as the client's does). For any other reply a
command needs (a copy between daemons, a daemon's exit to wait for, the caller's files or environment)
the daemon answers "handover" before anything runs, and the function runs the real client: it keeps no
list of such commands. When there is no fast path to talk to (no daemon yet, a daemon started without it, an untrusted reply) it runs the
real client for that one command with TORCHSH_FASTPATH=1, which auto-starts the daemon and turns
the fast path on, so the next command is fast again. A command on a named context (`--context`,
TORCHSH_CONTEXT, `torch context use`) goes to its forwarder's fast door (client/contexts/fastdoor.py:
NAME.fast beside its socket) with a Torchsh-Context header; with none there, the real client starts it.
Which daemon a command goes to is text zsh's function shares (named_context.py).

The functions are exported (`export -f`): a bash started from this shell (`torch scope -- bash -c
"…"`, scripts, `xargs bash -c`) imports them and keeps the fast path, checking the token file itself.

The token file is trusted only when it and its folder are ours, not symlinks, and the folder is
private (see __torchsh_private); otherwise one line says so and the real client, which refuses an
untrusted socket with the full reason, runs the command. Nothing is sent to a port another user named.

Everything is a builtin: no `$(…)`, no pipes, no external programs on the normal path, but one: a stdout
of protocol.FAST_STREAM_BYTES or more comes as it is (kind s) and `head -c` copies it, since bash's read
and printf cost ~25 ns a byte (a process costs about what 40 KB do). Byte counts need LC_ALL=C (bash counts
characters otherwise), so that is local to __torchsh_rpc.
Builtins only (protocol): the client prints this text itself when no daemon is running, so that
`eval "$(torch init bash)"` in a .bashrc never starts one; the function's first command does.
"""
from torchsh import protocol
from torchsh.shells import named_context

_HEAD = "# torchsh fast path for bash (torch init bash): `torch` runs in this shell, no process per command.\n"

_TEMPLATE = r'''__torchsh_file= __torchsh_port= __torchsh_ctok= __torchsh_stok=
__torchsh_kind= __torchsh_n1= __torchsh_out= __torchsh_err= __torchsh_held=

__torchsh_load() {  # read "PORT CLIENT_TOKEN SERVER_TOKEN" from the 0600 token file $1, if it is ours
    local __p= __c= __k= __d=.
    __torchsh_file=$1 __torchsh_port= __torchsh_ctok= __torchsh_stok=
    if [[ ! -e $1 && ! -L $1 ]]; then return 1; fi
    if [[ $1 == */* ]]; then __d=${1%/*}; __d=${__d:-/}; fi
    # Trust the file only when it and its folder are ours (-O: owned by our euid) and not symlinks,
    # and the folder is writable by us alone: another user's file would send our argv to their port.
    if [[ -L $1 || ! -f $1 || ! -O $1 || -L $__d || ! -O $__d ]] || ! __torchsh_private "$__d"; then
        printf 'torch: the fast path token file %s or its folder is not yours and private; ignoring it [untrusted]\n' "$1" >&2
        return 1
    fi
    { read -r __p __c __k < "$1"; } 2>/dev/null || true
    if [[ ${#__k} != @TOKEN_LEN@ || -z $__c ]]; then return 1; fi
    __torchsh_port=$__p __torchsh_ctok=$__c __torchsh_stok=$__k
}

@PRIVATE@__torchsh_rpc() {  # $1 tty, $2 env text, $3 has-stdin, $4 stdin text, then argv. 0 reply, 1 nothing ran, 2 lost,
    local LC_ALL=C __fd __n __a __fmt= __head __body= __len __n2 __rs=0  # 3 nothing ran: no proof came in time
    [[ -n $__torchsh_port ]] || return 1
@CONTEXT_HEADER@    # `command`: in POSIX mode (sh, bash --posix, which import the exported function too) a failed
    # `exec` redirection would end the shell instead of falling back to the real client
    command exec {__fd}<>"/dev/tcp/127.0.0.1/$__torchsh_port" || return 1
    __n=$(( 19 + ${#PWD} + ${#1} + ${#2} + ${#4} ))
    for __a in "${@:5}"; do __n=$(( __n + ${#__a} + 1 )); done
    if (( $# > 4 )); then printf -v __fmt '\\0%%s%.0s' "${@:5}"; fi
    printf -v __head 'POST /v1/cli HTTP/1.1\r\nTorchsh-Token: %s\r\nTorchsh-Replies: @REPLIES@\r\nTorchsh-Fast-Stream: 1\r\n%sExpect: 100-continue\r\nContent-Length: %d\r\n\r\n' \
        "$__torchsh_ctok" "$__ch" "$__n"
    if ! echo -n "$__head" >&"$__fd"; then  # echo: one write (printf writes line by line)
        exec {__fd}>&-; return 1
    fi
    # the server proves itself before we send argv; a port silent for FAST_CONTINUE_S is not our daemon's
    IFS= read -r -t @CONTINUE_S@ -N @CONTINUE_LEN@ -u "$__fd" __head || __rs=$?
    if [[ ${__head:@CONTINUE_TOKEN_AT@:@TOKEN_LEN@} != "$__torchsh_stok" ]]; then
        exec {__fd}>&-; return $(( __rs > 128 ? 3 : 1 ))  # __rs, read's status: over 128 when the time ran out
    fi
    if ! printf "torchsh-cli-1\0%s\0%s\0%s\0%s\0%s$__fmt" "$PWD" "$1" "$2" "$3" "$4" "${@:5}" >&"$__fd"; then
        exec {__fd}>&-; return 2
    fi
    IFS= read -r -N @HEAD_LEN@ -u "$__fd" __head || true
    if [[ -z $__head ]]; then exec {__fd}>&-; return 2; fi
    if [[ ${__head:@TOKEN_AT@:@TOKEN_LEN@} != "$__torchsh_stok" ]]; then exec {__fd}>&-; return 1; fi
    __len=$(( ${__head:@LENGTH_AT@:10} )) __torchsh_kind=${__head:@KIND_AT@:1}
    __torchsh_n1=$(( ${__head:@NUM1_AT@:11} )) __n2=$(( ${__head:@NUM2_AT@:11} ))
    if [[ $__torchsh_kind == s ]]; then __torchsh_stream "$__fd" "$__len" "$__n2"; return; fi
    if (( __len > 0 )); then IFS= read -r -N "$__len" -u "$__fd" __body || true; fi
    # An exec reply's connection is held until the block's command has ended: if this shell is killed
    # meanwhile, its drop ends the scope the block opened (__torchsh_exec closes it)
    if [[ $__torchsh_kind == x ]]; then __torchsh_held=$__fd; else exec {__fd}>&-; fi
    if (( ${#__body} != __len )); then return 2; fi
    __torchsh_out=${__body:0:__n2} __torchsh_err=${__body:__n2}
}

__torchsh_stream() {  # a big stdout (kind s) on fd $1, $2 bytes: stderr, stdout ($3 bytes), the server token again.
    local __fd=$1 __e=$(( $2 - $3 - @TOKEN_LEN@ )) __t= __st=0  # bash's read and printf cost ~25 ns a byte:
    __torchsh_out= __torchsh_err=                               # stdout is copied by `head -c`, a process
    if (( __e > 0 )); then IFS= read -r -N "$__e" -u "$__fd" __torchsh_err || true; fi
    PATH=/bin:/usr/bin:$PATH command head -c "$3" <&"$__fd" || __st=$?  # (status >0: the reader left, | head)
    IFS= read -r -N @TOKEN_LEN@ -u "$__fd" __t || true
    exec {__fd}>&-
    # No token after stdout: the connection was cut short, or a head that reads ahead (BSD's stdio; GNU's
    # reads no byte past its count) took it too; the output was whole if that is the head we ran.
    if (( __st == 126 || __st == 127 )); then return 2; fi  # no head to run: stdout was never read
    if [[ $__t != "$__torchsh_stok" ]] && (( __st == 0 )) &&
        [[ $(PATH=/bin:/usr/bin:$PATH command head --version 2>/dev/null) == *GNU* ]]; then return 2; fi
}

__torchsh_call() {  # rpc, and once more with fresh tokens when the daemon changed under us
    local __r=0
    __torchsh_rpc "$@" 2>/dev/null || __r=$?  # one redirect for the rpc's connect and write errors
    if (( __r == 1 )) && [[ -n $__torchsh_port ]] && __torchsh_load "$__torchsh_file"; then
        __r=0; __torchsh_rpc "$@" 2>/dev/null || __r=$?
    fi
    if (( __r == 3 )); then __r=1; fi  # no proof in time: not our daemon's port, no retry; the real client runs it
    return $__r
}

@REMOTE@
__torchsh_trim() {  # strip whitespace at both ends of $__l, as the client's bytes.strip() does
    __l=${__l#"${__l%%[![:space:]]*}"}; __l=${__l%"${__l##*[![:space:]]}"}
}

__torchsh_stdin() {  # read $1 non-empty lines (-1: all) into __torchsh_lines, no byte more
    local __l
    __torchsh_lines=()
    while (( $1 < 0 || ${#__torchsh_lines[@]} < $1 )); do
        if IFS= read -r __l; then
            __torchsh_trim; if [[ -n $__l ]]; then __torchsh_lines+=("$__l"); fi
        else
            __torchsh_trim; if [[ -n $__l ]]; then __torchsh_lines+=("$__l"); fi
            break
        fi
    done
}

__torchsh_exec() {  # an exec directive (block forms): run argv with env added, send then-argv, exit with argv's
    local __rest=$__torchsh_out __x __f=() __st=0 __tty=$1 __env=$2
    while [[ -n $__rest ]]; do printf -v __x '%b' "${__rest%%$'\n'*}"; __f+=("$__x"); __rest=${__rest#*$'\n'}; done
    local __ne=${__f[0]} __nt=${__f[__f[0]+1]}
    local __envs=("${__f[@]:1:__ne}") __then=("${__f[@]:__ne+2:__nt}") __argv=("${__f[@]:__ne+2+__nt}")
    if [[ $__argv == */* && -x $__argv && ! -d $__argv ]] || type -P -- "$__argv" >/dev/null; then
@RUN@    else
        printf 'torch: cannot run %s: No such file or directory\n' "$__argv" >&2; __st=127
    fi
    local __held=$__torchsh_held
    if (( ${#__then[@]} )); then
        if ! __torchsh_call "$__tty" "$__env" 0 "" "${__then[@]}"; then
            printf 'torch: the daemon went away while the command ran; its objects are gone [daemon_unavailable]\n' >&2
            exec {__held}>&-; return 5
        fi
        printf '%s' "$__torchsh_out" 2>/dev/null || true  # the closing command's output (`profile finish`: a table)
        printf '%s' "$__torchsh_err" >&2
    fi
    exec {__held}>&-
    return $__st
}

__torchsh_follow() {  # a follow reply (a job's output): print, send the poll it names, until a final reply
    local __line __w __int= __sent= __restore=
    if (( __torchsh_n1 == 1 )); then  # a foreground run, leased to us: Ctrl-C stops it at a step boundary
        __restore=$(trap -p INT); __restore=${__restore:-trap - INT}
        trap '__int=1' INT  # bash's read goes on after the trap: the next poll carries --interrupt
    fi
    while [[ $__torchsh_kind == f ]]; do
        __line=${__torchsh_out%%$'\n'*} __torchsh_out=${__torchsh_out#*$'\n'}
        printf '%s' "$__torchsh_err" >&2; printf '%s' "$__torchsh_out"  # stderr first: it clears a live line
        read -r -a __w <<< "$__line"
        if [[ -n $__int && -z $__sent ]]; then __w+=(--interrupt); __sent=1; fi
        if ! __torchsh_call "$1" "$2" 0 "" "${__w[@]}"; then
            printf 'torch: the daemon went away while following a job; its objects are gone [daemon_unavailable]\n' >&2
            eval "$__restore"; return 5
        fi
    done
    eval "$__restore"
    printf '%s' "$__torchsh_err" >&2; printf '%s' "$__torchsh_out"
    return $__torchsh_n1
}

torch() {
    local __s __f __tty=0 __e=() __envtext= __v __r=0 __t __torchsh_ctx=
    if __torchsh_remote "$@"; then @CLIENT@ "$@" || return $?; return 0; fi
@WHERE@    for __v in ${!TORCHSH_@}; do if [[ ${!__v@a} == *x* && $__v != TORCHSH_CONTEXT ]]; then __e+=("$__v=${!__v}"); fi; done
    if [[ ${1-} == --socket && $# -ge 2 ]]; then __e+=("TORCHSH_SOCKET=$2"); fi
    if [[ -n $__torchsh_ctx ]]; then __e+=("TORCHSH_CONTEXT=$__torchsh_ctx"); fi  # as the client: the one it runs on
    if [[ -t 1 && -n ${COLUMNS-} && ( -z ${TORCHSH_COLUMNS-} || ${TORCHSH_COLUMNS@a} != *x* ) ]]; then __e+=("TORCHSH_COLUMNS=$COLUMNS"); fi
    __torchsh_load "$__f" || true  # every time: a stopped daemon removes it, so its old port is never tried
    if [[ -t 0 ]]; then __tty=1; fi
    if [[ -t 2 ]]; then __tty+=1; else __tty+=0; fi  # a terminal on stderr: a job's progress is a live line
    if (( ${#__e[@]} )); then printf -v __envtext '%s\n' "${__e[@]}"; __envtext=${__envtext%$'\n'}; fi
    local __argv=("$@")
    if [[ ( ${1-} == --socket || ${1-} == --context ) && $# -ge 2 ]]; then __argv=("${@:3}"); fi
    __torchsh_call "$__tty" "$__envtext" 0 "" "${__argv[@]}" || __r=$?
    if (( __r == 0 )) && [[ $__torchsh_kind == i ]]; then
        __torchsh_stdin "$__torchsh_n1"
        local __in=
        printf -v __in '%s\n' "${__torchsh_lines[@]}"
        __torchsh_call "$__tty" "$__envtext" 1 "${__in%$'\n'}" "${__argv[@]}" || __r=$?
    fi
    if (( __r == 1 )); then  # no fast path here: the real client runs it (starting torchd if need be)
        TORCHSH_FASTPATH=1 @CLIENT@ "$@" || return $?
        return 0
    fi
    if (( __r == 0 )) && [[ $__torchsh_kind == h ]]; then  # handover: a reply only the real client carries out
        @CLIENT@ "$@" || return $?
        return 0
    fi
    if (( __r == 2 )); then
        printf 'torch: lost the daemon mid-request: connection closed; retry; see the daemon log [daemon_unavailable]\n' >&2
        return 5
    fi
    if [[ $__torchsh_kind == x ]]; then __torchsh_exec "$__tty" "$__envtext" || return $?; return 0; fi
    if [[ $__torchsh_kind == f ]]; then __torchsh_follow "$__tty" "$__envtext" || return $?; return 0; fi
    if [[ $BASHPID != "$$" ]]; then trap '' PIPE; fi  # a reader that left (| head) is not our failure
    if [[ -z $__torchsh_out ]]; then :  # zero_grad, step: nothing to print, no redirect to set up
    elif [[ $__torchsh_kind == b ]]; then printf '%b' "$__torchsh_out" 2>/dev/null || true
    else printf '%s' "$__torchsh_out" 2>/dev/null || true; fi
    if [[ -n $__torchsh_err ]]; then printf '%s' "$__torchsh_err" >&2; fi
    return $__torchsh_n1
}
'''


# The function's folder check: its verdict lives in the shell (the launcher, shells/launcher.py, keeps it on disk).
_PRIVATE_PER_SHELL = r'''# Is folder $1 writable by its owner only? Bash has no builtin that reads permission bits, so this
# runs `ls -ldn` (POSIX, unlike stat's flags), once per folder: __torchsh_load runs on every command
# and must stay builtins-only. The cache is sound: once the folder is ours and private, only we (or
# root) can change its mode or add files to it, and the -O/-L tests above still run every time (a
# folder deleted and re-made by another user is theirs, and fails -O). It is exported so that child
# bashes (`torch scope -- bash -c …`) skip the `ls`: the environment comes from our own processes, and
# a child of another uid fails -O on the folder anyway.
__torchsh_private() {
    local __m
    if [[ ${__torchsh_okdir-} == "$1" ]]; then return 0; fi
    __m=$(PATH=/bin:/usr/bin:$PATH LC_ALL=C command ls -ldn -- "$1" 2>/dev/null) || return 1  # PATH: `PATH=x torch …`
    if [[ ${__m:0:1} != d || ${__m:5:1} == w || ${__m:8:1} == w ]]; then return 1; fi
    export __torchsh_okdir=$1
}

'''

# The function's way to run a block's command (an interactive shell: in the foreground, a subshell between).
_RUN_IN_SHELL = r'''        # As with the real client, a process stands between this shell and the command: Ctrl-C kills
        # the command, that process exits normally with its status (130), so this shell carries on,
        # runs its own INT trap if it has one, and sends the clean-up command. (Ignoring INT here
        # instead needed `$(trap -p INT)` to restore it: a fork and a pipe, and the trap never ran.)
        ( exec {__torchsh_held}>&-; trap : INT; for __x in "${__envs[@]}"; do [[ $__x == TORCHSH_* ]] && export "$__x"; done
          ( exec "${__argv[@]}" ) ) || __st=$?  # exec: the file, never a function or builtin of that name
'''

_EXPORT = r'''# Child bashes (`torch scope -- bash -c "…"`, scripts, xargs bash -c) import these and keep the fast
# path; each child checks the token file itself. Programs that are not bash ignore them.
export -f torch __torchsh_remote __torchsh_load __torchsh_private __torchsh_rpc __torchsh_stream __torchsh_call __torchsh_trim __torchsh_stdin __torchsh_exec __torchsh_follow
'''

# The replies the function carries out (protocol.REPLIES); the daemon hands any other over to the client.
CARRIES = ("stdin", "exec", "follow", "handover")


def script():
    """The bash text that `eval "$(torch init bash)"` runs, with the daemon's head offsets filled in."""
    return _HEAD + functions("command torch", _PRIVATE_PER_SHELL, _RUN_IN_SHELL) + _EXPORT


def functions(client, private, run):
    """The fast path's functions (`torch` and its helpers), shared by the shell function and the installed
    launcher (shells/launcher.py): `client` is the bash command that runs the real client with the
    function's arguments, `private` the text of __torchsh_private (the folder check), `run` the lines of
    __torchsh_exec that run a block's command ($__argv with $__envs added; its status in __st)."""
    text = named_context.filled(_TEMPLATE, named_context.BASH_EXPORTED)  # which daemon: zsh's text too
    text = text.replace("@REPLIES@", protocol.replies_header(CARRIES).decode())
    text = text.replace("@CLIENT@", client).replace("@PRIVATE@", private).replace("@RUN@", run)
    for name in ("HEAD_LEN", "TOKEN_AT", "TOKEN_LEN", "LENGTH_AT", "KIND_AT", "NUM1_AT", "NUM2_AT",
                 "CONTINUE_LEN", "CONTINUE_TOKEN_AT", "CONTINUE_S"):
        text = text.replace("@%s@" % name, str(getattr(protocol, "FAST_" + name)))
    return text
