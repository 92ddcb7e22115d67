"""Loom as a torch.distributed backend.

    import loom_torch                      # registers the backend name "loom"
    torch.distributed.init_process_group("loom", ...)

Every init method works (env://, tcp://, file://, store=): the ranks meet through the store
torch passes to the backend. This release takes CPU tensors and completes each operation
before the call returns.
"""
import torch.distributed as _dist

from . import _C

ProcessGroupLoom = _C.ProcessGroupLoom


def _create_process_group(store, rank, size, timeout):
    return _C.ProcessGroupLoom(store, rank, size, timeout)


if not hasattr(_dist.Backend, "LOOM"):
    _dist.Backend.register_backend("loom", _create_process_group)
