"""Building and running modules from bash: `torch nn KIND`, nn list/help, sequential, forward, predict,
parameters, info, summary, train/eval, to, init. In-process PyTorch is the oracle."""
import json

import pytest
import torch
from safetensors.torch import load_file

nn = torch.nn


def weights(sh, model):
    path = sh.tmp("w.safetensors")
    sh("torch nn save %s %s" % (model, path))
    return load_file(path)


def handles(text):
    return text.split()


# (CLI words, the same module in Python, inputs)
FORWARD_CASES = [
    ("linear 3 4", lambda: nn.Linear(3, 4), [torch.randn(2, 3)]),
    ("Linear 3 4 --bias false", lambda: nn.Linear(3, 4, bias=False), [torch.randn(2, 3)]),
    ("bilinear 3 2 4", lambda: nn.Bilinear(3, 2, 4), [torch.randn(5, 3), torch.randn(5, 2)]),
    ("conv1d 2 3 3", lambda: nn.Conv1d(2, 3, 3), [torch.randn(1, 2, 8)]),
    ("conv2d 2 3 3 --padding same", lambda: nn.Conv2d(2, 3, 3, padding="same"), [torch.randn(1, 2, 5, 5)]),
    ("conv_transpose2d 2 3 3 --stride 2", lambda: nn.ConvTranspose2d(2, 3, 3, stride=2), [torch.randn(1, 2, 4, 4)]),
    ("max_pool2d 2", lambda: nn.MaxPool2d(2), [torch.randn(1, 2, 4, 4)]),
    ("avg_pool2d '[2,2]' --stride 1", lambda: nn.AvgPool2d([2, 2], stride=1), [torch.randn(1, 2, 4, 4)]),
    ("adaptive_avg_pool2d '[2,3]'", lambda: nn.AdaptiveAvgPool2d([2, 3]), [torch.randn(1, 2, 5, 7)]),
    ("batch_norm1d 3", lambda: nn.BatchNorm1d(3), [torch.randn(6, 3)]),
    ("layer_norm 4", lambda: nn.LayerNorm(4), [torch.randn(2, 4)]),
    ("group_norm 2 4", lambda: nn.GroupNorm(2, 4), [torch.randn(3, 4, 5)]),
    ("rms_norm '[4]' --eps 1e-5", lambda: nn.RMSNorm([4], eps=1e-5), [torch.randn(2, 4)]),
    ("embedding 10 3", lambda: nn.Embedding(10, 3), [torch.tensor([[1, 2], [9, 0]])]),
    ("lstm 3 5 --num_layers 2", lambda: nn.LSTM(3, 5, num_layers=2), [torch.randn(4, 2, 3)]),
    ("gru 3 5 --batch_first", lambda: nn.GRU(3, 5, batch_first=True), [torch.randn(2, 4, 3)]),
    ("rnn 3 4 --nonlinearity relu", lambda: nn.RNN(3, 4, nonlinearity="relu"), [torch.randn(4, 2, 3)]),
    ("lstm_cell 3 4", lambda: nn.LSTMCell(3, 4), [torch.randn(2, 3)]),
    ("multihead_attention 4 2 --batch_first true", lambda: nn.MultiheadAttention(4, 2, batch_first=True),
     [torch.randn(2, 3, 4)] * 3),
    ("transformer_encoder_layer 4 2 --dim_feedforward 8 --dropout 0 --batch_first --activation gelu",
     lambda: nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True, activation="gelu"),
     [torch.randn(2, 3, 4)]),
    ("gelu --approximate tanh", lambda: nn.GELU(approximate="tanh"), [torch.randn(7)]),
    ("leaky_relu --negative_slope 0.2", lambda: nn.LeakyReLU(0.2), [torch.randn(7)]),
    ("prelu 3", lambda: nn.PReLU(3), [torch.randn(2, 3)]),
    ("softmax --dim 1", lambda: nn.Softmax(dim=1), [torch.randn(2, 5)]),
    ("log_softmax --dim -1", lambda: nn.LogSoftmax(dim=-1), [torch.randn(2, 5)]),
    ("flatten", lambda: nn.Flatten(), [torch.randn(2, 3, 4)]),
    ("unflatten 1 '[2,2]'", lambda: nn.Unflatten(1, [2, 2]), [torch.randn(3, 4)]),
    ("pixel_shuffle 2", lambda: nn.PixelShuffle(2), [torch.randn(1, 8, 2, 2)]),
    ("upsample --scale_factor 2 --mode nearest", lambda: nn.Upsample(scale_factor=2, mode="nearest"),
     [torch.randn(1, 1, 2, 2)]),
    ("zero_pad2d '[1,0,2,0]'", lambda: nn.ZeroPad2d([1, 0, 2, 0]), [torch.randn(1, 1, 2, 2)]),
    ("sigmoid", lambda: nn.Sigmoid(), [torch.randn(4)]),
    ("cosine_similarity --dim 0", lambda: nn.CosineSimilarity(dim=0), [torch.randn(4), torch.randn(4)]),
]


