// SPDX-License-Identifier: Apache-2.0
// The Python module loom_torch._C: ProcessGroupLoom as a subclass of torch's ProcessGroup (1.13)
// or Backend (2.x), constructed the way torch.distributed calls a registered backend's creator
// (store, rank, size, timeout). loom_torch/__init__.py registers it as "loom".
#include <loom.h>
#include <pybind11/chrono.h>
#include <torch/python.h>

#include "process_group_loom.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, module) {
  module.doc() = "Loom's torch.distributed backend (CPU tensors)";
  // loom_torch.__version__ is the loaded libloom's own, so the two never disagree.
  module.def(
      "version_string", [] { return std::string(loomGetVersionString()); },
      "Loom's version (loomGetVersionString()), with the git revision when built from git");
  py::module::import("torch.distributed");  // registers torch's base class with pybind11 first
  py::class_<loom_torch::ProcessGroupLoom, loom_torch::BackendBase, c10::intrusive_ptr<loom_torch::ProcessGroupLoom>>(
      module, "ProcessGroupLoom")
      // The GIL is let go inside the factory, not as a call_guard of init (pybind11 #5473, as
      // torch 2.x binds its own backends): the ranks meet in the store meanwhile.
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout) {
             py::gil_scoped_release released;
             return c10::make_intrusive<loom_torch::ProcessGroupLoom>(store, rank, size, timeout);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"));
}
