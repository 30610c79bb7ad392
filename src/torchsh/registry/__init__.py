"""Objects held behind handles: tensor://, nn://, optim://, sched://."""
from torchsh.registry.handles import KINDS, format_handle, parse_handle, looks_like_handle
from torchsh.registry.store import Registry

__all__ = ["KINDS", "Registry", "format_handle", "parse_handle", "looks_like_handle"]
