// The Python module loom_torch._C: ProcessGroupLoom as a subclass of torch's ProcessGroup,
// constructed the way torch.distributed calls a registered backend's creator
// (store, rank, size, timeout). loom_torch/__init__.py registers it as "loom".
#include <pybind11/chrono.h>
#include <torch/python.h>

#include "process_group_loom.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, module) {
  module.doc() = "Loom's torch.distributed backend (CPU tensors)";
  py::module::import("torch.distributed");  // registers c10d::ProcessGroup with pybind11 first
  py::class_<loom_torch::ProcessGroupLoom, c10d::ProcessGroup, c10::intrusive_ptr<loom_torch::ProcessGroupLoom>>(
      module, "ProcessGroupLoom")
      .def(py::init<const c10::intrusive_ptr<c10d::Store>&, int, int, std::chrono::milliseconds>(), py::arg("store"),
           py::arg("rank"), py::arg("size"), py::arg("timeout"), py::call_guard<py::gil_scoped_release>());
}
