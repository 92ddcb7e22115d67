// SPDX-License-Identifier: Apache-2.0
// The table of every environment variable Loom reads. README's Configuration tables are made
// from it (loom-env --markdown; tests/unit/test_config.cc keeps them equal), so the docs here
// are what users read: one line each, markdown.
#include <cstdint>
#include <cstring>

#include "base/config.h"

namespace loom::config {
namespace {

constexpr int64_t kInt32Max = INT32_MAX;
constexpr int64_t kInt64Max = INT64_MAX;
constexpr int64_t kMiB = int64_t{1} << 20;

// VERSION and NONE are NCCL's (NCCL_DEBUG is LOOM_DEBUG's alias): the version line alone, and
// nothing.
constexpr const char* kDebugLevels[] = {"WARN", "INFO", "TRACE", "VERSION", "NONE"};
// "tcp" is an older spelling of socket, still accepted (NCCL spells it "Socket": case does
// not matter).
constexpr const char* kTransports[] = {"auto", "shm", "socket", "tcp"};
// NCCL_SOCKET_FAMILY's spellings.
constexpr const char* kSocketFamilies[] = {"AF_INET", "AF_INET6"};
constexpr const char* kAlgorithms[] = {"auto", "ring", "hierarchical"};
constexpr const char* kHostIsas[] = {"generic", "avx2", "avx512"};
// "emulated": the emulated GPU of CI (device/emulated_runtime.h), for tests and trying Loom's
// device path on a machine without one.
constexpr const char* kDevices[] = {"auto", "none", "cuda", "emulated"};
// Path types nearest first, then NCCL's legacy integers (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 SYS).
constexpr const char* kPathLevels[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN",
                                       "PHB", "SYS", "0",   "1",   "2",   "3",   "4"};

constexpr const char* kPath = "a file path";

constexpr Entry kEntries[] = {
    // ---- Library ----
    {.knob = Knob::Debug, .name = "LOOM_DEBUG", .type = Type::Choice, .scope = Scope::Library,
     .values = kDebugLevels, .defaultDoc = "off",
     .doc = "log level; lines go to stderr prefixed `host:pid:rank`; `VERSION` prints the `Loom "
            "version` line alone, `NONE` nothing (NCCL's levels)",
     .ncclAlias = "NCCL_DEBUG"},
    {.knob = Knob::DebugSubsys, .name = "LOOM_DEBUG_SUBSYS", .type = Type::Text,
     .scope = Scope::Library,
     .format = "comma list of `INIT`, `COLL`, `NET`, `SHM`, `GRAPH`, `ENV`, `ALLOC` or `ALL`; "
               "a leading `^` excludes them",
     .defaultValue = "ALL",
     .doc = "which subsystems log; NCCL's other names are accepted: `BOOTSTRAP` is `NET`, the "
            "rest (`P2P`, `TUNING`, `PROXY`, ...) name no lines of Loom's",
     .ncclAlias = "NCCL_DEBUG_SUBSYS"},
    {.knob = Knob::TimeoutMs, .name = "LOOM_TIMEOUT_MS", .type = Type::Integer,
     .scope = Scope::Library, .min = 1, .max = kInt32Max, .defaultValue = "600000",
     .doc = "bound on every wait; a collective that makes no progress for this long fails, naming "
            "the peers it waited on"},
    {.knob = Knob::InitReportMs, .name = "LOOM_INIT_REPORT_MS", .type = Type::Integer,
     .scope = Scope::Library, .min = 1, .max = kInt32Max, .defaultValue = "30000",
     .doc = "interval of the WARN lines while init waits for ranks (the root's rendezvous, or a "
            "store's), naming the ranks that have arrived and those still missing"},
    {.knob = Knob::SocketIfname, .name = "LOOM_SOCKET_IFNAME", .type = Type::Text,
     .scope = Scope::Library,
     .format = "prefix list (`eth,ib`), `^` to exclude (`^docker,lo`), `=` for exact names "
               "(`=eth0`)",
     .defaultDoc = "see note",
     .doc = "interfaces for bootstrap and TCP",
     .ncclAlias = "NCCL_SOCKET_IFNAME"},
    {.knob = Knob::SocketFamily, .name = "LOOM_SOCKET_FAMILY", .type = Type::Choice,
     .scope = Scope::Library, .values = kSocketFamilies, .defaultDoc = "either, IPv4 first",
     .doc = "address family of the interface chosen for bootstrap and TCP (by "
            "`LOOM_SOCKET_IFNAME`, or for ranks on several hosts) and of the loopback used "
            "without a rendezvous address; a `LOOM_COMM_ID` address decides for itself",
     .ncclAlias = "NCCL_SOCKET_FAMILY"},
    {.knob = Knob::HostId, .name = "LOOM_HOSTID", .type = Type::Text, .scope = Scope::Library,
     .format = "any text", .defaultDoc = "hostname + boot id",
     .doc = "overrides the host identity that decides which ranks share memory (ranks with one "
            "ID on different kernels or PID namespaces cannot: they are told apart, with a warning)"},
    {.knob = Knob::Transport, .name = "LOOM_TRANSPORT", .type = Type::Choice,
     .scope = Scope::Library, .values = kTransports, .defaultValue = "auto",
     .doc = "`shm` or `socket` (alias `tcp`) forces one transport for every peer, on one host "
            "too (`LOOM_NET` chooses only between hosts)"},
    {.knob = Knob::Net, .name = "LOOM_NET", .type = Type::Text, .scope = Scope::Library,
     .format = "`socket` (any case)", .defaultDoc = "`socket`",
     .doc = "the network transport between hosts; ranks on one host still use shared memory. "
            "An unknown name fails init (`loomInvalidArgument`). `loomConfig_t.netName` sets it "
            "per communicator",
     .ncclAlias = "NCCL_NET"},
    {.knob = Knob::ShmDisable, .name = "LOOM_SHM_DISABLE", .type = Type::Flag,
     .scope = Scope::Library, .defaultValue = "0",
     .doc = "`1`: never use shared memory (TCP on one host)", .ncclAlias = "NCCL_SHM_DISABLE"},
    {.knob = Knob::SocketNsocks, .name = "LOOM_SOCKET_NSOCKS", .type = Type::Integer,
     .scope = Scope::Library, .min = 1, .max = 16, .defaultValue = "2",
     .doc = "TCP sockets per peer; large messages are striped over them"},
    {.knob = Knob::Check, .name = "LOOM_CHECK", .type = Type::Integer, .scope = Scope::Library,
     .min = 0, .max = 2, .defaultValue = "1",
     .doc = "`0`: trust the ranks to agree on every call; `1`: ranks that disagree fail with "
            "`loomInvalidUsage`; `2`: also report NaN/infinity in reductions"},
    {.knob = Knob::Fault, .name = "LOOM_FAULT", .type = Type::Text, .scope = Scope::Library,
     .format = "`name=value[@rank]` items, comma-separated",
     .doc = "tests only: inject socket transport faults: `close_after=BYTES` (shut a connection "
            "after that many bytes), `delay_ms=MS` (before each message), `short_io=BYTES` (cap "
            "every send/recv), `corrupt_header=N` (the N-th header on each connection)"},
    {.knob = Knob::PieceBytes, .name = "LOOM_PIECE_BYTES", .type = Type::Integer,
     .scope = Scope::Library, .min = 64, .max = 64 * kMiB, .zeroAllowed = true, .defaultValue = "0",
     .defaultDoc = "`0` (auto)",
     .doc = "pipelining granularity of ring and chain algorithms; auto = 128 KiB when every ring "
            "neighbour is over shared memory, 1 MiB when any is a socket (must match on all "
            "ranks)"},
    {.knob = Knob::Algo, .name = "LOOM_ALGO", .type = Type::Choice, .scope = Scope::Library,
     .values = kAlgorithms, .defaultValue = "auto",
     .doc = "`ring`: every call runs as a flat ring/chain schedule, never the direct single-host "
            "collectives; `auto` and `hierarchical` (alike today): on one host the direct "
            "collectives, and ranks on 2 or more hosts that each hold as many (2 or more) run "
            "all-reduce, all-gather, reduce-scatter, broadcast and reduce within each host and "
            "between hosts (a ring per local rank), other layouts the flat ring. Init logs the "
            "choice at `INFO`; `ring` on any rank makes it the flat ring; deterministic reductions "
            "keep their rank-order reduction"},
    {.knob = Knob::DirectEagerBytes, .name = "LOOM_DIRECT_EAGER_BYTES", .type = Type::Integer,
     .scope = Scope::Library, .min = 0, .max = 64 * kMiB, .defaultValue = "16384",
     .doc = "direct collectives: inputs up to this size go through the shared arena in one shot "
            "(the small-message path); larger ones take the ring, or single-copy with "
            "`LOOM_CMA=1` (must match on all ranks)"},
    {.knob = Knob::Cma, .name = "LOOM_CMA", .type = Type::Flag, .scope = Scope::Library,
     .defaultValue = "0",
     .doc = "`1`: large single-host collectives read peers' buffers with `process_vm_readv` (one "
            "copy) instead of the ring; probed at init, off where ptrace rules forbid it. Off by "
            "default: slower than the ring on the VMs we measured (see Performance)"},
    {.knob = Knob::Deterministic, .name = "LOOM_DETERMINISTIC", .type = Type::Flag,
     .scope = Scope::Library, .defaultValue = "0",
     .doc = "`1`: all-reduce, reduce-scatter and reduce give bitwise the same result for any "
            "message size, element position, algorithm and transport: every element reduced in "
            "rank order, accumulated wide, rounded once (see Datatypes and numerics; must match on "
            "all ranks)"},
    {.knob = Knob::DirectChunkBytes, .name = "LOOM_DIRECT_CHUNK_BYTES", .type = Type::Integer,
     .scope = Scope::Library, .min = 4096, .max = 1024 * kMiB, .defaultValue = "262144",
     .doc = "single-copy granularity (staging chunk and progress unit)"},
    {.knob = Knob::StreamCopyBytes, .name = "LOOM_STREAM_COPY_BYTES", .type = Type::Integer,
     .scope = Scope::Library, .min = 0, .max = kInt64Max, .defaultValue = "9223372036854775807",
     .defaultDoc = "never",
     .doc = "copies of messages at least this large write received data with non-temporal stores; "
            "off by default: measured slower here"},
    {.knob = Knob::StreamReduceBytes, .name = "LOOM_STREAM_REDUCE_BYTES", .type = Type::Integer,
     .scope = Scope::Library, .min = 0, .max = kInt64Max, .defaultValue = "9223372036854775807",
     .defaultDoc = "never",
     .doc = "the same for reductions"},
    {.knob = Knob::HostIsa, .name = "LOOM_HOST_ISA", .type = Type::Choice, .scope = Scope::Library,
     .values = kHostIsas, .defaultDoc = "best available",
     .doc = "which host reduction kernels run (one the CPU lacks is reported under `LOOM_DEBUG` "
            "and the best available used)"},
    {.knob = Knob::Device, .name = "LOOM_DEVICE", .type = Type::Choice, .scope = Scope::Library,
     .values = kDevices, .defaultValue = "auto",
     .doc = "the device runtime: `auto` uses CUDA when a driver and a GPU are present and none "
            "otherwise; `none` takes host buffers only; `emulated` is the emulated GPU (two "
            "devices) that CI tests the device path with (see Device buffers)"},
    {.knob = Knob::DeviceCopyBytes, .name = "LOOM_DEVICE_COPY_BYTES", .type = Type::Integer,
     .scope = Scope::Library, .min = 4096, .max = 1024 * kMiB, .zeroAllowed = true, .defaultValue = "1048576",
     .doc = "device buffers: the piece size of the copies between device memory and Loom's "
            "pinned host buffers, which run while the transfer does (input in the order the "
            "algorithm first needs it, output as each part is final); `0` copies the whole input "
            "before the call's transfer and the whole output after it"},
    {.knob = Knob::ShmSlotBytes, .name = "LOOM_SHM_SLOT_BYTES", .type = Type::Integer,
     .scope = Scope::Library, .min = 64, .max = 64 * kMiB, .defaultValue = "131072",
     .doc = "shared-memory FIFO slot size, rounded up to 64 (must match on all ranks)"},
    {.knob = Knob::ShmSlots, .name = "LOOM_SHM_SLOTS", .type = Type::Integer,
     .scope = Scope::Library, .min = 2, .max = 1024, .defaultValue = "8",
     .doc = "shared-memory FIFO slots per connection (must match on all ranks)"},
    {.knob = Knob::SpreadRanks, .name = "LOOM_SPREAD_RANKS", .type = Type::Flag,
     .scope = Scope::Library, .defaultValue = "1",
     .doc = "when a host's ranks outnumber its cores, each rank's thread starts on CPU (local rank "
            "mod cores) of its mask, moved once at init and not pinned; `0`: leave placement to the "
            "kernel"},
    {.knob = Knob::TopoFile, .name = "LOOM_TOPO_FILE", .type = Type::Text, .scope = Scope::Library,
     .format = kPath,
     .doc = "NCCL/RCCL topology XML describing the machine. Every rank reads it, and the ring "
            "follows the searched ring (local rank i = GPU dev i). Ranks given different files "
            "fail init. A regular file of at most 64 MiB"},
    {.knob = Knob::TopoDumpFile, .name = "LOOM_TOPO_DUMP_FILE", .type = Type::Text,
     .scope = Scope::Library, .format = kPath,
     .doc = "rank 0 writes the machine model (this host's, discovered with hwloc and sysfs, or "
            "the loaded file's) as NCCL topology XML"},
    {.knob = Knob::GraphFile, .name = "LOOM_GRAPH_FILE", .type = Type::Text,
     .scope = Scope::Library, .format = kPath,
     .doc = "NCCL graph XML: use these rings and trees instead of searching. A regular file of "
            "at most 64 MiB"},
    {.knob = Knob::GraphDumpFile, .name = "LOOM_GRAPH_DUMP_FILE", .type = Type::Text,
     .scope = Scope::Library, .format = kPath,
     .doc = "rank 0 writes the rings and trees as NCCL graph XML"},
    {.knob = Knob::P2pLevel, .name = "LOOM_P2P_LEVEL", .type = Type::Choice,
     .scope = Scope::Library, .values = kPathLevels,
     .defaultDoc = "NCCL's: `PXB` on Intel/ARM, `SYS` elsewhere",
     .doc = "farthest path type at which GPUs talk directly (or NCCL's 0–4); beyond it they go "
            "through host memory",
     .ncclAlias = "NCCL_P2P_LEVEL"},
    {.knob = Knob::NetGdrLevel, .name = "LOOM_NET_GDR_LEVEL", .type = Type::Choice,
     .scope = Scope::Library, .values = kPathLevels, .defaultDoc = "`PXB`",
     .doc = "farthest GPU↔NIC path type for GPUDirect RDMA; beyond it traffic is staged through "
            "the GPU's CPU"},

    // ---- Launchers ----
    {.knob = Knob::CommId, .name = "LOOM_COMM_ID", .type = Type::Text, .scope = Scope::Launcher,
     .format = "`host:port` or `[IPv6]:port`",
     .doc = "the rendezvous; pins `loomGetUniqueId`'s listener (`ncclGetUniqueId` starts none: "
            "rank 0 starts it there at init, as NCCL does); required by `loomCommInitFromEnv` "
            "under mpirun/srun",
     .ncclAlias = "NCCL_COMM_ID"},
    {.knob = Knob::CommSecret, .name = "LOOM_COMM_SECRET", .type = Type::Text,
     .scope = Scope::Launcher, .format = "32 hex digits", .secret = true,
     .defaultDoc = "random (loomrun)",
     .doc = "shared by all ranks of an env-launched job (loomrun sets it); without it the secret "
            "is derived from the job's identity, with a warning"},
    {.knob = Knob::LoomRank, .name = "LOOM_RANK", .type = Type::Integer, .scope = Scope::Launcher,
     .min = 0, .max = kInt32Max,
     .doc = "loomrun: rank of this process"},
    {.knob = Knob::LoomWorldSize, .name = "LOOM_WORLD_SIZE", .type = Type::Integer,
     .scope = Scope::Launcher, .min = 0, .max = kInt32Max,
     .doc = "loomrun: number of ranks"},
    {.knob = Knob::LoomLocalRank, .name = "LOOM_LOCAL_RANK", .type = Type::Integer,
     .scope = Scope::Launcher, .min = 0, .max = kInt32Max,
     .doc = "loomrun: rank on this host (for the program; the library does not read it)"},
    {.knob = Knob::LoomLocalSize, .name = "LOOM_LOCAL_SIZE", .type = Type::Integer,
     .scope = Scope::Launcher, .min = 0, .max = kInt32Max,
     .doc = "loomrun: ranks on this host (for the program; the library does not read it)"},
    {.knob = Knob::TorchRank, .name = "RANK", .type = Type::Integer, .scope = Scope::Launcher,
     .min = 0, .max = kInt32Max,
     .doc = "torchrun: rank of this process"},
    {.knob = Knob::TorchWorldSize, .name = "WORLD_SIZE", .type = Type::Integer,
     .scope = Scope::Launcher, .min = 0, .max = kInt32Max,
     .doc = "torchrun: number of ranks"},
    {.knob = Knob::MasterAddr, .name = "MASTER_ADDR", .type = Type::Text, .scope = Scope::Launcher,
     .format = "a host name or address",
     .doc = "torchrun: the root listens on `MASTER_ADDR:MASTER_PORT+1` unless `LOOM_COMM_ID` is "
            "set"},
    {.knob = Knob::MasterPort, .name = "MASTER_PORT", .type = Type::Integer,
     .scope = Scope::Launcher, .min = 0, .max = 65534,
     .doc = "torchrun: its store's port; Loom's root takes the next one"},
    {.knob = Knob::TorchRunId, .name = "TORCHELASTIC_RUN_ID", .type = Type::Text,
     .scope = Scope::Launcher, .format = "any text",
     .doc = "torchrun: part of the job identity a missing `LOOM_COMM_SECRET` is derived from"},
    {.knob = Knob::OmpiRank, .name = "OMPI_COMM_WORLD_RANK", .type = Type::Integer,
     .scope = Scope::Launcher, .min = 0, .max = kInt32Max,
     .doc = "mpirun: rank of this process; give `LOOM_COMM_ID` (and `LOOM_COMM_SECRET`) too"},
    {.knob = Knob::OmpiSize, .name = "OMPI_COMM_WORLD_SIZE", .type = Type::Integer,
     .scope = Scope::Launcher, .min = 0, .max = kInt32Max,
     .doc = "mpirun: number of ranks"},
    {.knob = Knob::OmpiJobId, .name = "OMPI_MCA_ess_base_jobid", .type = Type::Text,
     .scope = Scope::Launcher, .format = "any text",
     .doc = "mpirun: part of the job identity"},
    {.knob = Knob::PmixNamespace, .name = "PMIX_NAMESPACE", .type = Type::Text,
     .scope = Scope::Launcher, .format = "any text",
     .doc = "PMIx launchers: part of the job identity"},
    {.knob = Knob::SlurmProcId, .name = "SLURM_PROCID", .type = Type::Integer,
     .scope = Scope::Launcher, .min = 0, .max = kInt32Max,
     .doc = "srun: rank of this process; give `LOOM_COMM_ID` (and `LOOM_COMM_SECRET`) too"},
    {.knob = Knob::SlurmNtasks, .name = "SLURM_NTASKS", .type = Type::Integer,
     .scope = Scope::Launcher, .min = 0, .max = kInt32Max,
     .doc = "srun: number of ranks"},
    {.knob = Knob::SlurmJobId, .name = "SLURM_JOB_ID", .type = Type::Text, .scope = Scope::Launcher,
     .format = "any text",
     .doc = "srun: part of the job identity"},
    {.knob = Knob::SlurmStepId, .name = "SLURM_STEP_ID", .type = Type::Text,
     .scope = Scope::Launcher, .format = "any text",
     .doc = "srun: part of the job identity"},

    // ---- Tools ----
    {.knob = Knob::PerfInjectFault, .name = "LOOM_PERF_INJECT_FAULT", .type = Type::Flag,
     .scope = Scope::Tools, .defaultValue = "0",
     .doc = "perf tools: `1` corrupts rank 0's input for the checked run (to prove the check "
            "catches wrong results)"},
    {.knob = Knob::GlooStoreDir, .name = "LOOM_GLOO_STORE_DIR", .type = Type::Text,
     .scope = Scope::Tools, .format = "a directory", .defaultDoc = "`$TMPDIR` or `/tmp`",
     .doc = "gloo peer tools: the rendezvous directory all ranks share (see "
            "`perf/peers/README.md`)"},

    // ---- Tests ----
    {.knob = Knob::TestData, .name = "LOOM_TEST_DATA", .type = Type::Text, .scope = Scope::Tests,
     .format = "a directory",
     .doc = "`tests/data`"},
    {.knob = Knob::PerfDir, .name = "LOOM_PERF_DIR", .type = Type::Text, .scope = Scope::Tests,
     .format = "a directory",
     .doc = "the built perf tools"},
    {.knob = Knob::TopoExe, .name = "LOOM_TOPO_EXE", .type = Type::Text, .scope = Scope::Tests,
     .format = kPath,
     .doc = "the built `loom-topo`"},
    {.knob = Knob::HelloExe, .name = "LOOM_HELLO_EXE", .type = Type::Text, .scope = Scope::Tests,
     .format = kPath,
     .doc = "the built `hello_allreduce`"},
    {.knob = Knob::EnvExe, .name = "LOOM_ENV_EXE", .type = Type::Text, .scope = Scope::Tests,
     .format = kPath,
     .doc = "the built `loom-env`"},
    {.knob = Knob::SoakSeed, .name = "LOOM_SOAK_SEED", .type = Type::Text, .scope = Scope::Tests,
     .format = "an unsigned integer (C syntax)", .defaultDoc = "random",
     .doc = "`soak`: replays the seed a run printed"},
    {.knob = Knob::SoakIterations, .name = "LOOM_SOAK_ITERATIONS", .type = Type::Text,
     .scope = Scope::Tests, .format = "an unsigned integer (C syntax)", .defaultDoc = "`1000`",
     .doc = "`soak`: calls per run over shared memory (a third of them over TCP)"},
    {.knob = Knob::DeterministicGrid, .name = "LOOM_DETERMINISTIC_GRID", .type = Type::Text,
     .scope = Scope::Tests, .format = "`full` or `1m`", .defaultDoc = "unset",
     .doc = "`deterministic`: the whole grid (2-8 ranks, shm and TCP, counts to 16M; `1m`: to 1M+3) instead of CI's sample"},
    {.knob = Knob::DeviceGrid, .name = "LOOM_DEVICE_GRID", .type = Type::Text,
     .scope = Scope::Tests, .format = "`full` or `sample`", .defaultDoc = "unset",
     .doc = "`device`: `full` runs every type at every count (suite `long`), `sample` a few types "
            "and counts (CI's sanitizer stage), instead of CI's grid"},
    {.knob = Knob::DeviceRanksExe, .name = "LOOM_DEVICE_RANKS_EXE", .type = Type::Text,
     .scope = Scope::Tests, .format = kPath,
     .doc = "the built `device_ranks`, which `device_processes` starts through loomrun"},
};

// The enum and the table must agree entry by entry: entry(knob) indexes by it.
constexpr bool inKnobOrder() {
  for (size_t i = 0; i < std::size(kEntries); ++i) {
    if (static_cast<size_t>(kEntries[i].knob) != i) return false;
  }
  return true;
}
static_assert(inKnobOrder(), "kEntries must list the knobs in the order of enum Knob");
static_assert(std::size(kEntries) == static_cast<size_t>(Knob::DeviceRanksExe) + 1,
              "every Knob needs its entry");

}  // namespace

std::span<const Entry> entries() { return kEntries; }

const Entry& entry(Knob knob) { return kEntries[static_cast<size_t>(knob)]; }

const Entry* find(std::string_view name) {
  for (const Entry& candidate : kEntries) {
    if (name == candidate.name) return &candidate;
  }
  return nullptr;
}

}  // namespace loom::config
