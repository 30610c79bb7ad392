"""No import circle among torchsh's modules, counting imports inside functions too: a circle kept alive
by an in-function import is still a circle (who is built from whom stops being readable).

KNOWN lists the circles there are today, each as its sorted files; shrink it, never grow it."""
import ast
import pathlib

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"
KNOWN = set()


def _module_file(name):
    """torchsh.a.b -> its file relative to src/ (a package's __init__.py), or None when not ours."""
    base = SRC.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path.relative_to(SRC).as_posix()
    return None


def _imports(path):
    """Files of torchsh this file imports, anywhere in it. `from P import m` of a submodule m counts as
    an import of m alone (not of P's __init__.py, which Python also runs, as every import of m does)."""
    package = path.relative_to(SRC).with_suffix("").parts[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found = [_module_file(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            found = [_module_file(module + "." + a.name) or _module_file(module) for a in node.names]
        else:
            continue
        out.update(f for f in found if f and f != path.relative_to(SRC).as_posix())
    return out


def _circles(graph):
    """Strongly connected components of more than one file (Tarjan), each as a sorted tuple."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(tuple(sorted(comp)))
    for v in list(graph):
        if v not in index:
            visit(v)
    return set(out)


def test_no_import_circle_among_torchsh_modules_beyond_the_known_ones():
    graph = {p.relative_to(SRC).as_posix(): _imports(p) for p in (SRC / "torchsh").rglob("*.py")}
    new = _circles(graph) - KNOWN
    assert not new, "import circles: %s" % sorted(new)


def test_the_route_table_openapi_and_fast_path_import_in_one_direction():
    graph = {p: _imports(SRC / p) for p in ("torchsh/daemon/routes.py", "torchsh/api/openapi.py",
                                            "torchsh/daemon/fastpath.py")}
    assert "torchsh/api/openapi.py" in graph["torchsh/daemon/routes.py"]
    assert not any(p.startswith("torchsh/daemon/") for p in graph["torchsh/api/openapi.py"])
    assert "torchsh/daemon/routes.py" not in graph["torchsh/daemon/fastpath.py"]
    assert "torchsh/daemon/fastpath.py" not in graph["torchsh/daemon/routes.py"]


# The op table's loader: build_table() imports every verb module to register its rows (verbs.all_verbs), and a
# group word's listing (`torch nn`) is verbs/meta.py's. Everything else calls down, never up into a verb.
VERB_LOADER = "torchsh/table/build.py"


def test_nothing_outside_verbs_imports_a_verb_module_but_the_op_table_loader():
    verbs = "torchsh/verbs/"
    up = sorted("%s -> %s" % (p.relative_to(SRC).as_posix(), m)
                for p in (SRC / "torchsh").rglob("*.py")
                if not p.relative_to(SRC).as_posix().startswith(verbs) and p.relative_to(SRC).as_posix() != VERB_LOADER
                for m in _imports(p) if m.startswith(verbs))
    assert not up, "verbs are leaves: move what these need below verbs/ instead: %s" % up


# What both processes share: the client may import these and nothing else outside client/ (transitively)
SHARED = {"torchsh/__init__.py", "torchsh/protocol.py", "torchsh/paths.py", "torchsh/trust.py", "torchsh/errors.py",
          "torchsh/privatesocket.py",  # the one bind of torchd's socket and a TLS context forwarder's
          "torchsh/link/__init__.py", "torchsh/link/relay.py", "torchsh/link/tls.py", "torchsh/link/fastframe.py",
          "torchsh/shells/init_bash.py", "torchsh/shells/init_zsh.py",  # the functions' text, printed with no daemon
          "torchsh/shells/named_context.py"}


def test_the_client_imports_no_daemon_room():
    """Everything under client/ runs outside torchd (the `torch` process, its forwarders): what it imports,
    directly or through another module, is client/ or SHARED, never a room of the daemon's."""
    graph = {p.relative_to(SRC).as_posix(): _imports(p) for p in (SRC / "torchsh").rglob("*.py")}
    seen, todo = set(), [f for f in graph if f.startswith("torchsh/client/")]
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo.extend(graph.get(f, ()))
    outside = sorted(f for f in seen if not f.startswith("torchsh/client/") and f not in SHARED)
    assert not outside, "the client reaches daemon rooms: %s" % outside
