"""The script's --check says what it compared: an object without values to hash (a lazy module before its first
forward, a meta tensor), in the daemon or the script, never fails `history --python` for the whole session; it
is named as not compared, and everything else is written and checked as before."""
import re
import subprocess
import sys

import torch

from torchsh.history import forms, python
from torchsh.history.log import Entry
from torchsh.recipes import base as recipes
from torchsh.registry.store import Registry


def _session(tmp_path):
    """A daemon's log and registry, in process: a tensor drawn, then a lazy module built and never run."""
    registry = Registry()
    torch.manual_seed(5)
    rng = torch.get_rng_state()
    t = torch.randn(2, 3)
    th = registry.put(t)
    lazy = recipes.record(torch.nn.LazyLinear(4), "LazyLinear", {"out_features": 4})  # as `nn lazy_linear 4`
    mh = registry.put(lazy, "nn")
    made = Entry(0, "nn.lazy_linear", {"out_features": 4}, [mh])
    forms.note(made, {"out_features": 4}, lazy, registry)
    return registry, [Entry(0, "randn", {"size": [2, 3]}, [th], rng=rng, made={"call": ([[2, 3]], {})}), made], t


def test_a_held_lazy_module_is_written_named_as_not_compared_and_the_rest_checks(tmp_path):
    registry, entries, _ = _session(tmp_path)
    text, _ = python.script(entries, registry)
    assert "torch.nn.LazyLinear(" in text
    path = tmp_path / "s.py"
    path.write_text(text)
    p = subprocess.run([sys.executable, "-I", str(path), "--check"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "check: 1 of 1 object(s) match the daemon's"
    assert lines[1].startswith("check: 1 more object(s) made but not compared (without values: a lazy module "
                               "before its first forward") and lines[1].endswith(": m2"), lines


def test_a_lazy_module_sliced_for_alone_is_written_and_compares_nothing_it_cannot(tmp_path):
    registry, entries, _ = _session(tmp_path)
    text, _ = python.script(entries, registry, target=entries[1].outputs[0])
    compile(text, "s.py", "exec")
    assert "torch.randn" not in text and "_expected = {\n}" in text


def test_a_held_meta_tensor_is_left_out_of_the_checks_not_the_failure_of_the_script(tmp_path):
    registry, entries, _ = _session(tmp_path)
    meta = registry.put(torch.zeros(3, device="meta"))
    entries.append(Entry(0, "zeros", {"size": [3]}, [meta], made={"call": ([[3]], {"device": ("device", "meta")})}))
    text, _ = python.script(entries, registry)
    assert "t3 = torch.zeros([3], device=torch.device('meta'))" in text, text
    assert re.search(r'_not_compared = \[\s*"t3",\s*"m2",\s*\]', text), text


def test_a_script_that_compares_nothing_fails_its_check_saying_so(tmp_path):
    """Objects freed before the script was written have no sha256 to compare: its check fails, not passes."""
    _, entries, _ = _session(tmp_path)
    path = tmp_path / "s.py"
    path.write_text(python.script(entries, Registry())[0])
    p = subprocess.run([sys.executable, "-I", str(path), "--check"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and p.stdout.startswith("check: 0 of 0 object(s) match")
    assert p.stderr == "check: nothing to compare: the daemon held none of the objects this script makes when " \
                       "it was written\n"
