# The hand-written part of torch.nu: the wire to torchd and the few commands that are not table rows.
# tools/regen.py puts this text first in torch.nu, then one generated command per op-table row.
#
# Names: `use torch.nu` defines `torch OP` for every op, so inside this file an op's name shadows a
# builtin of the same name (`transpose`, `select`, `save`, `print`, `to`, …). This part therefore
# only calls builtins that no op is named after; the generator checks that list (NU_BUILTINS_USED).

export-env {
    # The per-user fallback folder needs the uid; ask once, at `use`, not per call.
    if ($env.TORCHSH_NU_UID? | is-empty) { $env.TORCHSH_NU_UID = (^id -u | str trim) }
    if ($env.TORCHSH_NU_USER? | is-empty) { $env.TORCHSH_NU_USER = (^id -un | str trim) }
}

# The client's trust rule (docs/security.md): nothing is sent unless the socket's folder is a real
# folder of ours that nobody else can write in, so no other user can have planted the socket. nu's
# `http --unix-socket` cannot ask for the peer's uid (SO_PEERCRED) as the client does; inside a private
# folder only we (or root) can have bound the socket. A missing folder passes: `torch daemon start`
# creates it and checks it, and the next send checks again.
def "torchsh trust" [sock: string]: nothing -> nothing {
    let folder = ($sock | path dirname)
    let found = (try { ls --long --directory $folder } catch { [] })
    if ($found | is-empty) { return }
    let st = ($found | get 0)
    let problem = if $st.type != "dir" {
        $"is a ($st.type), not a folder"
    } else if ($st.user != $env.TORCHSH_NU_USER) and ($st.user != $env.TORCHSH_NU_UID) {
        $"belongs to ($st.user), not to you"
    } else if (($st.mode | str substring 4..4) == "w") or (($st.mode | str substring 7..7) == "w") {
        $"has mode ($st.mode): others can write in it"
    } else { "" }
    if ($problem | is-not-empty) {
        error make --unspanned {
            msg: $"torch: ($folder) ($problem)"
            help: "remove it if it is yours, or set XDG_RUNTIME_DIR or TORCHSH_SOCKET to a folder of your own with mode 0700"
            code: "torchsh::untrusted"
        }
    }
}

# protocol.runtime_dir(): $TORCHSH_SOCKET, else $XDG_RUNTIME_DIR/torchsh, else $TMPDIR/torchsh-UID.
def "torchsh socket" []: nothing -> string {
    if ($env.TORCHSH_SOCKET? | is-not-empty) { return $env.TORCHSH_SOCKET }
    if ($env.XDG_RUNTIME_DIR? | is-not-empty) { return $"($env.XDG_RUNTIME_DIR)/torchsh/torchd.sock" }
    let tmp = ($env.TMPDIR? | default "/tmp" | str trim --right --char "/")
    $"($tmp)/torchsh-($env.TORCHSH_NU_UID)/torchd.sock"
}

# The caller's TORCHSH_* settings, as the bash client forwards them.
def "torchsh env" []: nothing -> record {
    {
        TORCHSH_SCOPE: ($env.TORCHSH_SCOPE? | default "")
        TORCHSH_NO_GRAD: ($env.TORCHSH_NO_GRAD? | default "")
        TORCHSH_INFERENCE_MODE: ($env.TORCHSH_INFERENCE_MODE? | default "")
        TORCHSH_DEVICE: ($env.TORCHSH_DEVICE? | default "")
    }
}

TORCHSH_TRANSPORT
# JSON text -> nu value. NaN and ±Infinity are not JSON to nu's parser; NUON reads them as floats.
def "torchsh parse" [text: string]: nothing -> any {
    if ($text =~ 'NaN|Infinity') {
        $text | str replace --all --regex '([\[,:])(-?)Infinity' '${1}${2}inf' | from nuon
    } else {
        $text | from json
    }
}

# A reply -> its result, or a nu error with the op, the message, the hint and the stable code.
def "torchsh result" [op: string, reply: any]: nothing -> any {
    if ($reply | describe) == "binary" { return $reply }
    let value = (torchsh parse $reply)
    if "error" in $value {
        let e = $value.error
        error make --unspanned {
            msg: $"torch ($e.op? | default $op): ($e.message)"
            help: ($e.hint? | default "")
            code: $"torchsh::($e.code)"
        }
    }
    $value
}

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

# What every generated command runs: piped input fills the leftmost tensor slots (a piped list
# fills several: `[$a $b] | torch cat`), then the positional words; flags equal to their default
# (or not given) are left out so the daemon chooses the overload as for the bash command line.
def "torchsh call" [op: string, piped: any, args: list, kw: record, defaults: record, --whole, --no_grad, --inference_mode]: nothing -> any {
    let lead = if $piped == null { [] } else if $whole or not (($piped | describe) =~ '^(list|table)') { [$piped] } else { $piped }
    mut kwargs = {}
    for name in ($kw | columns) {
        let v = ($kw | get $name)
        if $v != null and $v != ($defaults | get --optional $name) { $kwargs = ($kwargs | insert $name $v) }
    }
    torchsh request $op {tensors: $lead, args: $args, kwargs: $kwargs, no_grad: $no_grad, inference_mode: $inference_mode}
}

# Completion lists for flags and positions (nu's own completer; bash/zsh/fish use `torch __complete`).
def "nu-complete torch dtypes" [] { TORCHSH_DTYPES }
def "nu-complete torch devices" [] { TORCHSH_DEVICES }
def "nu-complete torch handles" [] { try { torchsh handles } catch { [] } }

# Ops the module has no command for (made after it was generated) go to the external client.
export def --wrapped main [...words]: any -> any {
    let run = (^torch ...$words | complete)
    if $run.exit_code != 0 {
        error make --unspanned {msg: ($run.stderr | str trim), code: "torchsh::cli"}
    }
    let lines = ($run.stdout | lines)
    try { torchsh parse $run.stdout } catch { if ($lines | length) == 1 { $lines.0 } else { $lines } }
}
