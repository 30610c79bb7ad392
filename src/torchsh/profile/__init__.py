"""`torch profile -- CMD`'s daemon side: the one torch.profiler recording (recording.py: started and stopped on
the tensor thread, ended by its caller, its caller's drop, a step count or a time cap), and what it writes: the
folded stacks rebuilt from the chrome trace (folded.py) and the top-N ops table (table.py)."""
