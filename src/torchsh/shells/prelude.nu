# The hand-written part of torch.nu: the wire to torchd and the few commands that are not table rows.
# tools/regen.py puts this text first in torch.nu, then one generated command per op-table row.
#
# Names: `use torch.nu` defines `torch OP` for every op, so inside this file an op's name shadows a
# builtin of the same name (`transpose`, `select`, `save`, `print`, `to`, …). This part therefore
# only calls builtins that no op is named after; the generator checks that list (NU_BUILTINS_USED).

export-env {
    # The per-user fallback folder needs the uid and the trust check our user name: found once, at
    # `use`, not per call; from /proc where there is one (no process started), else from `id`.
    if ($env.TORCHSH_NU_UID? | is-empty) or ($env.TORCHSH_NU_USER? | is-empty) {
        let me = (try { ls --long --directory /proc/self | get 0.user } catch { null })
        let uid = if $me == null { null } else {
            try { open --raw /proc/self/status | parse --regex 'Uid:\s+(?<uid>\d+)' | get 0.uid } catch { null }
        }
        $env.TORCHSH_NU_UID = if $uid != null { $uid } else { ^id -u | str trim }
        $env.TORCHSH_NU_USER = if $me != null { $me } else { ^id -un | str trim }
    }
    # `torchsh trust`'s kept verdicts (see there), a table every call of this nu process sees
    try { stor create --table-name torchsh_trusted --columns {folder: str, kept: bool} | ignore }
}

# The client's trust rule (docs/security.md): nothing is sent unless the socket's folder is a real
# folder of ours that nobody else can write in, so no other user can have planted the socket. nu's
# `http --unix-socket` cannot ask for the peer's uid (SO_PEERCRED) as the client does; inside a private
# folder only we (or root) can have bound the socket. A missing folder passes: `torch daemon start`
# creates it and checks it, and the next send checks again.
#
# The check costs an `ls` (nu has no cheaper stat), so its verdict on a folder under $XDG_RUNTIME_DIR is
# kept for this nu process (nu's in-memory `stor`, which every call sees) when that root and every
# folder above it belong to us or root and no one else can write in them (found at the first check).
# Then nobody but us or root can replace, rename or reopen the folder, so the verdict cannot go stale
# (bash's __torchsh_private reasons so); elsewhere (/tmp, whose sticky bit still lets a cleaner delete
# the folder for another user to make again) every call checks.
def "torchsh trust" [sock: string]: nothing -> nothing {
    let folder = ($sock | path dirname)
    let run = ($env.XDG_RUNTIME_DIR? | default "")
    let under = $run != "" and ($folder | str starts-with $"($run)/")
    let kept = if $under { try {
        stor open | query db "SELECT kept FROM torchsh_trusted WHERE folder = ?" --params [$folder] | get kept
    } catch {|e| torchsh interrupted $e; [0] } } else { [0] }
    if $kept == [1] { return }
    let st = (try { ls --long --directory $folder | first } catch {|e| torchsh interrupted $e; return })
    if not ($st.type == "dir" and $st.user in [$env.TORCHSH_NU_USER $env.TORCHSH_NU_UID] and $st.mode =~ '^....-..-') {
        let problem = if $st.type != "dir" {
            $"is a ($st.type), not a folder"
        } else if ($st.user != $env.TORCHSH_NU_USER) and ($st.user != $env.TORCHSH_NU_UID) {
            $"belongs to ($st.user), not to you"
        } else {
            $"has mode ($st.mode): others can write in it"
        }
        error make --unspanned {
            msg: $"torch: ($folder) ($problem)"
            help: "remove it if it is yours, or set XDG_RUNTIME_DIR or TORCHSH_SOCKET to a folder of your own with mode 0700"
            code: "torchsh::untrusted"
        }
    }
    if $kept == [] {   # the first check of a folder under $XDG_RUNTIME_DIR: can the verdict be kept?
        let sealed = ($run | str starts-with "/") and (torchsh sealed $run)
        try { stor insert --table-name torchsh_trusted --data-record {folder: $folder, kept: $sealed} | ignore }
    }
}

# A Ctrl-C caught by a `try` that means another failure (a missing folder) is raised again: nu's interrupt is
# caught once, and a catch that took it for that failure would lose it (`torchsh follow` stops a run on it).
def "torchsh interrupted" [e: record]: nothing -> nothing {
    if $e.msg == "Operation interrupted" { $e.raw }
}

