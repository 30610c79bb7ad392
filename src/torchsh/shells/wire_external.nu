# torch.nu's transport for a nu without `http --unix-socket`: every op runs the external `^torch`
# client (one process per op: slower, same results). `torch nu-module --transport external` picks it.

# One op call: {tensors, args, kwargs, no_grad} -> {result}, or a nu error. The `torch` client carries out every
# reply besides output itself (a job is followed to its end: its rows come back as JSON lines).
def "torchsh request" [op: string, req: record]: nothing -> any {
    mut words = ($op | split row ".")
    for v in (($req.tensors? | default []) ++ ($req.args? | default [])) { $words = ($words | append (torchsh word $v)) }
    for name in ($req.kwargs? | default {} | columns) {
        let v = ($req.kwargs | get $name)
        if ($v | describe) =~ '^(list|table)' and ($v | where {|x| ($x | describe) != "string" } | is-empty) and ($v | is-not-empty) {
            $words = ($words | append $"--($name)" | append $v)   # handle lists: --inputs A B
        } else {
            $words = ($words | append $"--($name)=(torchsh word $v)")
        }
    }
    if ($req.no_grad? | default false) { $words = ($words | append "--no_grad") }
    let argv = $words
    let run = (^torch ...$argv --json | complete)
    if $run.exit_code != 0 {
        let line = ($run.stderr | str trim)
        let code = ($line | parse --regex '\[(?<c>\w+)\]$' | get c.0? | default "cli")
        error make --unspanned {msg: ($line | str replace --regex '^torch: ([\w.]+): ' 'torch $1: '), code: $"torchsh::($code)"}
    }
    if ($run.stderr | is-not-empty) { torchsh warn ($run.stderr | str trim --right) }   # PyTorch's warnings
    if ($run.stdout | is-empty) { return {result: null} }
    let lines = ($run.stdout | lines)
    if ($lines | length) > 1 and ($lines | all {|l| $l starts-with "{" }) { return {result: ($lines | each {|l| $l | from json })} }
    {result: (try { torchsh parse $run.stdout --values=($req.values? | default false) } catch { $run.stdout })}
}

# A command line by name (ops without a typed command): the client with the handles as its stdin.
def "torchsh cli" [argv: list, stdin: list, --text]: nothing -> any {
    let run = if ($stdin | is-empty) { ^torch ...$argv | complete } else { $stdin | str join "\n" | ^torch ...$argv | complete }
    torchsh cli-result $argv $run.exit_code $run.stdout $run.stderr --text=$text
}

# TAB's candidates for the command being typed (`torch __complete --line`); nothing: file names.
def "torchsh complete" [line: string]: nothing -> any {
    let out = (^torch __complete --line $line --json | str trim)
    if ($out | is-empty) { null } else { $out | from json }
}

# Block forms: the settings each block form adds (the daemon's ExecRequest, known here by name).
def "torchsh block" [op: string, block: closure, kw: record]: nothing -> any {
    if $op == "scope" {
        let id = (^torch scope begin | str trim)
        let out = try { {ok: (with-env {TORCHSH_SCOPE: $id} $block)} } catch {|err| {err: $err} }
        ^torch scope end $id
        return (if "err" in $out { $out.err.raw } else { $out.ok })
    }
    if $op == "profile" {  # its start answers an exec reply, which the `^torch` client runs only for a command
        error make --unspanned {
            msg: "torch profile: a block needs the socket transport (`torch nu-module`); nothing ran"
            help: "or run it from bash: torch profile -- CMD"
            code: "torchsh::needs_client"
        }
    }
    let settings = {
        no_grad: {TORCHSH_NO_GRAD: "1"}, enable_grad: {TORCHSH_NO_GRAD: "0"}, inference_mode: {TORCHSH_INFERENCE_MODE: "1"}
    }
    with-env ($settings | get $op) $block
}
