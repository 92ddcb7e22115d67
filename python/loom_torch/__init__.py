# SPDX-License-Identifier: Apache-2.0
"""Loom as a torch.distributed backend.

    import loom_torch                      # registers the backend name "loom"
    torch.distributed.init_process_group("loom", ...)

Every init method works (env://, tcp://, file://, store=): the ranks meet through the store
torch passes to the backend. This release takes CPU tensors; each operation runs on the
group's Loom stream and returns a work object that completes when the stream has run it.
"""
import inspect as _inspect

import torch.distributed as _dist

from . import _C

ProcessGroupLoom = _C.ProcessGroupLoom

# The version of the libloom this package runs on (loomGetVersionString()): "0.1.0", with the
# git revision when built from git ("0.1.0+g0123456789ab", ".dirty" after uncommitted changes).
__version__ = _C.version_string()


def _create_process_group(store, rank, size, timeout):
    return _C.ProcessGroupLoom(store, rank, size, timeout)


# torch 2.1+ asks which devices a backend serves (1.13 has no such argument).
_DEVICES = {"devices": ["cpu"]} if "devices" in _inspect.signature(_dist.Backend.register_backend).parameters else {}

if not hasattr(_dist.Backend, "LOOM"):
    _dist.Backend.register_backend("loom", _create_process_group, **_DEVICES)