@pytest.mark.parametrize("words,make,inputs", FORWARD_CASES, ids=[c[0].split()[0] for c in FORWARD_CASES])
def test_forward_equals_in_process_pytorch_with_the_same_weights(sh, words, make, inputs):
    put = {}  # one handle per distinct tensor: MultiheadAttention takes a fused path when query is key is value
    xs = [put.setdefault(id(x), sh.put(x)) for x in inputs]
    m = sh("torch nn %s" % words)
    outs = handles(sh("torch forward %s %s" % (m, " ".join(xs))))
    ref = make()
    ref.load_state_dict(weights(sh, m))
    expect = ref(*inputs)
    expect = [expect] if isinstance(expect, torch.Tensor) else [t for t in _flat(expect)]
    assert len(outs) == len(expect)
    for h, e in zip(outs, expect):
        assert torch.equal(sh.fetch(h), e.detach())


def _flat(x):
    for y in x:
        if isinstance(y, torch.Tensor):
            yield y
        elif isinstance(y, tuple):
            yield from _flat(y)


def test_lstm_forward_prints_output_h_and_c_on_three_lines(sh):
    x = sh.put(torch.randn(4, 1, 3))
    out = sh("m=$(torch nn lstm 3 5); torch forward $m %s | while read h; do torch shape $h; done" % x)
    assert out.split("\n") == ["[4,1,5]", "[1,1,5]", "[1,1,5]"]


def test_unknown_flag_is_an_error_listing_the_valid_ones(sh):
    r = sh.run("torch nn linear 2 3 --bais false")
    assert r.code == 2 and "unknown flag --bais" in r.err and "--bias" in r.err and "--out_features" in r.err


def test_wrong_constructor_values_are_usage_errors(sh):
    r = sh.run("torch nn layer_norm")
    assert r.code == 2 and "normalized_shape" in r.err
    r = sh.run("torch nn multihead_attention 5 2")
    assert r.code == 2 and "MultiheadAttention" in r.err


def test_nn_list_shows_every_layer_kind_with_its_signature(sh):
    rows = json.loads(sh("torch nn list --json"))
    kinds = {r["kind"]: r for r in rows}
    for kind in ("linear", "conv2d", "layer_norm", "lstm", "multihead_attention", "transformer_encoder_layer",
                 "embedding", "dropout", "relu", "gelu", "batch_norm2d", "mse_loss"):
        assert kind in kinds
    assert kinds["linear"]["signature"].startswith("Linear(int in_features, int out_features, bool bias=True")
    assert len(rows) > 120
    assert "conv2d" in sh("torch nn list")


def test_nn_kind_help_shows_the_class_signature(sh):
    out = sh("torch nn conv2d --help")
    assert out.startswith("usage: torch nn conv2d IN_CHANNELS OUT_CHANNELS")
    assert "--kernel_size" in out and "--padding_mode" in out and "aliases: Conv2d" in out


def test_layer_words_do_not_shadow_functional_ops(sh):
    a = sh.put(torch.randn(2, 3))
    w = sh.put(torch.randn(4, 3))
    assert sh("torch linear %s %s | torch shape" % (a, w)) == "[2,4]"


def test_sequential_from_handles_keeps_children_as_live_views(sh):
    x = sh.put(torch.randn(5, 2))
    l1, l2 = sh("torch nn linear 2 3"), sh("torch nn linear 3 1")
    seq = sh("torch nn sequential %s $(torch nn tanh) %s" % (l1, l2))
    sh("torch nn init zeros %s" % l2)  # change through the child's handle ...
    assert sh("torch forward %s %s | torch value" % (seq, x)) == "[[0.0],[0.0],[0.0],[0.0],[0.0]]"  # ... seen here
    w = weights(sh, seq)
    assert set(w) == {"0.weight", "0.bias", "2.weight", "2.bias"}


