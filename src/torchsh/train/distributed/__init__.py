"""`torch fit … --nproc_per_node N`: a fit on torch.distributed (DDP, or FSDP with --strategy fsdp).

Named after torch.distributed, as verbs/distributions.py (`torch dist …`) is after torch.distributions.

supervisor.py  the daemon's side: writes the handoff folder, starts the launcher, relays progress, loads the result
handoff.py     the run's private folder: what the daemon hands the ranks, and what rank 0 hands back
launch.py      the launcher process (`python -m torchsh.train.distributed.launch FOLDER`): elastic's launcher
rendezvous.py  the static TCP rendezvous, its store bound where it must listen
netns.py       a one-node run in a network namespace of its own
rank.py        one rank: joins the process group, rebuilds the objects, runs fit's loop
world.py       RankWorld: what fit's loop does differently in a rank
shares.py      a rank's share of a loader (DistributedSampler)
"""
