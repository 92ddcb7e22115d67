# SPDX-License-Identifier: Apache-2.0
"""Prints what meson needs to build loom_torch against the torch of this Python, one item a
line: version, the C++ ABI flag, include directories, library directories (';'-separated),
and 1 when torch ships its own pybind11 headers (pip's wheels do; Debian's python3-torch uses
pybind11-dev).
Fails (exit 1, reason on stderr) when torch cannot be imported."""
import os
import sys

try:
    import torch
    from torch.utils import cpp_extension
except Exception as error:  # noqa: BLE001 - any import failure means "no torch here"
    sys.stderr.write(f"{type(error).__name__}: {error}")
    sys.exit(1)

print(torch.__version__)
print(1 if torch.compiled_with_cxx11_abi() else 0)
# /usr/include itself must stay an ordinary system directory: as -isystem it would reorder
# the C++ library's #include_next chain.
# Debian's python3-torch lists folders of its wheel layout that are empty there; its headers
# live under /usr/include (libtorch-dev), with the C++ API's folder beside them.
paths = [p for p in cpp_extension.include_paths() if os.path.isdir(p) and os.listdir(p)]
debian_api = "/usr/include/torch/csrc/api/include"
if os.path.isdir(debian_api):
    paths.append(debian_api)
print(";".join(p for p in paths if p.rstrip("/") != "/usr/include"))
print(";".join(cpp_extension.library_paths()))
# An extension must see torch's pybind11 (its internals hold the registration of torch's
# classes, ProcessGroup or Backend, that ProcessGroupLoom derives from).
print(1 if any(os.path.isfile(os.path.join(p, "pybind11", "pybind11.h")) for p in paths) else 0)
