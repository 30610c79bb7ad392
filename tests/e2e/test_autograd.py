"""Autograd across separate `torch` commands, checked against in-process PyTorch."""
import torch


def _leaf(sh, values, dtype=torch.float32):
    return sh.put(torch.tensor(values, dtype=dtype), requires_grad=True)


def test_backward_reads_the_loss_from_stdin(sh):
    w = _leaf(sh, [1.0, -2.0, 3.0])
    out = sh("torch mul %s %s | torch sum | torch backward; torch grad %s | torch value" % (w, w, w))
    assert out == "[2.0,-4.0,6.0]"


def test_grad_accumulates_across_backward_calls(sh):
    w = _leaf(sh, [0.5, 1.5])
    for _ in range(3):
        sh("loss=$(torch mul %s %s | torch sum); torch backward $loss" % (w, w))
    ref = torch.tensor([0.5, 1.5], requires_grad=True)
    for _ in range(3):
        (ref * ref).sum().backward()
    assert torch.equal(sh.fetch(sh("torch grad %s" % w)), ref.grad)


def test_grad_is_a_snapshot_later_backwards_do_not_change(sh):
    w = _leaf(sh, [1.0, 2.0])
    snap = sh("torch mul %s %s | torch sum | torch backward; torch grad %s" % (w, w, w))
    sh("torch mul %s %s | torch sum | torch backward" % (w, w))
    assert sh("torch value %s" % snap) == "[2.0,4.0]"
    assert sh("torch grad %s | torch value" % w) == "[4.0,8.0]"


def test_zero_grad_makes_grad_read_as_zeros(sh):
    w = _leaf(sh, [1.0, 2.0])
    out = sh("torch mul %s %s | torch sum | torch backward; torch zero_grad %s; torch grad %s | torch value"
             % (w, w, w, w))
    assert out == "[0.0,0.0]"


def test_zero_grad_set_to_none_removes_the_gradient(sh):
    w = _leaf(sh, [1.0])
    sh("torch sum %s | torch backward; torch zero_grad %s --set_to_none" % (w, w))
    r = sh.run("torch grad %s" % w)
    assert r.code == 4 and "no gradient yet" in r.err


def test_zero_grad_takes_several_handles_from_stdin(sh):
    a, b = _leaf(sh, [1.0]), _leaf(sh, [2.0])
    sh("torch mul %s %s | torch sum | torch backward; printf '%%s\\n' %s %s | torch zero_grad" % (a, b, a, b))
    assert sh("torch grad %s | torch value; torch grad %s | torch value" % (a, b)) == "[0.0]\n[0.0]"


def test_zero_grad_refuses_a_scheduler_or_unknown_handle_before_changing_anything(sh):
    w = _leaf(sh, [3.0])
    sh("torch sum %s | torch backward" % w)
    r = sh.run("torch zero_grad %s tensor://zzz00001" % w)
    assert r.code == 3
    assert sh("torch grad %s | torch value" % w) == "[1.0]"


def test_backward_of_a_non_scalar_says_reduce_first(sh):
    w = _leaf(sh, [1.0, 2.0, 3.0])
    r = sh.run("torch mul %s %s | torch backward" % (w, w))
    assert r.code == 4
    assert "backward needs a scalar loss, got shape [3] — reduce first with sum or mean" in r.err
    assert "[autograd_error]" in r.err


def test_backward_with_gradient_accepts_a_non_scalar(sh):
    w = _leaf(sh, [1.0, 2.0, 3.0])
    g = sh("torch tensor '[1.0, 0.0, -1.0]'")
    out = sh("y=$(torch mul %s %s); torch backward $y --gradient %s; torch grad %s | torch value" % (w, w, g, w))
    assert out == "[2.0,0.0,-6.0]"


def test_second_backward_without_retain_graph_says_how_to_fix(sh):
    w = _leaf(sh, [1.0, 2.0])
    r = sh.run("loss=$(torch mul %s %s | torch sum); torch backward $loss; torch backward $loss" % (w, w))
    assert r.code == 4
    assert "rebuild the graph" in r.err and "--retain_graph" in r.err and "[autograd_error]" in r.err


def test_retain_graph_allows_a_second_backward(sh):
    w = _leaf(sh, [1.0, 2.0])
    out = sh("loss=$(torch mul %s %s | torch sum); torch backward $loss --retain_graph; torch backward $loss; "
             "torch grad %s | torch value" % (w, w, w))
    assert out == "[4.0,8.0]"