# Is every folder from `dir` up to / a real folder of ours or root's that only its owner can write in?
def "torchsh sealed" [dir: string]: nothing -> bool {
    let owners = [$env.TORCHSH_NU_USER $env.TORCHSH_NU_UID "root" "0"]
    mut at = $dir
    while $at != "" {
        let st = (try { ls --long --directory $at | first } catch {|e| torchsh interrupted $e; return false })
        let private = $st.type == "dir" and $st.user in $owners and $st.mode =~ '^....-..-'
        if not $private or $at == "/" { return ($at == "/") }
        $at = ($at | path dirname)
    }
    false
}

# The context a call runs on, in the client's order (docs/remote.md): $TORCHSH_CONTEXT, else the default
# daemon when $TORCHSH_SOCKET names one, else the current-context file (`torch context use`), else default.
def "torchsh context" []: nothing -> string {
    let named = ($env.TORCHSH_CONTEXT? | default "")
    if $named != "" { return $named }
    if ($env.TORCHSH_SOCKET? | default "") != "" { return "default" }
    let file = $"($env.XDG_CONFIG_HOME? | default $"($env.HOME? | default "")/.config")/torchsh/current-context"
    if not ($file | path exists) { return "default" }   # `torch context use default` removes it
    let name = (open --raw $file | decode utf-8 | str trim)
    if $name == "" { "default" } else { $name }
}

# The socket to talk to: a named context's forwarder (paths.context_socket), else paths.socket_path():
# $TORCHSH_SOCKET, else $XDG_RUNTIME_DIR/torchsh, else $TMPDIR/torchsh-UID.
def "torchsh socket" [name?: string]: nothing -> string {   # name: the context, when the caller has it
    let name = if $name == null { torchsh context } else { $name }
    if $name == "default" and ($env.TORCHSH_SOCKET? | default "") != "" { return $env.TORCHSH_SOCKET }
    let file = if $name == "default" { "torchd.sock" } else { $"contexts/($name).sock" }
    if ($env.XDG_RUNTIME_DIR? | default "") != "" { return $"($env.XDG_RUNTIME_DIR)/torchsh/($file)" }
    let tmp = ($env.TMPDIR? | default "/tmp" | str trim --right --char "/")
    $"($tmp)/torchsh-($env.TORCHSH_NU_UID)/($file)"
}

# A path too long for a Unix socket (paths.socket_path_too_long) is refused with one line, before a daemon is
# started on it (asked only when the socket did not answer: a call that works costs nothing more).
def "torchsh socket-fits" [sock: string]: nothing -> nothing {
    let size = ($sock | encode utf-8 | bytes length)
    let limit = if $nu.os-info.name == "linux" { TORCHSH_SUN_PATH_LINUX } else { TORCHSH_SUN_PATH_BSD }
    if $size >= $limit {
        error make --unspanned {
            msg: $"torch: socket path ($sock) is ($size) bytes; a Unix socket path holds at most ($limit - 1) \(sun_path: ($limit) bytes with its NUL\)"
            help: "TORCHSH_SOCKET_PATH_HINT"
            code: "torchsh::TORCHSH_SOCKET_PATH_CODE"
        }
    }
}

# The caller's TORCHSH_* settings, as the bash client forwards them.
def "torchsh env" []: nothing -> record {
    {
        TORCHSH_SCOPE: ($env.TORCHSH_SCOPE? | default "")
        TORCHSH_NO_GRAD: ($env.TORCHSH_NO_GRAD? | default "")
        TORCHSH_INFERENCE_MODE: ($env.TORCHSH_INFERENCE_MODE? | default "")
        TORCHSH_DEVICE: ($env.TORCHSH_DEVICE? | default "")
        TORCHSH_CONTEXT: (torchsh context)
    }
}

TORCHSH_TRANSPORT
# Reply text -> nu value. Replies are JSON (RFC 8259; a non-finite float is the string "NaN",
# "Infinity" or "-Infinity"), read by `from json`: a string stays a string, so an op summary that
# says NaN is text. Only a tensor value (`--values`: torch value, item, a loss) holds no free text;
# asked for with ?nan=bare it has bare NaN and ±Infinity tokens, which NUON reads as floats (the
# quoted forms too, from a daemon or client that writes strict JSON).
def "torchsh parse" [text: string, --values]: nothing -> any {
    if $values and ($text =~ 'NaN|Infinity') {
        $text | str replace --all --regex '"(-?)(NaN|Infinity)"' '${1}${2}' | str replace --all --regex '([\[,:]\s*)(-?)Infinity' '${1}${2}inf' | from nuon
    } else {
        $text | from json
    }
}

