"""A user's own model file for `torch model open FILE.py:CLASS`: a residual, branching net (not a
Sequential), written where a test wants it, and the same class built in the test's process as the oracle."""
import importlib.util
import os
import textwrap

NET = textwrap.dedent("""
    import torch

    class Block(torch.nn.Module):  # a residual branch: not a Sequential
        def __init__(self, width):
            super().__init__()
            self.inner = torch.nn.Linear(width, width)

        def forward(self, x):
            return x + torch.tanh(self.inner(x))

    class Net(torch.nn.Module):
        def __init__(self, hidden=8, classes=2):
            super().__init__()
            self.stem = torch.nn.Linear(3, hidden)
            self.left, self.right = Block(hidden), torch.nn.Linear(hidden, hidden)
            self.head = torch.nn.Linear(2 * hidden, classes)

        def forward(self, x):
            h = torch.relu(self.stem(x))
            return self.head(torch.cat([self.left(h), self.right(h)], dim=1))

    class Plain:
        pass
    """)


def write_net(folder, text=NET, name="mynet.py"):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def python_net(path, cls="Net", **args):
    """The same class built in this process, from the same file."""
    spec = importlib.util.spec_from_file_location("oracle_net_%d" % id(args), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, cls)(**args)
