"""`torch print` of every handle kind, as Python's print() shows an equal object."""
import torch


def test_print_of_a_tensor_is_pytorchs_display(sh):
    t = torch.tensor([[1.5, -2.0], [0.25, 4.0]])
    assert sh("torch print %s" % sh.put(t)) == str(t)


def test_print_of_a_model_is_print_model(sh):
    m = sh("torch nn sequential 'linear 3 2' relu 'dropout --p 0.25'")
    want = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.Dropout(p=0.25))
    assert sh("torch print %s" % m) == str(want)
    assert sh("echo %s | torch print" % m) == str(want)  # piped, like a tensor
    conv = sh("torch nn conv2d 3 8 3 --padding 1")
    assert sh("torch print %s" % conv) == str(torch.nn.Conv2d(3, 8, 3, padding=1))


def test_print_of_an_optimizer_is_print_opt(sh):
    m = sh("torch nn linear 3 2")
    for cmd, make in (("adam %s --lr 0.01", lambda p: torch.optim.Adam(p, lr=0.01)),
                      ("sgd %s --lr 0.1 --momentum 0.9", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))):
        opt = sh("torch optim " + cmd % m)
        assert sh("torch print %s" % opt) == repr(make(torch.nn.Linear(3, 2).parameters()))


def test_print_of_a_scheduler_shows_its_class_state_and_optimizer(sh):
    opt = sh("torch optim sgd $(torch nn linear 3 2) --lr 0.1")
    sched = sh("torch sched cosine %s --T_max 5" % opt)
    sh("torch step %s; torch sched step %s" % (opt, sched))
    want = torch.optim.lr_scheduler.CosineAnnealingLR(
        torch.optim.SGD(torch.nn.Linear(3, 2).parameters(), lr=0.1), T_max=5)
    want.optimizer.step()
    want.step()
    lines = sh("torch print %s" % sched).split("\n")
    assert lines[0] == "CosineAnnealingLR (" and lines[-1] == ")" and "    optimizer: SGD" in lines
    for key in ("T_max", "eta_min", "base_lrs", "last_epoch", "_last_lr"):
        assert "    %s: %s" % (key.lstrip("_"), want.state_dict()[key]) in lines, (key, lines)
