"""What PyTorch alone reaches on this machine, with no daemon and no client: the floors that bench/compile.py's
`--compile` rows are set against, measured in the same run.

Step: one Python process, the bench's MLP 784-512-512-10, Adam (lr 1e-3), one fixed batch of 64, glibc's heap
tuned as the daemon tunes it (torchsh.memory.heap). Three copies of the same model: eager; torch.compile of
the forward+loss and of the optimizer step (what `--compile` compiles, the step with a tensor lr); and only the
optimizer step compiled. Each copy runs STEPS steps a round, ROUNDS rounds interleaved; a copy's figure is the
median of its rounds' ms a step. So this is torch.compile's own speed-up on this model, with no loader, no
registry, no client: the most `fit --compile` could show.

Restart: a script that imports torch, makes the model, Adam and a batch, and runs two steps through
torch.compile (the first compiles the forward+loss, the second the optimizer step), with inductor's caches
warm from a run before (TORCHINDUCTOR_CACHE_DIR, a private temp folder): seconds from its spawn to the line it
prints after the second step (not its exit: tearing down PyTorch's interpreter takes ~0.9 s more). That is
PyTorch's own warm restart, the floor of the daemon's.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from torchsh.memory import heap

STEPS, ROUNDS = 200, 6

COMMON = r'''
import time, torch, torch.nn as nn, torch.nn.functional as F
x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))

def forward_loss(model, x, y):
    output = model(x)
    return output, F.cross_entropy(output, y)

def copy(compile_forward, compile_step):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(1e-3) if compile_step else 1e-3)
    f = torch.compile(forward_loss, dynamic=False) if compile_forward else forward_loss
    def step():
        opt.step()
    s = torch.compile(step, dynamic=False) if compile_step else step
    def one():
        opt.zero_grad(set_to_none=True)
        _, loss = f(model, x, y)
        loss.backward()
        s()
    return one
'''

STEP_SCRIPT = COMMON + r'''
import json, statistics, sys
steps, rounds = int(sys.argv[1]), int(sys.argv[2])
copies = {"eager": copy(False, False), "compiled": copy(True, True), "step_only": copy(False, True)}
for one in copies.values():
    for _ in range(5):  # compiles, then warms
        one()
ms = {k: [] for k in copies}
for _ in range(rounds):
    for name, one in copies.items():
        t = time.perf_counter()
        for _ in range(steps):
            one()
        ms[name].append((time.perf_counter() - t) / steps * 1e3)
print(json.dumps({k: statistics.median(v) for k, v in ms.items()}))
'''

RESTART_SCRIPT = r'''
import time
t0 = time.perf_counter()
''' + COMMON + r'''
one = copy(True, True)
one()  # compiles the forward+loss; Adam's first step makes its state
one()  # compiles the optimizer step
print("done", flush=True)
'''


def step_ms():
    """{"eager", "compiled", "step_only": median ms a step} of PyTorch alone in one process."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(heap.MMAP_THRESHOLD),
               MALLOC_TRIM_THRESHOLD_=str(heap.TRIM_THRESHOLD))
    out = subprocess.run([sys.executable, "-c", STEP_SCRIPT, str(STEPS), str(ROUNDS)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


class RestartFloor:
    """RESTART_SCRIPT's runs, caches warm: `with RestartFloor() as floor: floor.seconds()` a round."""

    def __enter__(self):
        self.cache = tempfile.mkdtemp(prefix="tshb-inductor-")
        self.env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=self.cache)
        self.seconds()  # fills the caches
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.cache, ignore_errors=True)

    def seconds(self):
        """Spawn -> the script's line after its second step."""
        t0 = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", RESTART_SCRIPT], env=self.env, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
        line = child.stdout.readline()
        seconds = time.perf_counter() - t0
        child.wait()
        if line.strip() != "done":
            raise RuntimeError("the PyTorch-alone restart script failed (exit %s)" % child.returncode)
        return seconds
