"""Objects held behind handles: tensor://, nn://, optim://, sched://."""
from torchsh.registry.handles import format_handle, parse_handle, looks_like_handle
from torchsh.registry.kinds import KINDS
from torchsh.registry.store import Registry

__all__ = ["KINDS", "Registry", "format_handle", "parse_handle", "looks_like_handle"]