def test_backward_of_a_tensor_without_graph_is_an_error(sh):
    x = sh("torch tensor '[1.0, 2.0]'")
    r = sh.run("torch sum %s | torch backward" % x)
    assert r.code == 4 and "does not require grad" in r.err


def test_grad_before_backward_is_an_error_not_zeros(sh):
    w = _leaf(sh, [1.0])
    r = sh.run("torch grad %s" % w)
    assert r.code == 4
    assert "no gradient yet: run backward first" in r.err
    assert r.out == ""


def test_grad_of_a_non_leaf_explains_retain_grad(sh):
    w = _leaf(sh, [1.0, 2.0])
    r = sh.run("y=$(torch mul %s %s); torch sum $y | torch backward; torch grad $y" % (w, w))
    assert r.code == 4 and "not a leaf" in r.err and "retain_grad" in r.err


def test_retain_grad_keeps_a_non_leaf_gradient(sh):
    w = _leaf(sh, [1.0, 2.0])
    out = sh("y=$(torch mul %s 3); torch retain_grad $y; torch mul $y $y | torch sum | torch backward; "
             "torch grad $y | torch value" % w)
    assert out == "[6.0,12.0]"


def test_detach_shares_storage_with_the_original(sh):
    import json
    w = _leaf(sh, [1.0, 2.0, 3.0])
    before = json.loads(sh("torch daemon status --json"))["bytes_held"]
    d = sh("torch detach %s" % w)
    after = json.loads(sh("torch daemon status --json"))["bytes_held"]
    assert after == before  # bytes_held counts each storage once: the detached tensor adds none
    assert sh("torch requires_grad %s; torch is_leaf %s; torch value %s" % (d, d, d)).split() == \
        ["false", "true", "[1.0,2.0,3.0]"]
    assert sh("torch grad_fn %s" % d) == ""


def test_detach_then_clone_gives_an_independent_copy(sh):
    import json
    w = _leaf(sh, [1.0, 2.0, 3.0])
    before = json.loads(sh("torch daemon status --json"))["bytes_held"]
    c = sh("torch detach %s | torch clone" % w)
    after = json.loads(sh("torch daemon status --json"))["bytes_held"]
    assert after - before == 12
    assert sh("torch requires_grad %s" % c) == "false"


def test_requires_grad_false_freezes_a_leaf(sh):
    w = _leaf(sh, [1.0, 2.0])
    b = _leaf(sh, [3.0, 4.0])
    sh("torch requires_grad %s false" % w)
    assert sh("torch requires_grad %s" % w) == "false"
    sh("torch mul %s %s | torch sum | torch backward" % (w, b))
    r = sh.run("torch grad %s" % w)
    assert r.code == 4 and "does not require grad" in r.err  # its gradient stays empty
    assert sh("torch grad %s | torch value" % b) == "[1.0,2.0]"
    sh("torch requires_grad %s true" % w)
    sh("torch mul %s %s | torch sum | torch backward" % (w, b))
    assert sh("torch grad %s | torch value" % w) == "[3.0,4.0]"


def test_requires_grad_on_integer_and_bool_tensors_is_refused(sh):
    for literal, dtype in (("'[1,2]'", "int64"), ("'[true,false]'", "bool")):
        h = sh("torch tensor %s" % literal)
        r = sh.run("torch requires_grad %s true" % h)
        assert r.code == 4
        assert "only floating point and complex tensors can require gradients" in r.err and dtype in r.err
        assert sh("torch requires_grad %s" % h) == "false"


def test_requires_grad_false_on_a_computed_tensor_suggests_detach(sh):
    w = _leaf(sh, [1.0])
    r = sh.run("y=$(torch mul %s 2); torch requires_grad $y false" % w)
    assert r.code == 4 and "detach" in r.err


def test_is_leaf_and_grad_fn_name_the_graph(sh):
    w = _leaf(sh, [1.0, 2.0])
    out = sh("y=$(torch mul %s %s); torch is_leaf %s; torch is_leaf $y; torch grad_fn $y; "
             "torch sum $y | torch grad_fn; torch grad_fn %s" % (w, w, w, w))
    assert out.split("\n") == ["true", "false", "MulBackward0", "SumBackward0"]


def test_freeing_an_intermediate_handle_keeps_the_graph_working(sh):
    w = _leaf(sh, [1.0, 2.0, 3.0])
    out = sh("y=$(torch exp %s); loss=$(torch sum $y); torch free $y; torch backward $loss; "
             "torch grad %s" % (w, w))
    ref = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    ref.exp().sum().backward()
    assert torch.equal(sh.fetch(out), ref.grad)