# A reply -> its result, or a nu error with the op, the message, the hint and the stable code.
# PyTorch's warnings (`"warnings": [...]`) go to stderr, one line each, as the bash client prints them.
def "torchsh result" [op: string, reply: any, --values]: nothing -> any {
    if ($reply | describe) == "binary" { return $reply }
    let value = if $values { torchsh parse $reply --values } else { $reply | from json }
    if "error" in $value {
        let e = $value.error
        error make --unspanned {
            msg: $"torch ($e.op? | default $op): ($e.message)"
            help: ($e.hint? | default "")
            code: $"torchsh::($e.code)"
        }
    }
    for w in ($value.warnings? | default []) { torchsh warn $"torch: ($op): warning: ($w)" }
    $value
}

# One line on stderr. (`print` is the builtin here: torch.nu defines `torch print` last, as an alias.)
def "torchsh warn" [line: string]: nothing -> nothing { print --stderr $line }

# nu values -> request JSON. `to json` writes NaN and ±inf as null; the daemon reads the bare
# tokens NaN, Infinity and -Infinity (Python's json), so mark them and swap the marks for the tokens
# (only when a null shows up, to keep ordinary calls fast).
def "torchsh json" [value: any]: nothing -> string {
    let text = ($value | to json --raw)
    if not ($text | str contains "null") { return $text }
    if not (($value | to nuon) =~ '\b(NaN|inf)\b') { return $text }
    torchsh nonfinite $value | to json --raw | str replace --all '"<torchsh:NaN>"' 'NaN' | str replace --all '"<torchsh:inf>"' 'Infinity' | str replace --all '"<torchsh:-inf>"' '-Infinity'
}

def "torchsh nonfinite" [value: any]: nothing -> any {
    let kind = ($value | describe)
    if $kind == "float" {
        # by text: nu 0.115 compares floats with inf wrongly (`1.0 == inf` is true)
        return (match ($value | into string) { "NaN" => "<torchsh:NaN>", "inf" => "<torchsh:inf>", "-inf" => "<torchsh:-inf>", _ => $value })
    }
    if ($kind starts-with "list") or ($kind starts-with "table") {
        return ($value | each {|v| torchsh nonfinite $v })
    }
    if ($kind starts-with "record") {
        return ($value | items {|k, v| {k: $k, v: (torchsh nonfinite $v)} } | reduce --fold {} {|it, acc| $acc | insert $it.k $it.v })
    }
    $value
}

# What every typed command runs (their bodies stay one short call: nu parses each at `use`): the op,
# the words, the flags' names in one string (a switch marked `!`) and their values in that order. A flag
# not given is null and a switch that is off is false: both are left out, so the daemon applies the
# defaults and chooses the overload as for the bash command line. The rest is `torchsh call`'s.
def "torchsh typed" [op: string, args: list, names: string, given: list, --whole, --values, --follows, --streams]: any -> any {
    let piped = $in
    mut kw = {}
    for pair in ($names | split row " " | zip $given) {
        if $pair.1 == null { continue }
        if not ($pair.0 | str ends-with "!") {
            $kw = ($kw | insert $pair.0 $pair.1)
        } else if $pair.1 {
            $kw = ($kw | insert ($pair.0 | str substring 0..-2) true)
        }
    }
    torchsh call $op $piped $args $kw {} --whole=$whole --values=$values --follows=$follows --streams=$streams
}

