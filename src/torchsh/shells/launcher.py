"""The text of the installed `torch` command: a bash launcher that speaks the fast path itself, or runs the
Python client.

A plain script (`#!/bin/bash`, no `eval "$(torch init bash)"`) starts a process per `torch`; when that
process is the Python client, most of its ~10 ms is the interpreter starting. The launcher is one file that
is three programs: sh, bash and Python (`''':'` is a no-op `:` to the shells and opens a string Python
skips). As sh it starts bash (`/bin/bash -p`: no BASH_ENV, SHELLOPTS or imported functions can change it),
if there is one; as bash 4.4 or later it defines the very functions `torch init bash` prints
(init_bash.functions: one protocol text, not two) and calls `torch "$@"`, which talks to the daemon over
the loopback fast path with builtins only, and carries out stdin, exec, follow and handover as the function
does; as Python it is the client (client/main.py). Bash runs the Python client (`exec`, so it is this
process, as before: `-IS`) with no fast path to use (no daemon, none turned on: then with TORCHSH_FASTPATH=1,
so that the client, which starts the daemon, turns it on for the next command), for a handover, for a named
context whose forwarder has no fast door yet (the client starts it), for an untrusted token file (the client
then refuses with the full reason), and for `torch plot` to a terminal whose width it cannot read (no builtin
reads it; the client asks the terminal).

Two copies, one text: scripts/launchers/torch, which a wheel installs (pip copies it as it is, so it finds
its interpreter from its sibling `torchd`, whose `#!python` pip rewrote; tools/regen.py writes it and a test
keeps it fresh), and the editable tree's (install.py), which names the interpreter and the tree.

The folder check differs from the function's: a launcher is a new bash per command, so the verdict of
`ls -ldn` (bash has no builtin that reads permission bits) is kept in a stamp file, see _PRIVATE_ON_DISK.
"""
from torchsh.quoting import python_string, shell_word
from torchsh.shells import init_bash

_SH = r"""''':'
# torchsh's `torch` command (written from src/torchsh/shells/launcher.py: edit that, not this):
# as sh it starts bash, as bash it runs the command over the daemon's fast path when it can, and it runs the
# Python client (this file, with -IS) otherwise. The module's docstring says why and how.
case $- in *p*) ;; *) if [ -x /bin/bash ]; then exec /bin/bash -p "$0" "$@"; fi ;; esac
"""

_WHEEL_CLIENT = r"""__torchsh_client() {  # the Python client: pip rewrote `#!python` in our sibling torchd, not here
    if [ -n "${__torchsh_stderr-}" ]; then exec {__torchsh_stderr}>&-; fi  # (bash's: see _BASH)
    { read -r __l < "${0%/*}/torchd"; } 2>/dev/null && exec ${__l#??} -IS "$0" "$@"
    echo "torch: cannot find the Python interpreter of ${0%/*}/torchd" >&2; exit 127
}
"""

_DEV_CLIENT = """__torchsh_client() {{  # the Python client of the editable tree (torchsh.install)
    if [ -n "${{__torchsh_stderr-}}" ]; then exec {{__torchsh_stderr}}>&-; fi  # (bash's: see _BASH)
    exec {python} -IS "$0" "$@"
}}
"""

_BASH = r"""case ${BASH_VERSION-} in ''|[123].*|4.[0-3].*) __torchsh_client "$@" ;; esac  # the fast path needs bash 4.4
set +o posix  # POSIXLY_CORRECT in the environment
# Our stderr, for Ctrl-C's line (a request's own errors go to /dev/null meanwhile); closed for what we start.
exec {__torchsh_stderr}>&2
"""

# Is folder $1 writable by its owner only? The function asks `ls -ldn` once per shell; a launcher is a new
# bash per command, and a process per command is what it saves, so the verdict goes to a stamp beside the
# token file (torchd.fast -> torchd.private), written right after an `ls` that found the folder private, and
# trusted while the folder is no newer than it (-nt: modification times). Sound against another user: the
# folder is ours and no symlink (tested every time), so only we or root can change its mode; another user can
# change what it holds only while its mode lets them, and every such change (a file added, removed or
# renamed) makes the folder newer than the stamp, so the next command asks `ls` again and sees the mode. A
# chmod alone changes no entry: the folder still holds what it held when `ls` found it private, which is
# all the function's per-shell verdict ever vouches for. The stamp is written only right after that `ls`
# (no one else can have put a symlink there since), and only when it is absent or a regular file.
_PRIVATE_ON_DISK = r"""__torchsh_private() {  # is folder $1 writable by its owner only? (shells/launcher.py says why a stamp)
    local __m __s=${__torchsh_file%.fast}.private
    if [[ -f $__s && ! -L $__s && -O $__s && ! $1 -nt $__s ]]; then return 0; fi
    __m=$(PATH=/bin:/usr/bin:$PATH LC_ALL=C command ls -ldn -- "$1" 2>/dev/null) || return 1  # PATH: `PATH=x torch …`
    if [[ ${__m:0:1} != d || ${__m:5:1} == w || ${__m:8:1} == w ]]; then return 1; fi
    if [[ ! -L $__s && ( -f $__s || ! -e $__s ) ]]; then { printf x > "$__s"; } 2>/dev/null || true; fi
}

"""

