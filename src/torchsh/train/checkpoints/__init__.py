"""Checkpoints without pickle: the file of `torch checkpoint save|load` (format.py: model, optimizer, scheduler
and the CPU RNG in one .safetensors file) and `torch fit`'s checkpoints and --resume (resume.py: that file plus a
`fit` part)."""