# What every generated command runs. Piped handles fill the leftmost tensor slots still missing
# (a piped list of handles fills several: `[$a $b] | torch cat`); piped data that is no handle (the
# number `each` gives its closure) is not an argument. Ops whose first argument is data (`torch
# tensor`, `--whole`) take the piped value itself; a table becomes its rows, columns in table order.
# Flags equal to their default (or not given) are left out so the daemon chooses the overload as for
# the bash command line. `kw` holds the op's flags and the global switch no_grad; `--values` marks an
# op whose result is a tensor value (NaN and ±inf come back as floats); `--follows` one that follows a job;
# `--streams` a job whose records are a stream as they come (`torch lm generate`: a record per token).
def "torchsh call" [op: string, piped: any, args: list, kw: record, defaults: record, --whole, --values, --follows, --streams]: nothing -> any {
    let lead = if $piped == null { [] } else if $whole { torchsh data $piped } else { torchsh handles-in $piped }
    mut kwargs = {}
    for name in ($kw | columns) {
        let v = ($kw | get $name)
        if $v != null and $v != ($defaults | get --optional $name) { $kwargs = ($kwargs | insert $name $v) }
    }
    let no_grad = ($kwargs.no_grad? | default false)
    let kwargs = ($kwargs | reject --optional no_grad)
    let body = {tensors: $lead, args: $args, kwargs: $kwargs, no_grad: $no_grad, values: $values}
    let reply = (torchsh request $op (if $follows { $body | insert stderr_tty (is-terminal --stderr) } else { $body }))
    # Replies besides output (protocol.REPLIES; this module carries out exec, follow and handover): a command
    # only the `torch` client can carry out (a copy between daemons, a daemon's exit to wait for, the caller's
    # files on a remote context) is handed over before it ran; a job is followed to its end.
    if "handover" in $reply {
        let kwargs = (if $no_grad { $kwargs | insert no_grad true } else { $kwargs })
        return (torchsh by-client $op $lead $args $kwargs --stream=($reply.handover.needs == "exec"))
    }
    if $streams and ("follow" in $reply) { return (torchsh stream $reply) }
    if $follows or ("follow" in $reply) { return (torchsh follow $reply) }
    $reply.result
}

# A job's records as a stream, each as soon as a poll brings it (`torch lm generate`: one per token, the summary
# last), so `torch lm generate $m "…" | each {|r| …}` sees a token when it is made; `torchsh follow` gathers a
# run's rows into a table at its end instead. Stderr prints as it comes. A status not 0 (stopped, failed) ends
# the stream with that error, after the records it had. Ctrl-C ends the stream: the daemon stops a run whose
# follower is gone (docs/jobs.md). The state: records not yet given, the reply to read, and the end's status.
def "torchsh stream" [reply: record]: nothing -> any {
    generate {|s|
        if ($s.rows | is-not-empty) { return {out: ($s.rows | first), next: ($s | upsert rows ($s.rows | skip 1))} }
        if $s.exit != null {
            if $s.exit == 0 { return {} }
            let line = ($s.err | str trim | lines | last | default "stopped")
            let code = ($line | parse --regex '\[(?<c>\w+)\]$' | get c.0? | default "stopped")
            error make --unspanned {msg: ($line | str replace --regex ' \[\w+\]$' ''), code: $"torchsh::($code)"}
        }
        let now = $s.now
        let err = ($now.stderr? | default "")
        if ($err | is-not-empty) { print --stderr --no-newline $err }
        let rows = ($now.stdout? | default "" | lines | where {|l| $l starts-with "{" } | each {|l| $l | from json })
        if not ("follow" in $now) { return {next: {rows: $rows, now: null, err: ($s.err + $err), exit: ($now.exit? | default 0)}} }
        let poll = (torchsh json {args: $now.follow.args, kwargs: $now.follow.kwargs, env: (torchsh env), cwd: $env.PWD, stderr_tty: (is-terminal --stderr)})
        let next = (torchsh result "job poll" (torchsh http POST "/v1/ops/job.poll" $poll))
        {next: {rows: $rows, now: (if "result" in $next { $next.result } else { $next }), err: ($s.err + $err), exit: null}}
    } {rows: [], now: $reply, err: "", exit: null}
}

