"""The house's floors (src/torchsh/layers.py): every room sits on one, and no module imports from a higher floor
(in-function imports included) but the few climbs ALLOWED_CLIMBS names, each with why."""
import ast
import pathlib

from torchsh.layers import ALLOWED_CLIMBS, LAYERS, floor_of

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "src" / "torchsh"


def _room(module):
    """torchsh.a.b -> a (a folder or a top module); torchsh -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imports_of(path, module):
    """Every torchsh module PATH imports, anywhere in it (a `from torchsh.a import b` names torchsh.a.b when that is
    a module, else torchsh.a)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "torchsh"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "torchsh":
            for a in node.names:
                full = node.module + "." + a.name
                out.add(full if _exists(full) else node.module)
    return out


def _exists(module):
    base = PACKAGE.parent.joinpath(*module.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def climbs():
    """[(module, imported module)] of the imports that reach a higher floor than the importer's."""
    found = []
    for module, path in _modules():
        mine = floor_of(_room(module))
        for target in imports_of(path, module):
            if floor_of(_room(target)) > mine:
                found.append((module, target))
    return found


def _allowed(module, target):
    return any(module == m and (target == t or target.startswith(t + ".")) for m, t in ALLOWED_CLIMBS)


def test_every_room_sits_on_a_floor():
    rooms = {_room(m) for m, _ in _modules()}
    assert not sorted(r for r in rooms if floor_of(r) is None), "rooms no floor names: add them to layers.LAYERS"
    named = [r for _, rs in LAYERS for r in rs]
    assert len(named) == len(set(named)), "a room on two floors"
    assert not sorted(set(named) - rooms), "floors name rooms that are gone"


def test_no_module_imports_from_a_higher_floor_but_the_allowed_climbs():
    bad = ["%s imports %s (floor %d -> %d)" % (m, t, floor_of(_room(m)), floor_of(_room(t)))
           for m, t in climbs() if not _allowed(m, t)]
    assert not bad, "imports that climb:\n" + "\n".join(bad)


def test_the_allowed_climbs_are_all_still_taken():
    taken = climbs()
    stale = [c for c in ALLOWED_CLIMBS if not any(m == c[0] and (t == c[1] or t.startswith(c[1] + "."))
                                                 for m, t in taken)]
    assert not stale, "these climbs are gone: remove them from ALLOWED_CLIMBS: %s" % stale