# How the launcher runs a block's command (an exec reply): like the Python client (client/blocks.py), it is the
# process between the caller and the command, so a SIGTERM or SIGHUP sent to it (kill, timeout(1), a closed
# terminal) is passed on to the command, and it waits for the command and ends the scope as usual. Bash runs
# a trap only once a foreground command has ended, but at once during `wait`: hence `&` and __torchsh_wait.
# `<&0` keeps our stdin (a `&` command gets /dev/null without it); `exec` gives the command the signal
# dispositions we started with (a terminal's Ctrl-C reaches it, as it is in our process group).
_RUN_AND_WAIT = r"""        ( exec {__torchsh_held}>&-; [[ -z ${__torchsh_stderr-} ]] || exec {__torchsh_stderr}>&-; for __x in "${__envs[@]}"; do [[ $__x == TORCHSH_* ]] && export "$__x"; done
          exec "${__argv[@]}" ) <&0 &  # exec: the file, never a function or builtin of that name
        __torchsh_wait $! || __st=$?
"""

_MAIN = r"""__torchsh_wait() {  # the status of the block's command $1; SIGTERM and SIGHUP meanwhile are passed on to it
    local __st
    trap "kill -TERM $1 2>/dev/null" TERM; trap "kill -HUP $1 2>/dev/null" HUP  # (one ignored by our parent stays so)
    while :; do  # `wait` returns >128 when a trap ran; the command, still running, is waited for again
        wait "$1"; __st=$?
        if (( __st <= 128 )) || ! kill -0 "$1" 2>/dev/null; then break; fi
    done
    trap - TERM HUP
    return $__st
}
__torchsh_interrupted() {  # Ctrl-C: the client's line, then die of SIGINT ($? is 130, a script's loop stops)
    if [[ -n $__torchsh_held ]]; then return; fi  # a block's command got it too: it ends, then we end the scope
    local __op=${__torchsh_args[*]:0:1}
    if [[ $__op == daemon || $__op == scope ]]; then __op=${__torchsh_args[*]:0:2}; fi
    printf 'torch: %sinterrupted\n' "${__op:+$__op: }" >&"${__torchsh_stderr:-2}"
    trap - INT; kill -INT $$
}
trap '' PIPE  # a reader that left (`| head`) is not our failure, as for the client
trap __torchsh_interrupted INT
__torchsh_args=("$@")
if [[ ( ${1-} == --socket || ${1-} == --context ) && $# -ge 2 ]]; then __torchsh_args=("${@:3}"); fi
if [[ -t 1 && ${__torchsh_args-} == plot && -z ${TORCHSH_COLUMNS-}${COLUMNS-} ]]; then __torchsh_client "$@"; fi
torch "$@"
exit
'''
"""


def wheel():
    """scripts/launchers/torch: what `pip install` puts on PATH."""
    return _text("#!/bin/sh\n", _WHEEL_CLIENT, _WHEEL_PYTHON)


def dev(python, package_root, bash="/bin/bash"):
    """The editable tree's launcher: `python` runs the client, with `package_root` on its path."""
    shebang = "#!%s -p\n" % bash if bash else "#!/bin/sh\n"
    tail = _DEV_PYTHON % python_string(package_root)
    return _text(shebang, _DEV_CLIENT.format(python=shell_word(python)), tail)


def _text(shebang, client, python):
    bash = _SH + client + _BASH + init_bash.functions("__torchsh_client", _PRIVATE_ON_DISK, _RUN_AND_WAIT) + _MAIN
    assert "'''" not in bash[3:-4], "the bash text must not close the Python string early"
    return shebang + bash + python


_WHEEL_PYTHON = r'''import sys
# -S leaves site-packages off sys.path: add the one of this install (a venv's, or prefix/lib beside prefix/bin).
version = "python%d.%d" % sys.version_info[:2]
here = sys.argv[0].rpartition("/")[0] or "."
sys.path += [sys.prefix + "/lib/" + version + "/site-packages", here + "/../lib/" + version + "/site-packages"]
try:
    from torchsh.client.main import main
except ImportError:  # a layout of its own (Debian's dist-packages): let site find it
    import site
    site.main()
    from torchsh.client.main import main
main()
'''

_DEV_PYTHON = '''import sys
sys.path.insert(0, %s)
from torchsh.client.main import main
main()
'''