# The follow reply (a job's output) carried out: the poll it names, again and again, until a reply has none.
# Progress (stderr) prints as it comes, a live line on a terminal; rows (JSON lines) are gathered. A foreground
# run (`torch fit`) answers its rows as a table, and fails as in bash when its status is not 0 (stopped,
# failed: its last line), after printing the rows it had; the job verbs answer {rows, stdout, stderr, exit}.
# Ctrl-C (nu's interrupt, caught) makes the next poll of a run carry --interrupt, as the bash function's trap
# does: the run stops at its next step boundary and is followed to its end, its rows kept; a second Ctrl-C, or
# one while a job verb follows, stops following (the daemon stops a run whose follower is gone: docs/jobs.md).
def "torchsh follow" [reply: record]: nothing -> any {
    if not ("follow" in $reply) and (($reply.result | describe) !~ '^record') { return $reply.result }  # --detach
    let run = ($reply.follow?.stops? | default false)
    mut now = if "follow" in $reply { $reply } else { $reply.result }
    mut out = []
    mut err = ""
    mut interrupted = false
    loop {
        let step = (try {
            if ($now.stderr? | default "" | is-not-empty) { print --stderr --no-newline $now.stderr; $err = $err + $now.stderr }
            $out = ($out | append ($now.stdout? | default "" | lines))
            $now = ($now | upsert stderr "" | upsert stdout "")  # taken: an interrupt below must not take it twice
            if "follow" in $now {
                let kwargs = if $interrupted { $now.follow.kwargs | upsert interrupt true } else { $now.follow.kwargs }
                let poll = (torchsh json {args: $now.follow.args, kwargs: $kwargs, env: (torchsh env), cwd: $env.PWD, stderr_tty: (is-terminal --stderr)})
                let next = (torchsh result "job poll" (torchsh http POST "/v1/ops/job.poll" $poll))
                $now = if "result" in $next { $next.result } else { $next }
                "polled"
            } else { "ended" }
        } catch {|e| if $e.msg == "Operation interrupted" { "interrupted" } else { $e.raw } })  # raw: raised again
        if $step == "ended" { break }
        if $step == "interrupted" {
            if $interrupted or not $run { $now = ($now | upsert exit 130 | reject --optional follow); break }
            $interrupted = true
        }
    }
    let rows = ($out | where {|l| $l starts-with "{" } | each {|l| $l | from json })
    let text = ($out | where {|l| not ($l starts-with "{") } | str join "\n")
    let exit = ($now.exit? | default 0)
    if not $run { return {rows: $rows, stdout: $text, stderr: $err, exit: $exit} }
    if $exit != 0 {
        if ($rows | is-not-empty) { print $rows }  # the epochs it had ended stay on the screen, as in bash
        let line = ($err | str trim | lines | last | default "interrupted")
        let code = ($line | parse --regex '\[(?<c>\w+)\]$' | get c.0? | default "stopped")
        error make --unspanned {msg: ($line | str replace --regex ' \[\w+\]$' ''), code: $"torchsh::($code)"}
    }
    $rows
}

# An op run by the `torch` client (a handover), its result parsed as the command line's (--json): the words of
# `torchsh call` written as a command line (flags after the words; a list flag repeated), piped handles as its
# stdin. `--stream`: a command that runs in the caller's world (`daemon log -f`): its output as it comes.
def "torchsh by-client" [op: string, lead: list, args: list, kwargs: record, --stream]: nothing -> any {
    mut argv = ($op | split row "." | append ($args | each {|w| torchsh word $w }))
    for name in ($kwargs | columns) {
        let v = ($kwargs | get $name)
        let kind = ($v | describe)
        if $v == true {
            $argv = ($argv | append $"--($name)")
        } else if ($kind starts-with "list") {
            for item in $v { $argv = ($argv | append [$"--($name)" (torchsh word $item)]) }
        } else {
            $argv = ($argv | append [$"--($name)" (torchsh word $v)])
        }
    }
    if $stream { return ($lead | str join "\n" | ^torch ...$argv) }
    $argv = ($argv | append "--json")
    let r = ($lead | str join "\n" | ^torch ...$argv | complete)
    torchsh cli-result $argv $r.exit_code $r.stdout $r.stderr
}

# The handles in piped input: a handle, the handle lines of a text (`^torch chunk …` prints one a
# line), or the handles of a piped list; anything else is none.
def "torchsh handles-in" [piped: any]: nothing -> list {
    let kind = ($piped | describe)
    let held = '^([a-z]+://\S+|@[A-Za-z0-9_.~/:-]+)$'  # a handle, or a `@name` (registry/names.py)
    if $kind == "string" {
        if ($piped =~ $held) { return [$piped] }
        return ($piped | lines | str trim | where {|l| $l =~ $held })
    }
    if not ($kind starts-with "list") { return [] }
    $piped | where {|v| ($v | describe) == "string" and ($v =~ $held) }
}

# Piped data for an op that takes data (`torch tensor`): a table as a list of its rows' values
# (columns in table order), a record as its values.
def "torchsh data" [piped: any]: nothing -> list {
    if $piped == null { return [] }
    let kind = ($piped | describe)
    if ($kind starts-with "table") { return [($piped | each {|row| $row | values })] }
    if ($kind starts-with "record") { return [($piped | values)] }   # one row: 1-D
    if ($kind starts-with "range") { return [($piped | each {|x| $x })] }
    [$piped]
}