def test_sequential_reads_module_handles_from_stdin(sh):
    out = sh("{ torch nn linear 2 3; torch nn relu; } | torch nn sequential | torch nn info --json")
    info = json.loads(out)
    assert [c["kind"] for c in info["children"]] == ["Linear", "ReLU"]


def test_sequential_from_inline_specs_equals_python(sh):
    x = torch.randn(4, 2)
    seq = sh("torch manual_seed 3; torch nn sequential 'linear 2 8' relu 'linear 8 2 --bias false'")
    ref = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2, bias=False))
    ref.load_state_dict(weights(sh, seq))
    torch.manual_seed(3)
    same_init = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2, bias=False))
    assert all(torch.equal(a, b) for a, b in zip(ref.state_dict().values(), same_init.state_dict().values()))
    assert torch.equal(sh.fetch(sh("torch forward %s %s" % (seq, sh.put(x)))), ref(x).detach())


def test_sequential_rejects_an_unknown_inline_kind(sh):
    r = sh.run("torch nn sequential 'linear 2 8' 'frobnicate 3'")
    assert r.code == 2


def test_parameters_are_live_views_of_gradients_and_updates(sh):
    x, y = sh.put(torch.randn(3, 2)), sh.put(torch.randn(3, 1))
    m = sh("torch nn linear 2 1")
    w, b = handles(sh("torch nn parameters %s" % m))
    before = sh.fetch(w)
    sh("torch forward %s %s | torch mse_loss %s | torch backward" % (m, x, y))
    assert sh("torch grad %s | torch shape" % w) == "[1,2]"
    sh("o=$(torch optim sgd %s --lr 0.5); torch step $o" % m)
    assert not torch.equal(sh.fetch(w), before)
    assert torch.equal(sh.fetch(w), weights(sh, m)["weight"])


def test_named_parameters_print_names_and_handles(sh):
    m = sh("torch nn sequential 'linear 2 3' 'linear 3 1'")
    names = json.loads(sh("torch nn parameters %s --named --json" % m))
    assert list(names) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    lines = sh("torch nn parameters %s --named" % m).split("\n")
    assert lines[0].startswith("0.weight tensor://")


def test_info_reports_kinds_counts_shapes_and_mode(sh):
    m = sh("torch nn sequential 'linear 10 4' 'batch_norm1d 4'")
    info = json.loads(sh("torch nn info %s --json" % m))
    assert info["kind"] == "Sequential" and info["mode"] == "train"
    assert info["parameters"] == 10 * 4 + 4 + 4 + 4 and info["trainable"] == info["parameters"]
    assert {"name": "1.running_mean", "role": "buffer", "shape": [4], "dtype": "float32",
            "requires_grad": False} in info["tensors"]
    sh("torch nn eval %s; torch requires_grad %s false" % (m, m))
    info = json.loads(sh("torch nn info %s --json" % m))
    assert info["mode"] == "eval" and info["trainable"] == 0


def test_summary_lists_output_shapes_and_restores_the_mode(sh):
    m = sh("torch nn sequential 'linear 10 4' relu 'linear 4 2'")
    out = json.loads(sh("torch nn summary %s --input_shape '[1,10]' --json" % m))
    assert [(r["name"], r["kind"], r["depth"], r["output_shape"], r["parameters"]) for r in out["layers"]] == [
        ("", "Sequential", 0, [1, 2], 0), ("0", "Linear", 1, [1, 4], 44), ("1", "ReLU", 1, [1, 4], 0),
        ("2", "Linear", 1, [1, 2], 10)]
    assert (out["parameters"], out["trainable"], out["non_trainable"]) == (54, 54, 0)
    assert "Total params: 54\n" in sh("torch nn summary %s --input_shape '[1,10]'" % m)
    assert json.loads(sh("torch nn info %s --json" % m))["mode"] == "train"


def test_train_and_eval_switch_dropout(sh):
    x = sh.put(torch.ones(1000))
    m = sh("torch nn dropout --p 0.5")
    assert sh("torch forward %s %s | torch eq 0 | torch sum | torch item" % (m, x)) != "0"
    sh("torch nn eval %s" % m)
    assert sh("torch forward %s %s | torch value" % (m, x)) == json.dumps([1.0] * 1000).replace(" ", "")
    sh("torch nn train %s" % m)
    assert sh("torch forward %s %s | torch eq 0 | torch sum | torch item" % (m, x)) != "0"


