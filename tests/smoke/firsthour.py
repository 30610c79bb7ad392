"""The first hour's data and PyTorch's side of it, shared by test_first_hour.py (bash, zsh) and
test_first_hour_nu.py: the tensors the scripts make, and the training loop their model must equal."""
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

A = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
B = torch.full((2, 2), 0.5)
W = torch.tensor([1.0, -2.0, 3.0])
X = torch.randn(8, 2, generator=torch.Generator().manual_seed(1))
Y = torch.randn(8, 1, generator=torch.Generator().manual_seed(2))
LR, STEPS, BATCH, EPOCHS = 0.1, 3, 4, 2


def python_training(first, epochs):
    """PyTorch's own loop: STEPS full-batch steps, then `epochs` epochs of in-order batches. Returns the
    model, the steps' losses and each epoch's per-sample mean loss (what fit's rows report)."""
    model = torch.nn.Linear(2, 1)
    model.load_state_dict(first)
    opt = torch.optim.SGD(model.parameters(), lr=LR)

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    steps = [step(X, Y) for _ in range(STEPS)]
    means = [sum(step(X[k:k + BATCH], Y[k:k + BATCH]) * BATCH for k in range(0, len(X), BATCH)) / len(X)
             for _ in range(epochs)]
    return model, steps, means


def assert_trained_like(folder, model):
    """trained.safetensors holds `model`'s weights; a fresh model loaded from it predicts what `model` does."""
    trained = load_file(folder / "trained.safetensors")
    assert trained.keys() == model.state_dict().keys()
    assert all(torch.equal(trained[k], v) for k, v in model.state_dict().items())
    with torch.no_grad():
        assert torch.equal(torch.load(folder / "pred.pt", weights_only=True), model(X))


def matmul_error():
    """What PyTorch says of the first hour's wrong matmul (2x2 @ 3): the shells must say the same words."""
    try:
        torch.matmul(A, torch.ones(3))
    except RuntimeError as e:
        return str(e)
    raise AssertionError("PyTorch accepted a 2x2 @ 3 matmul")
