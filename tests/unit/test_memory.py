"""The memory budget in-process: sizes, the default rule, cgroup limits, and admission of real table rows."""
import pytest
import torch

from torchsh import memory
from torchsh.memory import sizes
from torchsh.errors import TorchshError
from torchsh.table import build_table

MiB, GiB = 1 << 20, 1 << 30


@pytest.fixture(scope="module")
def table():
    return build_table()[0]


def overload(op, name=None):
    return next(ov for ov in op.overloads if name is None or ov.name == name)


def budget_with_room(room):
    """A budget that leaves `room` bytes over what this process holds now."""
    return memory.Budget(memory.rss_bytes() + room, "test")


# -- settings ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, size", [("512M", 512 * MiB), ("2G", 2 * GiB), ("2GiB", 2 * GiB), ("2gb", 2 * GiB),
                                        ("1.5g", 3 * GiB // 2), ("1048576", MiB), ("64k", 64 << 10),
                                        ("50%", 500), ("none", None), ("None", None)])
def test_sizes_read_like_docker_and_systemd(text, size):
    assert memory.parse_size(text, total=1000) == size


@pytest.mark.parametrize("text", ["", "abc", "12X", "0", "0G", "-1G", "150%", "0%", "G", "2 GiBs"])
def test_a_bad_size_is_refused_with_the_forms_it_takes(text):
    with pytest.raises(ValueError, match="memory budget"):
        memory.parse_size(text, total=1000)


def test_the_default_budget_is_half_of_ram_or_of_the_cgroup_limit():
    total, words = memory.machine_memory()
    b = memory.Budget.from_setting(None)
    assert b.limit == total // 2
    assert "50%" in b.rule and words in b.rule and "default" in b.rule
    assert total <= memory.physical_memory()


def test_a_bad_environment_value_falls_back_to_the_default_budget():
    assert memory.Budget.from_env({"TORCHSH_MAX_MEMORY": "lots"}).limit == memory.Budget.from_setting(None).limit
    assert memory.Budget.from_env({"TORCHSH_MAX_MEMORY": "none"}).limit is None
    assert memory.Budget.from_env({"TORCHSH_MAX_MEMORY": "300M"}).limit == 300 * MiB


# -- cgroup limits ---------------------------------------------------------------------------------
def _fake_cgroups(tmp_path, proc_lines, mount_lines):
    proc = tmp_path / "cgroup"
    proc.write_text("\n".join(proc_lines) + "\n")
    info = tmp_path / "mountinfo"
    info.write_text("\n".join(mount_lines) + "\n")
    return str(proc), str(info)


