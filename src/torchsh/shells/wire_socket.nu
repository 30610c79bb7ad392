# torch.nu's transport for nu with `http post --unix-socket`: JSON over the daemon's socket, no process
# per op. (tools/regen.py splices this into torch.nu; `torch nu-module --transport external` uses
# wire_external.nu instead, for a nu without --unix-socket.)

# One op call: {tensors, args, kwargs, no_grad, values, stderr_tty} -> the daemon's answer as a record:
# {result}, or a reply besides output ({follow, stdout, stderr}, {handover}, {exec}: `torchsh call` carries
# them out), or a nu error. `values`: the result is a tensor value, asked for with bare NaN/±Infinity
# tokens (?nan=bare) to read as floats.
def "torchsh request" [op: string, req: record]: nothing -> record {
    let values = ($req.values? | default false)
    let body = (torchsh json ($req | reject --optional values | merge {env: (torchsh env), cwd: $env.PWD}))
    let path = if $values { $"/v1/ops/($op)?nan=bare" } else { $"/v1/ops/($op)" }
    torchsh result $op (torchsh http POST $path $body) --values=$values
}

# TAB's candidates for the command being typed (`torch __complete --line`): sent, never starting a daemon.
def "torchsh complete" [line: string]: nothing -> any {
    let body = (torchsh json {args: [], kwargs: {line: $line}, cwd: $env.PWD})  # cwd: `torch lm open <TAB>`'s folders
    torchsh parse (torchsh send POST (torchsh socket) "http://localhost/v1/ops/__complete" $body) | get result
}

# One HTTP request; a socket that does not answer starts the daemon (`torch daemon start`) once,
# except for the census, status and stop (and completion), which never start one: as the `torch` client.
def "torchsh http" [method: string, path: string, body: string = "", --full]: nothing -> any {
    let name = (torchsh context)
    let sock = (torchsh socket $name)
    let url = $"http://localhost($path)"
    let failed = try { return (torchsh send $method $sock $url $body --full=$full --context $name) } catch {|err| $err }
    if ($failed.msg =~ "(?i)interrupted") { $failed.raw }  # Ctrl-C: end here, never a retry that hides it
    if $path in ["/v1/ops/tensors", "/v1/tensors"] { return '{"result": [], "objects": []}' }  # nothing is held
    if $path == "/v1/ops/daemon.stop" { return ({result: $"no torchd is running on ($sock)\n"} | to json) }
    if $path in ["/v1/ops/daemon.status", "/v1/status"] {
        error make --unspanned {
            msg: $"torch daemon status: no daemon is running on ($sock)"
            help: "`torch daemon start` starts one; any other command starts one too"
            code: "torchsh::daemon_unavailable"
        }
    }
    torchsh socket-fits $sock  # a path no Unix socket can have: one line, before a daemon is started on it
    let started = (do { ^torch daemon start } | complete)
    if $started.exit_code != 0 {
        error make --unspanned {
            msg: $"torch: daemon unavailable at ($sock): ($failed.msg)"
            help: ($started.stderr | str trim)
            code: "torchsh::daemon_unavailable"
        }
    }
    torchsh send $method $sock $url $body --full=$full --context $name
}

# A named context's calls carry its name (Torchsh-Context): its daemon writes their handles kind://NAME/….
# Every call lists the replies this module carries out (protocol.REPLIES; Torchsh-Replies): through the JSON
# API a job's follow and the handover to the `torch` client (a block form adds exec: `torchsh block`); by name
# (/v1/cli) the handover. (--context: the context, when the caller has it.)
def "torchsh send" [method: string, sock: string, url: string, body: string, --full, --context: string]: nothing -> any {
    torchsh trust $sock
    let name = if $context == null { torchsh context } else { $context }
    let replies = if ($url | str ends-with "/v1/cli") { "TORCHSH_REPLIES_CLI" } else { "TORCHSH_REPLIES_API" }
    let headers = if $name == "default" { [torchsh-replies $replies] } else { [torchsh-replies $replies torchsh-context $name] }
    if $full {
        http post --unix-socket $sock --headers $headers --full --raw --allow-errors $url $body
    } else if $method == "GET" {
        http get --unix-socket $sock --headers $headers --raw --allow-errors $url
    } else {
        # no --content-type application/json: nu would re-encode a body holding NaN as a JSON string
        http post --unix-socket $sock --headers $headers --raw --allow-errors $url $body
    }
}