def test_daemon_status_counts_graph_memory_beyond_the_registry(fresh_sh):
    import json
    sh = fresh_sh()
    n = 16 << 20  # 64 MiB of float32: above glibc's mmap threshold, so freeing it returns it to the OS
    w = sh("torch ones '[%d]' --requires_grad" % n)
    loss = sh("y=$(torch exp %s); loss=$(torch sum $y); torch free $y; echo $loss" % w)
    with_graph = json.loads(sh("torch daemon status --json"))
    assert with_graph["bytes_held"] == 4 * n + 4  # the registry: w and the loss, not exp's saved result
    sh("torch free %s" % loss)  # the last reference to the graph, and so to exp(w)
    without = json.loads(sh("torch daemon status --json"))
    assert without["bytes_held"] == 4 * n
    assert with_graph["rss_bytes"] - without["rss_bytes"] > 3 * n  # rss did count the graph's 4n bytes


def test_autograd_grad_gives_gradients_for_several_inputs(sh):
    a, b = _leaf(sh, [1.0, 2.0]), _leaf(sh, [3.0, 4.0])
    out = sh("torch mul %s %s | torch sum | torch autograd_grad --inputs %s %s" % (a, b, a, b)).split()
    assert [sh("torch value %s" % h) for h in out] == ["[3.0,4.0]", "[1.0,2.0]"]
    r = sh.run("torch grad %s" % a)  # torch.autograd.grad leaves .grad alone
    assert "no gradient yet" in r.err


def test_autograd_grad_unused_input_says_materialize_grads(sh):
    a, b = _leaf(sh, [1.0]), _leaf(sh, [2.0])
    r = sh.run("torch mul %s %s | torch sum | torch autograd_grad --inputs %s %s" % (a, a, a, b))
    assert r.code == 4 and "--materialize_grads" in r.err
    out = sh("torch mul %s %s | torch sum | torch autograd_grad --inputs %s %s --materialize_grads" % (a, a, a, b))
    assert [sh("torch value %s" % h) for h in out.split()] == ["[2.0]", "[0.0]"]


def test_second_order_gradient_equals_in_process(sh):
    x0 = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64)
    x = sh.put(x0, requires_grad=True)
    g = sh("torch sin %s | torch mul %s | torch sum | torch autograd_grad --inputs %s --create_graph" % (x, x, x))
    gg = sh("torch sum %s | torch autograd_grad --inputs %s" % (g, x))
    ref = x0.clone().requires_grad_()
    (rg,) = torch.autograd.grad((ref.sin() * ref).sum(), ref, create_graph=True)
    (rgg,) = torch.autograd.grad(rg.sum(), ref)
    assert torch.equal(sh.fetch(g), rg.detach())
    assert torch.equal(sh.fetch(gg), rgg)


def test_backward_create_graph_then_backward_of_the_grad(sh):
    x0 = torch.tensor([0.5, 1.5, -2.0], dtype=torch.float64)
    x = sh.put(x0, requires_grad=True)
    y = sh.put(x0 * 2, requires_grad=True)
    sh("torch pow %s 3 | torch mul %s | torch sum | torch backward --create_graph" % (x, y))
    gx = sh("torch grad %s" % x)  # 3 x^2 y, still differentiable
    sh("torch zero_grad %s %s --set_to_none; torch sum %s | torch backward" % (x, y, gx))
    rx, ry = x0.clone().requires_grad_(), (x0 * 2).requires_grad_()
    (rx.pow(3) * ry).sum().backward(create_graph=True)
    rgx = rx.grad
    rx.grad, ry.grad = None, None
    rgx.sum().backward()
    assert torch.equal(sh.fetch(sh("torch grad %s" % x)), rx.grad)
    assert torch.equal(sh.fetch(sh("torch grad %s" % y)), ry.grad)


def test_third_order_gradient_equals_in_process(sh):
    x0 = torch.tensor([0.7, -0.4], dtype=torch.float64)
    x = sh.put(x0, requires_grad=True)
    h = sh("g1=$(torch tanh %s | torch sum | torch autograd_grad --inputs %s --create_graph); "
           "g2=$(torch sum $g1 | torch autograd_grad --inputs %s --create_graph); "
           "torch sum $g2 | torch autograd_grad --inputs %s" % (x, x, x, x))
    r = x0.clone().requires_grad_()
    (g1,) = torch.autograd.grad(r.tanh().sum(), r, create_graph=True)
    (g2,) = torch.autograd.grad(g1.sum(), r, create_graph=True)
    (g3,) = torch.autograd.grad(g2.sum(), r)
    assert torch.equal(sh.fetch(h), g3)