def test_cgroup_v1_limit_is_the_tightest_over_the_ancestors(tmp_path):
    root = tmp_path / "memory"
    (root / "outer" / "inner").mkdir(parents=True)
    (root / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    (root / "outer" / "memory.limit_in_bytes").write_text("%d\n" % (2 * GiB))
    (root / "outer" / "inner" / "memory.limit_in_bytes").write_text("%d\n" % (3 * GiB))
    proc, info = _fake_cgroups(tmp_path, ["5:cpu:/", "4:memory:/outer/inner", "0::/"],
                               ["35 31 0:32 / %s rw,relatime - cgroup cgroup rw,memory" % root])
    assert memory.cgroup_limit(proc, info) == 2 * GiB


def test_cgroup_v2_memory_max_is_read_and_max_means_no_limit(tmp_path):
    root = tmp_path / "unified"
    (root / "user.slice" / "app").mkdir(parents=True)
    (root / "user.slice" / "memory.max").write_text("max\n")
    (root / "user.slice" / "app" / "memory.max").write_text("%d\n" % (512 * MiB))
    proc, info = _fake_cgroups(tmp_path, ["0::/user.slice/app"],
                               ["41 31 0:38 / %s rw,relatime - cgroup2 cgroup2 rw" % root])
    assert memory.cgroup_limit(proc, info) == 512 * MiB
    (root / "user.slice" / "app" / "memory.max").write_text("max\n")
    assert memory.cgroup_limit(proc, info) is None


def test_no_cgroup_files_means_no_cgroup_limit(tmp_path):
    assert memory.cgroup_limit(str(tmp_path / "missing"), str(tmp_path / "missing2")) is None


# -- admission ---------------------------------------------------------------------------------------
def test_a_factory_over_the_budget_is_refused_naming_size_budget_and_the_way_out(table):
    b = budget_with_room(100 * MiB)
    for name in ("zeros", "empty", "ones", "rand"):
        op = table.ops[name]
        with pytest.raises(TorchshError) as e:
            b.admit(op, overload(op), [[30000, 30000]], {})
        err = e.value
        assert err.code == "out_of_memory"
        assert "3.4 GiB" in err.message and memory.human(b.limit) in err.message
        assert "torch tensors" in err.hint and "torch free" in err.hint and "TORCHSH_MAX_MEMORY" in err.hint
    b.admit(table.ops["zeros"], overload(table.ops["zeros"]), [[1000, 1000]], {})  # 4 MB fits


def test_small_inputs_with_a_big_output_are_refused(table):
    b = budget_with_room(100 * MiB)
    x = torch.randn(20000)
    cases = [("outer", None, [x, x], {}), ("repeat", None, [torch.randn(3), [10000, 10000]], {}),
             ("add", "Tensor", [x.reshape(-1, 1), x.reshape(1, -1)], {}),
             ("combinations", None, [torch.randn(3000)], {"r": 3}),
             ("bincount", None, [torch.tensor([10 ** 9])], {}),
             ("arange", None, [0, 1, 1e-9], {})]
    for name, ov_name, args, kwargs in cases:
        op = table.ops[name]
        with pytest.raises(TorchshError, match="would exceed the memory budget"):
            b.admit(op, overload(op, ov_name), args, kwargs)


def test_views_allocate_nothing_and_are_admitted(table):
    b = budget_with_room(10 * MiB)
    small = torch.randn(3)
    b.admit(table.ops["expand"], overload(table.ops["expand"]), [small, [100000, 100000, 3]], {})
    big_view = small.expand(100000, 100000, 3)
    b.admit(table.ops["reshape"], overload(table.ops["reshape"]), [big_view, [100000, 100000, 1, 3]], {})  # a view
    with pytest.raises(TorchshError, match="111.8 GiB"):  # flattening it copies
        b.admit(table.ops["reshape"], overload(table.ops["reshape"]), [big_view, [-1]], {})


def test_small_everyday_ops_pass_without_running_meta(table, monkeypatch):
    def no_meta(*a):
        raise AssertionError("meta run for a small op")
    monkeypatch.setattr(sizes, "exact_bytes", no_meta)
    b = budget_with_room(100 * MiB)
    a, m = torch.randn(3), torch.randn(3, 3)
    for name, ov_name, args in [("add", "Tensor", [a, a]), ("sum", None, [a]), ("matmul", None, [m, m]),
                                ("zeros", None, [[3]]), ("reshape", None, [a, [3, 1]]), ("cat", None, [[a, a]])]:
        op = table.ops[name]
        b.admit(op, overload(op, ov_name), args, {})


def test_small_ops_skip_reading_rss_only_while_what_they_add_unseen_stays_bounded(table, monkeypatch):
    from torchsh.memory import budget as budget_module
    readings = []
    monkeypatch.setattr(budget_module, "rss_bytes", lambda: readings.append(1) or 100 * MiB)
    b = memory.Budget(200 * MiB, "test")
    op, a = table.ops["add"], torch.randn(1024)  # 4 KiB outputs
    ov = overload(op, "Tensor")
    each = int(sizes.bound(op, ov, [a, a], {})[0])  # what the budget counts for one (an upper bound)
    per_reading = memory.budget.SMALL_UNSEEN // each  # ops admitted on one reading's headroom
    for _ in range(per_reading):
        b.admit(op, ov, [a, a], {})
    assert len(readings) == 1  # one reading left SMALL_UNSEEN of headroom, and these fit in it
    for _ in range(per_reading):
        b.admit(op, ov, [a, a], {})
    assert len(readings) == 2  # past SMALL_UNSEEN bytes unseen, RSS is read again
    b.admit_verb(table.ops["value"], None, {})  # a verb may allocate anything: the next op reads RSS
    b.admit(op, ov, [a, a], {})
    assert len(readings) >= 3


def test_an_unlimited_budget_admits_anything(table):
    b = memory.Budget(None, "none")
    b.admit(table.ops["zeros"], overload(table.ops["zeros"]), [[10 ** 6, 10 ** 6]], {})


# -- allocation failures -----------------------------------------------------------------------------
def test_the_cpu_allocators_error_becomes_out_of_memory_with_its_size():
    e = RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: "
                     "you tried to allocate 3600000000 bytes. Error code 12 (Cannot allocate memory)")
    err = memory.allocation_failure(e)
    assert err.code == "out_of_memory" and "3.4 GiB" in err.message and "torch free" in err.hint


def test_memory_error_and_cuda_oom_become_out_of_memory():
    assert memory.allocation_failure(MemoryError()).code == "out_of_memory"
    cuda = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 15.78 GiB total)")
    err = memory.allocation_failure(cuda)
    assert err.code == "out_of_memory" and "20.00 GiB" in err.message


def test_other_runtime_errors_are_not_memory_errors():
    assert memory.allocation_failure(RuntimeError("The size of tensor a (3) must match the size of tensor b")) is None
    assert memory.allocation_failure(ValueError("can't allocate memory")) is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_output_bigger_than_the_device_is_refused(table):
    b = memory.Budget(None, "none")
    free, total = torch.cuda.mem_get_info()
    op = table.ops["zeros"]
    with pytest.raises(TorchshError, match="does not fit in cuda"):
        b.admit(op, overload(op), [[total // 2 + 1, 4]], {"device": torch.device("cuda")})
    b.admit(op, overload(op), [[1000, 1000]], {"device": torch.device("cuda")})


def test_the_text_of_a_huge_value_is_refused_before_it_is_built(table):
    from torchsh.context import Context
    b = budget_with_room(100 * MiB)
    op, ctx = table.ops["value"], Context(app=None)
    with pytest.raises(TorchshError, match="would exceed the memory budget"):
        b.admit_verb(op, ctx, {"input": torch.randn(3).expand(10000, 10000, 3)})
    b.admit_verb(op, ctx, {"input": torch.randn(1000)})
