"""docs/architecture.md's table has a line for every room of src/torchsh, each on its floor (src/torchsh/layers.py),
and none for a room that is gone."""
import pathlib
import re

from torchsh.layers import LAYERS

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _rooms():
    package = ROOT / "src" / "torchsh"
    out = {p.name + "/" for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return out | {p.name for p in package.glob("*.py") if p.name != "__init__.py"}


def _table():
    """{room: floor} of the table's rows."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `([\w./]+)` \| ([\w ]+) \|", text, re.M)}


def test_every_room_has_its_line_and_no_line_names_a_room_that_is_gone():
    rooms, table = _rooms(), _table()
    assert not sorted(rooms - set(table)), "rooms without a line in docs/architecture.md"
    assert not sorted(set(table) - rooms), "lines for rooms that are gone"


def test_each_line_puts_its_room_on_the_floor_layers_py_gives_it():
    floors = {room: name for name, rooms in LAYERS for room in rooms}
    wrong = {room: floor for room, floor in _table().items()
             if floors.get(room.rstrip("/").removesuffix(".py")) != floor}
    assert not wrong, "lines whose floor is not layers.py's: %s" % wrong