def test_predict_runs_in_eval_mode_without_grad_and_restores_train_mode(sh):
    x = sh.put(torch.ones(1, 100))
    m = sh("torch nn sequential 'linear 100 100' 'dropout --p 0.9'")
    p = sh("torch predict %s %s" % (m, x))
    ref = nn.Sequential(nn.Linear(100, 100), nn.Dropout(0.9))
    ref.load_state_dict(weights(sh, m))
    ref.eval()
    assert torch.equal(sh.fetch(p), ref(torch.ones(1, 100)).detach())
    assert sh("torch requires_grad %s" % p) == "false"
    assert json.loads(sh("torch nn info %s --json" % m))["mode"] == "train"


def test_nn_to_converts_in_place_and_the_optimizer_keeps_working(sh):
    x, y = sh.put(torch.randn(4, 2, dtype=torch.float64)), sh.put(torch.randn(4, 1, dtype=torch.float64))
    m = sh("torch nn linear 2 1")
    w = handles(sh("torch nn parameters %s" % m))[0]
    o = sh("torch optim sgd %s --lr 0.1" % m)
    sh("torch nn to %s --dtype float64" % m)
    assert sh("torch dtype %s; torch is_leaf %s" % (w, w)) == "float64\ntrue"
    before = sh.fetch(w)
    ref = nn.Linear(2, 1).double()
    ref.load_state_dict(weights(sh, m))
    sh("torch zero_grad %s; torch forward %s %s | torch mse_loss %s | torch backward; torch step %s" % (o, m, x, y, o))
    ropt = torch.optim.SGD(ref.parameters(), lr=0.1)
    torch.nn.functional.mse_loss(ref(sh.fetch(x)), sh.fetch(y)).backward()
    ropt.step()
    after = sh.fetch(w)
    assert not torch.equal(after, before) and torch.equal(after, ref.weight.detach())


def test_init_kinds_match_torch_nn_init_on_the_same_seed(sh):
    t = sh("torch zeros '[4,3]' --requires_grad")
    for kind, flags, fn in [
            ("kaiming_normal", "--mode fan_out --nonlinearity relu",
             lambda w: nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")),
            ("xavier_uniform", "--gain 2", lambda w: nn.init.xavier_uniform_(w, gain=2.0)),
            ("normal", "--mean 1 --std 0.5", lambda w: nn.init.normal_(w, 1.0, 0.5)),
            ("uniform", "--a -2 --b 2", lambda w: nn.init.uniform_(w, -2.0, 2.0)),
            ("orthogonal", "", lambda w: nn.init.orthogonal_(w)),
            ("constant", "--val 0.25", lambda w: nn.init.constant_(w, 0.25))]:
        sh("torch manual_seed 7; torch nn init %s %s %s" % (kind, t, flags))
        torch.manual_seed(7)
        ref = torch.zeros(4, 3)
        fn(ref)
        got = sh.fetch(t)
        assert torch.equal(got, ref), kind
    assert sh("torch is_leaf %s; torch requires_grad %s" % (t, t)) == "true\ntrue"


def test_init_on_a_module_fills_weight_matrices_and_leaves_biases(sh):
    m = sh("torch nn linear 3 2")
    bias = weights(sh, m)["bias"]
    sh("torch nn init ones %s; torch nn init xavier_normal %s" % (m, m))
    w = weights(sh, m)
    assert torch.equal(w["bias"], torch.ones(2)) and not torch.equal(w["weight"], torch.ones(2, 3))
    assert not torch.equal(bias, w["bias"])


def test_init_with_an_unknown_nonlinearity_is_an_error_and_changes_nothing(sh):
    m = sh("torch nn linear 3 2")
    before = weights(sh, m)
    r = sh.run("torch nn init kaiming %s --nonlinearity relux" % m)
    assert r.code == 2 and "relux" in r.err
    r = sh.run("torch nn init normal %s --gain 2" % m)
    assert r.code == 2 and "--gain" in r.err
    after = weights(sh, m)
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_transformer_encoder_takes_a_layer_handle(sh):
    x = torch.randn(2, 3, 4)
    enc = sh("l=$(torch nn transformer_encoder_layer 4 2 --dim_feedforward 8 --dropout 0 --batch_first); "
             "torch nn transformer_encoder $l 2 --enable_nested_tensor false")
    ref = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, 0.0, batch_first=True), 2,
                                enable_nested_tensor=False)
    ref.load_state_dict(weights(sh, enc))
    assert torch.equal(sh.fetch(sh("torch forward %s %s" % (enc, sh.put(x)))), ref(x).detach())