# `torch value --table`: a 2-D tensor's rows as a nu table, columns column0, column1, … (as nu's
# `from csv --noheaders` names them); a 1-D tensor is one column.
def "torchsh table" [value: any]: nothing -> any {
    let kind = ($value | describe)
    if not ($kind starts-with "list") or ($value | is-empty) {
        error make --unspanned {msg: "torch value: --table needs a 1-D or 2-D tensor", code: "torchsh::usage"}
    }
    if not (($value | get 0 | describe) starts-with "list") { return ($value | wrap column0) }
    if (($value | get 0 | get --optional 0 | describe) starts-with "list") {
        error make --unspanned {msg: "torch value: --table needs a 1-D or 2-D tensor, not 3-D or more", help: "reshape it to 2-D first", code: "torchsh::usage"}
    }
    let names = (0..<($value | get 0 | length) | each {|i| $"column($i)" })
    $value | each {|row| $names | zip $row | into record }
}

# TAB (nu's custom completers): dtypes and devices from these lists, everything else from the daemon,
# which answers bash, zsh and fish too (`torch __complete`, shells/complete.py). nu hands the completer
# the command being typed; it goes as it is, in one request, and {value, description} records come
# back: the handles of the slot's kind (`tensor [100,1] float32`), layer kinds, loss names, ….
# Nothing (null) asks nu for file names. A TAB never starts a daemon: with none there is no candidate.
def "nu-complete torch dtypes" [] { TORCHSH_DTYPES }
def "nu-complete torch devices" [] { TORCHSH_DEVICES }
def "nu-complete torch" [context: string] { try { torchsh complete $context } catch { [] } }
# `torch nn <TAB>` and the other words of `main` (nu hands a command's completer its words)
def "nu-complete torch words" [spans: list<string>] { try { torchsh complete ($spans | str join " ") } catch { [] } }

# A nu value as one command-line word: strings as they are, everything else as JSON.
def "torchsh word" [v: any]: nothing -> string {
    if ($v | describe) == "string" { $v } else { torchsh json $v }
}

# A command line's outcome -> its JSON result (or its text: help), or a nu error with the stable code.
def "torchsh cli-result" [argv: list, code: int, out: string, err: string, --text]: nothing -> any {
    if $code != 0 {
        let line = ($err | str trim)
        let tag = ($line | parse --regex '\[(?<c>\w+)\]$' | get c.0? | default "cli")
        let msg = ($line | str replace --regex '^torch: ([\w.]+): ' 'torch $1: ' | str replace --regex ' \[\w+\]$' '')
        error make --unspanned {msg: $msg, code: $"torchsh::($tag)"}
    }
    if ($err | is-not-empty) { torchsh warn ($err | str trim --right) }   # PyTorch's warnings
    if $text { return $out }
    if ($out | is-empty) { return null }
    let lines = ($out | lines)
    # JSON lines (a job's rows: `torch generate` by name, one a token): a record each
    if ($lines | length) > 1 and ($lines | where {|l| not ($l starts-with "{") } | is-empty) { return ($lines | each {|l| $l | from json }) }
    try { torchsh parse $out } catch { if ($lines | length) == 1 { $lines.0 } else { $lines } }
}

# Every op without a typed command above runs by name with the command line's grammar, over the
# same wire: the nn module kinds (`torch nn linear 3 2 --bias false`), the namespaces nn.functional,
# linalg, fft and special (`torch linalg qr $a`, `torch gelu $x`), and ops newer than this file.
# `torch OP --help` prints the op's help. (nu parses every typed command at `use`; these ~400 would
# double that.) Results are JSON (`--json`), piped handles its stdin.
@complete "nu-complete torch words"
export def --wrapped main [...words]: any -> any {
    let argv = ($words | each {|w| torchsh word $w })
    if ($argv | is-not-empty) and $argv.0 == "context" { return (^torch ...$argv) }  # client-side: docs/remote.md
    let help = ($argv | is-empty) or ($argv | where {|w| $w in ["--help" "-h" "help"] } | is-not-empty)
    let argv = (if $help { $argv } else { $argv | append "--json" })
    let stdin = (torchsh handles-in $in)
    torchsh cli $argv $stdin --text=$help
}
