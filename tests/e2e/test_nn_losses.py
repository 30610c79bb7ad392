"""torch.nn.functional losses through the op table, with PyTorch's options, equal to in-process PyTorch."""
import pytest
import torch
import torch.nn.functional as F

torch.manual_seed(0)
PRED = torch.randn(6, 4)
TARGET = torch.randn(6, 4)
CLASSES = torch.tensor([0, 3, 1, 1, 2, -100])
PROB = torch.rand(6, 4)
BITS = (torch.rand(6, 4) > 0.5).float()
W = torch.tensor([1.0, 2.0, 0.5, 1.5])


# (command after the tensors, the same call in Python); T0, T1, T2 are the tensor slots
CASES = [
    ("mse_loss {p} {t}", lambda: F.mse_loss(PRED, TARGET)),
    ("mse_loss {p} {t} --reduction sum", lambda: F.mse_loss(PRED, TARGET, reduction="sum")),
    ("l1_loss {p} {t} --reduction none", lambda: F.l1_loss(PRED, TARGET, reduction="none")),
    ("smooth_l1_loss {p} {t} --beta 0.5", lambda: F.smooth_l1_loss(PRED, TARGET, beta=0.5)),
    ("huber_loss {p} {t} --delta 0.3", lambda: F.huber_loss(PRED, TARGET, delta=0.3)),
    ("cross_entropy {p} {c}", lambda: F.cross_entropy(PRED, CLASSES)),
    ("cross_entropy {p} {c} --weight {w} --label_smoothing 0.1",
     lambda: F.cross_entropy(PRED, CLASSES, weight=W, label_smoothing=0.1)),
    ("cross_entropy {p} {c} --ignore_index 1 --reduction sum",
     lambda: F.cross_entropy(PRED, CLASSES.clamp(min=0), ignore_index=1, reduction="sum")),
    ("nll_loss {lp} {c}", lambda: F.nll_loss(F.log_softmax(PRED, 1), CLASSES)),
    ("binary_cross_entropy {prob} {bits}", lambda: F.binary_cross_entropy(PROB, BITS)),
    ("binary_cross_entropy_with_logits {p} {bits} --pos_weight {w}",
     lambda: F.binary_cross_entropy_with_logits(PRED, BITS, pos_weight=W)),
    ("kl_div {lp} {prob} --reduction batchmean", lambda: F.kl_div(F.log_softmax(PRED, 1), PROB, reduction="batchmean")),
    ("margin_ranking_loss {p} {t} {sign} --margin 0.5",
     lambda: F.margin_ranking_loss(PRED, TARGET, torch.sign(TARGET), margin=0.5)),
    ("hinge_embedding_loss {p} {sign} --margin 2", lambda: F.hinge_embedding_loss(PRED, torch.sign(TARGET), margin=2.0)),
    ("soft_margin_loss {p} {sign}", lambda: F.soft_margin_loss(PRED, torch.sign(TARGET))),
]


@pytest.fixture(scope="module")
def slots(sh):
    return {"p": sh.put(PRED), "t": sh.put(TARGET), "c": sh.put(CLASSES), "w": sh.put(W),
            "lp": sh.put(F.log_softmax(PRED, 1)), "prob": sh.put(PROB), "bits": sh.put(BITS),
            "sign": sh.put(torch.sign(TARGET))}


@pytest.mark.parametrize("command,oracle", CASES, ids=[c[0].split()[0] + str(i) for i, c in enumerate(CASES)])
def test_loss_equals_in_process_pytorch(sh, slots, command, oracle):
    if "ignore_index 1" in command:
        slots = dict(slots, c=sh.put(CLASSES.clamp(min=0)))
    got = sh.fetch(sh("torch " + command.format(**slots)))
    assert torch.equal(got, oracle())


def test_loss_reads_the_prediction_from_stdin(sh, slots):
    out = sh("echo %s | torch mse_loss %s" % (slots["p"], slots["t"]))
    assert torch.equal(sh.fetch(out), F.mse_loss(PRED, TARGET))


def test_a_bad_reduction_is_an_error(sh, slots):
    r = sh.run("torch mse_loss %s %s --reduction average" % (slots["p"], slots["t"]))
    assert r.code != 0 and "average" in r.err
