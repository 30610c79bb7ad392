"""No-grad in its three forms (flag, TORCHSH_NO_GRAD, block), inference mode, nesting and restoration."""
import pytest

REC = "torch mul $w $w | torch requires_grad"  # prints whether the op recorded a graph


@pytest.fixture
def w(sh):
    return sh("torch tensor '[1.0, 2.0]' --requires_grad")


def grad_modes(sh, w, script, **kw):
    """Run script with $w set; return the true/false lines it printed."""
    return sh("export w=%s\n%s" % (w, script), **kw).split()


def test_ops_record_a_graph_by_default(sh, w):
    assert grad_modes(sh, w, REC) == ["true"]


def test_no_grad_flag_builds_no_graph(sh, w):
    out = grad_modes(sh, w, "y=$(torch mul $w $w --no_grad); torch requires_grad $y; torch is_leaf $y; "
                            "torch grad_fn $y; " + REC)
    assert out == ["false", "true", "true"]


def test_no_grad_environment_variable_builds_no_graph(sh, w):
    assert grad_modes(sh, w, "TORCHSH_NO_GRAD=1 " + REC.replace("| ", "| TORCHSH_NO_GRAD=1 ")) == ["false"]
    assert grad_modes(sh, w, REC, env={"TORCHSH_NO_GRAD": "1"}) == ["false"]


def test_exported_no_grad_is_scoped_by_a_subshell(sh, w):
    assert grad_modes(sh, w, "(export TORCHSH_NO_GRAD=1; %s); %s" % (REC, REC)) == ["false", "true"]


def test_no_grad_block_applies_to_every_torch_call_inside(sh, w):
    out = grad_modes(sh, w, "torch no_grad -- bash -c '%s; %s'; %s" % (REC, REC, REC))
    assert out == ["false", "false", "true"]


def test_no_grad_block_runs_a_torch_command_directly(sh, w):
    assert grad_modes(sh, w, "y=$(torch no_grad -- torch mul $w $w); torch requires_grad $y") == ["false"]


def test_no_grad_block_restores_after_a_failing_command(sh, w):
    r = sh.run("export w=%s; torch no_grad -- bash -c '%s; exit 3'" % (w, REC))
    assert r.code == 3 and r.out.split() == ["false"]
    assert grad_modes(sh, w, REC) == ["true"]


def test_no_grad_block_restores_after_a_failing_torch_call(sh, w):
    r = sh.run("export w=%s; torch no_grad -- torch mul $w nonsense" % w)
    assert r.code == 2
    assert grad_modes(sh, w, REC) == ["true"]


def test_failing_ops_under_the_flag_leave_the_daemon_recording(sh, w):
    # the daemon serves from a pool of threads and grad mode is per thread: fail on many, then check many
    for _ in range(3):
        r = sh.run("export w=%s; for i in 1 2 3 4 5 6 7 8; do torch mul $w '[1.0, 2.0, 3.0]' --no_grad; done" % w)
        assert r.code != 0 and r.err.count("[shape_mismatch]") == 8
    assert grad_modes(sh, w, "for i in 1 2 3 4 5 6 7 8; do %s; done" % REC) == ["true"] * 8


def test_missing_command_after_the_block_form_is_a_usage_error(sh):
    for form in ("no_grad", "inference_mode", "enable_grad"):
        r = sh.run("torch %s --" % form)
        assert r.code == 2 and "needs a command after --" in r.err


def test_no_grad_blocks_nest(sh, w):
    script = ("torch no_grad -- bash -c '"
              "torch no_grad -- bash -c \"%s\"; %s'; %s") % (REC, REC, REC)
    assert grad_modes(sh, w, script) == ["false", "false", "true"]


def test_enable_grad_inside_no_grad_records_again(sh, w):
    script = "torch no_grad -- bash -c 'torch enable_grad -- bash -c \"%s\"; %s'" % (REC, REC)
    assert grad_modes(sh, w, script) == ["true", "false"]


def test_grad_mode_zero_in_the_environment_reenables_inside_a_block(sh, w):
    script = "torch no_grad -- bash -c 'TORCHSH_NO_GRAD=0 torch mul $w $w | torch requires_grad'"
    assert grad_modes(sh, w, script) == ["true"]


def test_inference_mode_block_and_flag_build_no_graph(sh, w):
    out = grad_modes(sh, w, "torch inference_mode -- bash -c '%s'; torch mul $w $w --inference_mode | "
                            "torch requires_grad; %s" % (REC, REC))
    assert out == ["false", "false", "true"]


def test_inference_tensors_cannot_join_a_graph_later(sh, w):
    r = sh.run("export w=%s; i=$(torch inference_mode -- torch mul $w 2); "
               "torch mul $i $w" % w)
    assert r.code == 4 and "nference tensors" in r.err


def test_backward_of_a_loss_made_under_no_grad_explains_why(sh, w):
    r = sh.run("export w=%s; torch no_grad -- bash -c 'torch mul $w $w | torch sum | torch backward'" % w)
    assert r.code == 4 and "does not require grad" in r.err
