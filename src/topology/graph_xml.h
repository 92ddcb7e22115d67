// SPDX-License-Identifier: Apache-2.0
// NCCL's graph XML (NCCL_GRAPH_DUMP_FILE / NCCL_GRAPH_FILE), so that Loom's rings and trees can
// be set beside NCCL's and a vendor's graph file can replace Loom's search:
//
//   <graphs version="1">
//     <graph id="0" pattern="4" crossnic="0" nchannels="2" speedintra="12" speedinter="12"
//            latencyinter="0" typeintra="SYS" typeinter="PIX" samechannels="0">
//       <channel><net dev="0"/><gpu dev="0"/><gpu dev="1"/><net dev="0"/></channel>
//     </graph>
//   </graphs>
//
// speedintra/speedinter are GB/s per channel; pattern is NCCL's number (patternNcclId); a
// channel lists the GPUs by `dev` in order, between the net it enters by and the net it leaves
// by when the job spans several nodes.
#pragma once

#include <string>
#include <vector>

#include "topology/search.h"

namespace loom::topology {

std::string writeGraphXml(const std::vector<Graph>& graphs);
// Throws loom::Error(loomInvalidArgument) naming `sourceName` on malformed input.
std::vector<Graph> parseGraphXml(const std::string& text, const std::string& sourceName);
// Throws loom::Error(loomInvalidArgument) naming the file when it cannot be read or parsed.
std::vector<Graph> readGraphFile(const std::string& path);
// Atomic (temporary file + rename), so a reader never sees half a file.
void writeGraphFile(const std::vector<Graph>& graphs, const std::string& path);
// GB/s with at most three decimals and no trailing zeros ("12", "24.5"), like NCCL's dumps;
// deterministic, so loom-topo's output compares byte for byte.
std::string formatSpeed(double value);

}  // namespace loom::topology
