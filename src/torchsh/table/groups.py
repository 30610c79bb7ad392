"""The command groups in words: what each group is (`torch` lists them, `torch GROUP` opens with it), and
the `  word   summary` lines every listing prints."""

# What each command group is, in a few words (the commands under it come from the table): the overview
# (`torch`) and the group's own listing (`torch nn`) print it
GROUP_WORDS = {
    "nn": "modules: `torch nn KIND ARGS` builds any torch.nn layer; save, load, sequential…",
    "nn.functional": "torch.nn.functional: activations, losses, convolutions, pooling…",
    "optim": "optimizers: `torch optim KIND MODEL` for every torch.optim class; lr, info",
    "sched": "learning-rate schedulers: `torch sched KIND OPT`; step, lr",
    "daemon": "the torchd daemon: status, start, stop, restart, ttl, log",
    "scope": "memory scopes: `torch scope -- CMD` frees what CMD made; begin, end",
    "profile": "torch.profiler: `torch profile --out DIR -- CMD` writes a trace and folded stacks; finish",
    "checkpoint": "model + optimizer + scheduler state in one file: save, load",
    "linalg": "torch.linalg: solve, inv, qr, svd, eigh, norms…",
    "fft": "torch.fft: discrete Fourier transforms",
    "special": "torch.special: special functions (erf, gammaln, bessel…)",
    "dist": "probability distributions: `torch dist KIND --param V` for every torch.distributions class; "
            "sample, log_prob, kl…",
    "cuda": "torch.cuda: available, device_count, synchronize, manual_seed, memory",
    "data": "datasets and loaders: `torch data open FILE`, split, transform, loader, next",
    "job": "background work (`torch fit --detach`): list, logs, wait, stop",
    "runs": "`torch fit --log` runs compared: ls, diff, best",
    "model": "model files before anything is loaded: inspect (headers only, nothing unpickled)",
    "lm": "language models from local Hugging Face folders: open, info, generate, chat, lora, adapters, save",
    "session": "every object held, saved to a folder and loaded again: save, load, push",
}


def listing_rows(pairs, width=78):
    """`  word   summary` lines, the summary cut to fit one terminal line."""
    col = min(max((len(w) for w, _ in pairs), default=0), 22)
    out = []
    for word, summary in pairs:
        text = summary if len(summary) <= width - col - 4 else summary[:width - col - 5].rstrip() + "…"
        out.append("  %-*s  %s" % (col, word, text))
    return out