# Block forms (`torch scope { … }`, `torch no_grad { … }`, `torch profile { … }`): the daemon answers with the
# TORCHSH_* settings for the block and the op that closes it (scope end, profile finish); the block's own error
# passes through after that, so a failing block still frees its scope. A closing op that answers a value
# (profile finish: the ops table, as a nu table) is the block form's value, the block's own printed before it.
def "torchsh block" [op: string, block: closure, kw: record]: nothing -> any {
    # flags not given are left out (the op's defaults apply; null is no value of an int flag)
    let given = ($kw | items {|k, v| if $v == null { {} } else { {$k: $v} } } | reduce --fold {} {|it, acc| $acc | merge $it })
    let body = (torchsh json {
        args: [], kwargs: ($given | insert command ["nu-closure"]), env: (torchsh env), cwd: $env.PWD, exec: true
    })
    let exec = (torchsh result $op (torchsh http POST $"/v1/ops/($op)" $body) | get exec)
    # Only TORCHSH_* settings reach the block: a reply never sets PATH or anything else of the caller's.
    let settings = ($exec.env | items {|k, v| if ($k starts-with "TORCHSH_") { {$k: $v} } else { {} } } | reduce --fold {} {|it, acc| $acc | merge $it })
    let out = try { {ok: (with-env $settings $block)} } catch {|err| {err: $err} }
    let closing = if $exec.then != null { torchsh request $exec.then.op {args: $exec.then.args, kwargs: {}} | get result? }
    if "err" in $out { $out.err.raw }
    if $closing == null { return $out.ok }
    if $out.ok != null { print $out.ok }
    $closing
}

# A command line by name (ops without a typed command): POST /v1/cli, the bash client's own request
# (NUL-separated: format, cwd, tty, env lines, has-stdin, stdin lines, argv), the handles as stdin.
def "torchsh cli" [argv: list, stdin: list, --text]: nothing -> any {
    let settings = (torchsh env | items {|k, v| $"($k)=($v)" } | str join "\n")
    let piped = if ($stdin | is-empty) { ["1" "0" ""] } else { ["0" "1" ($stdin | str join "\n")] }
    let body = (["TORCHSH_CLI_FORMAT" $env.PWD $piped.0 $settings $piped.1 $piped.2] ++ $argv | str join (char nul))
    let reply = (torchsh http POST "/v1/cli" $body --full)
    let headers = ($reply.headers.response | reduce --fold {} {|h, acc| $acc | insert $h.name $h.value })
    if ($headers.torchsh-exit? | is-empty) {   # the daemon refused the request itself: a JSON error
        return (torchsh result ($argv | first) ($reply.body | into binary | decode utf-8))
    }
    if ($headers.torchsh-handover? | is-not-empty) {  # a reply only the `torch` client carries out: it runs it
        let r = ($stdin | str join "\n" | ^torch ...$argv | complete)
        return (torchsh cli-result $argv $r.exit_code $r.stdout $r.stderr --text=$text)
    }
    let bytes = ($reply.body | into binary)
    let n = ($headers.torchsh-stdout? | default ($bytes | bytes length) | into int)
    let out = ($bytes | bytes at 0..<$n | decode utf-8)
    let err = ($bytes | bytes at $n.. | decode utf-8)
    torchsh cli-result $argv ($headers.torchsh-exit? | default "0" | into int) $out $err --text=$text
}
