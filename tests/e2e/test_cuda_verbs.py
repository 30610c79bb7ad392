"""`torch cuda available|device_count|synchronize|manual_seed|memory`. A CPU build answers honestly
(false, 0, device_error for what needs a device); the CUDA answers run where CUDA is (skipped without);
`torch cuda TENSOR` (Tensor.cuda) is still the group word's own op."""
import json

import pytest
import torch

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs CUDA")
cpu_only = pytest.mark.skipif(CUDA, reason="the answers of a machine without CUDA")


@cpu_only
def test_a_cpu_build_says_no_cuda_and_no_devices(sh):
    assert sh("torch cuda available") == "false"
    assert sh("torch cuda device_count") == "0"


@cpu_only
@pytest.mark.parametrize("words", ["synchronize", "memory", "memory --device cuda:0"])
def test_what_needs_a_device_is_device_error_on_a_cpu_build(sh, words):
    r = sh.run("torch cuda %s" % words)
    assert r.code == 4 and r.out == "" and r.err.count("\n") == 1 and "[device_error]" in r.err
    assert "no CUDA device" in r.err or "CPU-only" in r.err


@cpu_only
def test_cuda_manual_seed_is_accepted_and_leaves_the_cpu_generator_alone(sh):
    got = sh.fetch(sh("torch manual_seed 5 && torch cuda manual_seed 9 && torch randn 3"))
    torch.manual_seed(5)
    assert torch.equal(got, torch.randn(3))


def test_a_device_that_is_not_cuda_is_bad_argument(sh):
    r = sh.run("torch cuda synchronize --device cpu")
    assert r.code == 2 and "[bad_argument]" in r.err


@cpu_only
def test_torch_cuda_of_a_tensor_is_still_tensor_cuda(sh):
    r = sh.run("torch cuda $(torch ones 2)")
    assert r.code == 4 and "[device_error]" in r.err and "usage: torch cuda TENSOR" in r.err


def test_the_group_help_lists_the_commands_and_the_tensor_form(sh):
    out = sh("torch cuda --help")
    assert "torch cuda TENSOR" in out
    for word in ("available", "device_count", "synchronize", "manual_seed", "memory"):
        assert "\n  %s " % word in out


@needs_cuda
def test_on_cuda_the_answers_are_pytorchs(sh):
    assert sh("torch cuda available") == "true"
    assert sh("torch cuda device_count") == str(torch.cuda.device_count())
    sh("torch cuda synchronize")
    mem = json.loads(sh("t=$(torch ones 1024 1024 --device cuda) && torch cuda memory"))
    assert set(mem) == {"device", "allocated", "max_allocated", "reserved", "max_reserved", "free", "total"}
    assert mem["allocated"] >= 4 * 1024 * 1024 and 0 < mem["free"] <= mem["total"]


@needs_cuda
def test_cuda_manual_seed_then_a_cuda_draw_equals_pytorchs(sh):
    got = sh.fetch(sh("torch cuda manual_seed 4 && torch randn 5 --device cuda"))
    torch.cuda.manual_seed(4)
    assert torch.equal(got.cpu(), torch.randn(5, device="cuda").cpu())
