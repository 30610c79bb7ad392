"""Fuzzing every size a user can type into a module: each torch.nn layer row of the op table, built with one of
its size arguments (an int, or an int-or-tuple) blown up to 1e9..1e12 and the others small, through three
faces: `torch nn KIND --ARG N …` and `torch nn sequential 'KIND --ARG N …'` (POST /v1/cli) and POST
/v1/ops/nn.KIND. Against a daemon in a 3 GiB memory cgroup with a 1 GiB budget: the daemon never dies (the
cgroup's OOM killer counts a miss), never hangs (60 s a request), never answers internal_error, and the objects
made first survive bit for bit. A refusal is out_of_memory, or PyTorch's own refusal of the values.

The cases are generated from the daemon's table (GET /v1/ops?category=nn), the huge values drawn with
TORCHSH_FUZZ_SEED (default 35). The counts by face and code are printed (pytest -s).
"""
import json
import os
import random

import pytest
import torch

from support.cgroups import daemon_in_cgroup, oom_kills, peak_bytes
from unixhttp import Daemon

pytestmark = pytest.mark.slow  # ~1,150 requests (the tier rule: tests/conftest.py)

GiB = 1 << 30
HUGE = (10 ** 9, 10 ** 10, 10 ** 11, 10 ** 12)
SEED = int(os.environ.get("TORCHSH_FUZZ_SEED", "35"))
SMALL = {"int": 4, "json": 2, "int_list": 2, "float": 0.5}  # a required argument's value when it is not the one blown up
REFUSALS = {"out_of_memory", "bad_argument", "torch_error", "shape_mismatch", "usage", "missing_argument"}
# rows whose required arguments alone make no layer PyTorch builds (an output size or a ratio, a tuple)
NO_SMALL_BUILD = {"fractional_max_pool2d", "fractional_max_pool3d", "unflatten"}


def layer_rows(d):
    """The op table's rows that build a torch.nn layer class."""
    rows = json.loads(d.request("GET", "/v1/ops?category=nn")[2])["ops"]
    return [r for r in rows if r["overloads"] and r["overloads"][0]["returns"] == "Module"
            and any(isinstance(getattr(torch.nn, a, None), type) and issubclass(getattr(torch.nn, a), torch.nn.Module)
                    for a in r["aliases"])]


def is_size(arg):
    return arg["kind"] in ("int", "int_list") or (arg["kind"] == "json" and "int" in arg["type"].split(" | ")[0:3])


def cases(rows, rng):
    """([(layer word, {arg: value})]: one a size argument of each layer, blown up, the others small;
    [(layer word, {arg: small value})]: each layer's controls, which build; the rows left out: a required
    argument no number can give (a tensor, a module, a string))."""
    out, controls, left_out = [], [], []
    for row in rows:
        args = row["overloads"][0]["args"]
        required = {a["name"]: SMALL.get(a["kind"]) for a in args if a["required"]}
        if None in required.values():
            left_out.append(row["name"])
            continue
        controls.append((row["name"][3:], required))
        for arg in args:
            if is_size(arg):
                out.append((row["name"][3:], dict(required, **{arg["name"]: rng.choice(HUGE)})))
    return out, controls, left_out


def peak_rss(pid):
    """The daemon's peak resident set (VmHWM), in bytes."""
    with open("/proc/%d/status" % pid) as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))


def flags(values):
    return [w for name, value in values.items() for w in ("--" + name, str(value))]


def run_case(d, word, values):
    """The three faces of one case: {face: code}."""
    api = d.call("POST", "/v1/ops/nn." + word, json.dumps({"kwargs": values}).encode())[0]
    direct = d.cli(["nn", word] + flags(values))[0]
    nested = d.cli(["nn", "sequential", " ".join([word] + flags(values))])[0]
    return {"api": api, "cli": direct, "sequential": nested}


@pytest.fixture(scope="module")
def fuzzed():
    with daemon_in_cgroup(3 * GiB, TORCHSH_MAX_MEMORY="1G") as (s, cgroup):
        d = Daemon(s.socket, s.folder)
        t, m = s("torch randn '[1000]'"), s("torch nn linear 4 2")
        o = s("torch optim adam %s" % m)
        kept = [t, m, o]
        before = (s.fetch(t), s("torch forward %s $(torch ones 1 4) | torch value" % m), d.status()["pid"])
        all_cases, controls, left_out = cases(layer_rows(d), random.Random(SEED))
        seen, controlled = [], [(word, values, run_case(d, word, values)) for word, values in controls]
        d.sweep(kept)
        for i, (word, values) in enumerate(all_cases):
            seen.append((word, values, run_case(d, word, values)))
            if i % 20 == 19:
                d.sweep(kept)  # layers that were built (a huge stride is no memory) leave the budget's room
        after = (s.fetch(t), s("torch forward %s $(torch ones 1 4) | torch value" % m), d.status())
        figures = {"cases": len(all_cases), "layers": len({w for w, _, _ in seen}), "controls": len(controls),
                   "left_out": left_out,
                   "requests": d.counts["requests"], "by_face_and_code": d.summary()["by_face_and_code"],
                   "daemon_rss_mib": after[2]["rss_bytes"] >> 20, "daemon_peak_rss_mib": peak_rss(after[2]["pid"]) >> 20,
                   "cgroup_peak_mib": (peak_bytes(cgroup) or 0) >> 20,
                   "oom_kills": oom_kills(cgroup), "refused_by_budget": after[2]["memory_refused"]}
        print("\nhuge sizes fuzz: " + json.dumps(figures, indent=1))
        yield seen, before, after, figures, d, controlled


def test_no_huge_size_kills_the_daemon_and_every_object_made_first_survives(fuzzed):
    seen, before, after, figures, d, _ = fuzzed
    assert figures["oom_kills"] == 0 and after[2]["pid"] == before[2]
    assert torch.equal(after[0], before[0]) and after[1] == before[1]
    assert figures["cases"] >= 200 and not d.hangs


def test_every_huge_size_is_built_or_refused_as_out_of_memory_or_pytorchs_refusal(fuzzed):
    seen, _, _, figures, d, _ = fuzzed
    odd = [(word, values, codes) for word, values, codes in seen if set(codes.values()) - REFUSALS - {"ok"}]
    assert not odd and not d.internal, (odd[:10], d.internal[:3])
    assert figures["by_face_and_code"].get("cli:out_of_memory", 0) >= 50  # the budget, not luck, kept it alive


def test_every_layer_with_small_sizes_still_builds_on_every_face(fuzzed):
    """The controls: sizing a layer before building it refuses no layer that fits (a lazy one, say)."""
    controlled = fuzzed[5]
    failed = [(word, codes) for word, values, codes in controlled
              if word not in NO_SMALL_BUILD and set(codes.values()) != {"ok"}]
    assert not failed and len(controlled) >= 100, failed
