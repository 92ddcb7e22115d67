// SPDX-License-Identifier: Apache-2.0
/* An ordinary NCCL program on device buffers: written against NVIDIA's nccl.h and linked with
 * libnccl.so.2, it knows nothing of Loom. tests/gpu/run.sh runs it on Loom's libnccl.so.2 (1 rank,
 * then 2 ranks sharing GPU 0, which NVIDIA's NCCL refuses) and on the machine's real NCCL
 * (1 rank), and compares the checksum lines of the two 1-rank runs.
 *
 *   nccl_device_program RANK NRANKS DIR
 *
 * One process per rank, every rank on GPU 0. DIR is a directory of this run: rank 0 calls
 * ncclGetUniqueId and writes the id to DIR/unique-id atomically (a temporary file, then rename);
 * the other ranks poll for it. Buffers are cudaMalloc'd, their data set by cudaMemcpyAsync on a
 * stream made with cudaStreamCreate, and every call takes that stream; after a bounded wait for
 * the stream the results are copied back and checked exactly (every value is a small integer, so
 * float32 sums are exact in any order), along with a guard after each receive buffer and the send
 * buffer, which must be unchanged. Operations: all-reduce (sum, max), all-gather,
 * reduce-scatter, broadcast (root NRANKS-1), reduce (sum, root 0), grouped ncclSend/ncclRecv to
 * both neighbours, ncclAlltoAll (found with dlsym: a library older than NCCL 2.28 has none, and
 * the same exchange then runs as grouped ncclSend/ncclRecv, with a note); each of float32 and
 * int32, counts 1, 1001 and 1<<20.
 *
 * Output, each line prefixed "rank R/N: ":
 *   ncclGetVersion <code>
 *   checksum <operation> <type> count <count> <FNV-1a 64 of the received bytes>
 *     (one per operation; the same on every library, since the results are exact)
 *   libnccl: <path>   (every mapped file whose basename starts with libnccl, from /proc/self/maps)
 *   passed <k> operations   |   <k> of <m> operations WRONG
 * Environment: NCCL_DEVICE_PROGRAM_TIMEOUT_S bounds the whole run (default 60; past it the
 * process says where it was and exits 3); the unique id is waited for at most 30 s.
 * Exit status: 0 passed; 1 a call failed or a result was wrong; 2 usage; 3 watchdog; 77 no GPU
 * (the reason printed). */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <errno.h>
#include <nccl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace {

char g_who[48] = "?";
const char* volatile g_where = "start";
ncclComm_t g_comm = nullptr;  // for ncclGetLastError once the communicator exists
int g_rank = 0, g_n = 1;

constexpr double kIdWaitSeconds = 30;
constexpr double kStreamWaitSeconds = 30;
constexpr size_t kGuardBytes = 256;
constexpr unsigned char kFill = 0xA5;  // receive buffers and guards before every call

double nowSeconds() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

void writeAll(const char* text) {  // async-signal-safe, for the watchdog
  size_t left = strlen(text);
  while (left > 0) {
    const ssize_t n = write(2, text, left);
    if (n <= 0) return;
    text += n;
    left -= (size_t)n;
  }
}

void onWatchdog(int) {
  writeAll(g_who);
  writeAll(": TIMEOUT: the run went on past NCCL_DEVICE_PROGRAM_TIMEOUT_S, last in ");
  writeAll(g_where);
  writeAll("\n");
  _exit(3);
}

[[noreturn]] void die(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void die(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "%s: FAILED: ", g_who);
  vfprintf(stderr, fmt, args);
  fprintf(stderr, "\n");
  va_end(args);
  fflush(nullptr);
  exit(1);
}

void printLoadedLibnccl();

void failNccl(const char* call, int line, ncclResult_t result) {
  const char* last = ncclGetLastError(g_comm);
  fprintf(stderr, "%s: FAILED %s at line %d: result %d (%s): %s\n", g_who, call, line, (int)result,
          ncclGetErrorString(result), last != nullptr && last[0] != '\0' ? last : "(no last error)");
  fflush(nullptr);
  printLoadedLibnccl();  // which library said so
  exit(1);
}

void failCuda(const char* call, int line, cudaError_t error) {
  fprintf(stderr, "%s: FAILED %s at line %d: %s: %s\n", g_who, call, line, cudaGetErrorName(error),
          cudaGetErrorString(error));
  fflush(nullptr);
  exit(1);
}

}  // namespace

#define NCHECK(call)                                                     \
  do {                                                                   \
    g_where = #call;                                                     \
    const ncclResult_t ncheck_ = (call);                                 \
    if (ncheck_ != ncclSuccess) failNccl(#call, __LINE__, ncheck_);      \
  } while (0)
#define CCHECK(call)                                                     \
  do {                                                                   \
    g_where = #call;                                                     \
    const cudaError_t ccheck_ = (call);                                  \
    if (ccheck_ != cudaSuccess) failCuda(#call, __LINE__, ccheck_);      \
  } while (0)

namespace {

// ncclAlltoAll is NCCL 2.28's: looked up at run time, so the program builds against an older
// nccl.h and runs on an older library.
using AlltoAllFn = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
AlltoAllFn g_alltoall = nullptr;

void publishId(const char* dir, const ncclUniqueId& id) {
  char tmp[4096], path[4096];
  snprintf(tmp, sizeof tmp, "%s/unique-id.tmp.%d", dir, (int)getpid());
  snprintf(path, sizeof path, "%s/unique-id", dir);
  FILE* f = fopen(tmp, "wb");
  if (f == nullptr) die("cannot write %s: %s", tmp, strerror(errno));
  if (fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0) die("cannot write %s: %s", tmp, strerror(errno));
  if (rename(tmp, path) != 0) die("cannot rename %s to %s: %s", tmp, path, strerror(errno));
}

void fetchId(const char* dir, ncclUniqueId* id) {
  char path[4096];
  snprintf(path, sizeof path, "%s/unique-id", dir);
  g_where = "waiting for DIR/unique-id from rank 0";
  const double deadline = nowSeconds() + kIdWaitSeconds;
  for (;;) {
    FILE* f = fopen(path, "rb");
    if (f != nullptr) {
      const size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1) return;
      die("%s is shorter than an ncclUniqueId", path);  // renamed into place whole: never partial
    }
    if (errno != ENOENT) die("cannot read %s: %s", path, strerror(errno));
    if (nowSeconds() > deadline) die("no unique id from rank 0 in %s after %.0f s", path, kIdWaitSeconds);
    usleep(10000);
  }
}

// cudaStreamSynchronize with a bound: polls the stream, then synchronizes (at once) for its error.
void syncStream(cudaStream_t stream, const char* what) {
  g_where = what;
  const double deadline = nowSeconds() + kStreamWaitSeconds;
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream);
    if (state == cudaSuccess) break;
    if (state != cudaErrorNotReady) failCuda("cudaStreamQuery", __LINE__, state);
    if (nowSeconds() > deadline) die("%s: the stream still has work after %.0f s", what, kStreamWaitSeconds);
    usleep(100);
  }
  CCHECK(cudaStreamSynchronize(stream));
}

void printLoadedLibnccl() {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == nullptr) die("cannot read /proc/self/maps: %s", strerror(errno));
  char line[8192];
  std::vector<std::string> printed;
  while (fgets(line, sizeof line, maps) != nullptr) {
    char* path = strchr(line, '/');
    if (path == nullptr) continue;
    path[strcspn(path, "\n")] = '\0';
    const char* base = strrchr(path, '/') + 1;
    if (strncmp(base, "libnccl", 7) != 0) continue;
    bool seen = false;  // a library is mapped in several segments: each file once
    for (const std::string& p : printed) seen = seen || p == path;
    if (seen) continue;
    printed.emplace_back(path);
    printf("%s: libnccl: %s\n", g_who, path);
  }
  fclose(maps);
  if (printed.empty()) printf("%s: libnccl: none mapped\n", g_who);
  fflush(stdout);
}

enum Kind { kAllReduceSum, kAllReduceMax, kAllGather, kReduceScatter, kBroadcast, kReduce, kSendRecv, kAlltoAll, kKinds };
const char* const kKindNames[kKinds] = {"allreduce-sum", "allreduce-max", "allgather", "reducescatter",
                                        "broadcast",     "reduce",        "sendrecv",  "alltoall"};

// The value rank r puts at element j of its send buffer: an integer in [-500, 508], so sums of
// a few hundred ranks are exact in float32, whatever the order of the additions.
inline int64_t value(int seed, int r, size_t j) {
  return (int64_t)((j * 7 + (size_t)r * 13 + (size_t)seed * 31) % 1009) - 500;
}

struct Buffers {
  void* send = nullptr;  // device
  void* recv = nullptr;  // device
  size_t bytes = 0;      // each, guard included
  std::vector<unsigned char> hostSend, hostRecv, hostCheck;
};

void put(std::vector<unsigned char>& host, ncclDataType_t type, size_t i, int64_t v) {
  if (type == ncclFloat32) {
    const float f = (float)v;
    memcpy(host.data() + i * 4, &f, 4);
  } else {
    const int32_t x = (int32_t)v;
    memcpy(host.data() + i * 4, &x, 4);
  }
}

// The element as an integer; a float that is not one (an unwritten 0xA5 pattern) gives a value
// no check expects.
int64_t get(const std::vector<unsigned char>& host, ncclDataType_t type, size_t i) {
  if (type == ncclFloat32) {
    float f;
    memcpy(&f, host.data() + i * 4, 4);
    if (!(f > -1e9f && f < 1e9f) || (float)(int64_t)f != f) return INT64_MIN;
    return (int64_t)f;
  }
  int32_t x;
  memcpy(&x, host.data() + i * 4, 4);
  return x;
}

uint64_t fnv1a(const unsigned char* data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= data[i];
    h *= 1099511628211ull;
  }
  return h;
}

// One operation: uploads, runs it on `stream`, waits, downloads, checks; prints its checksum
// line. Returns whether it was right.
bool runOp(Kind kind, ncclDataType_t type, size_t count, Buffers& b, cudaStream_t stream) {
  const int n = g_n, rank = g_rank;
  const int seed = (int)kind * 2 + (type == ncclFloat32 ? 1 : 0);
  const int right = (rank + 1) % n, left = (rank - 1 + n) % n;
  const int bcastRoot = n - 1, reduceRoot = 0;
  size_t sendElems = count, recvElems = count;
  switch (kind) {
    case kAllGather: recvElems = count * (size_t)n; break;
    case kReduceScatter: sendElems = count * (size_t)n; break;
    case kSendRecv: sendElems = recvElems = 2 * count; break;  // [to right | to left], [from left | from right]
    case kAlltoAll: sendElems = recvElems = count * (size_t)n; break;
    default: break;
  }
  const size_t sendBytes = sendElems * 4, recvBytes = recvElems * 4;
  char what[160];
  snprintf(what, sizeof what, "%s %s count %zu", kKindNames[kind], type == ncclFloat32 ? "float32" : "int32", count);
  g_where = what;

  b.hostSend.assign(sendBytes, 0);
  for (size_t j = 0; j < sendElems; ++j) put(b.hostSend, type, j, value(seed, rank, j));
  CCHECK(cudaMemcpyAsync(b.send, b.hostSend.data(), sendBytes, cudaMemcpyHostToDevice, stream));
  CCHECK(cudaMemsetAsync(static_cast<char*>(b.send) + sendBytes, kFill, kGuardBytes, stream));
  CCHECK(cudaMemsetAsync(b.recv, kFill, recvBytes + kGuardBytes, stream));
  const void* s = b.send;
  void* r = b.recv;
  const size_t es = 4;
  switch (kind) {
    case kAllReduceSum: NCHECK(ncclAllReduce(s, r, count, type, ncclSum, g_comm, stream)); break;
    case kAllReduceMax: NCHECK(ncclAllReduce(s, r, count, type, ncclMax, g_comm, stream)); break;
    case kAllGather: NCHECK(ncclAllGather(s, r, count, type, g_comm, stream)); break;
    case kReduceScatter: NCHECK(ncclReduceScatter(s, r, count, type, ncclSum, g_comm, stream)); break;
    case kBroadcast: NCHECK(ncclBroadcast(s, r, count, type, bcastRoot, g_comm, stream)); break;
    case kReduce: NCHECK(ncclReduce(s, r, count, type, ncclSum, reduceRoot, g_comm, stream)); break;
    case kSendRecv:
      // Two messages to the same peer (2 ranks: left == right; 1 rank: itself) match in the order
      // they were issued: the first send to a peer meets that peer's first receive from us.
      NCHECK(ncclGroupStart());
      NCHECK(ncclSend(s, count, type, right, g_comm, stream));
      NCHECK(ncclSend(static_cast<const char*>(s) + count * es, count, type, left, g_comm, stream));
      NCHECK(ncclRecv(r, count, type, left, g_comm, stream));
      NCHECK(ncclRecv(static_cast<char*>(r) + count * es, count, type, right, g_comm, stream));
      NCHECK(ncclGroupEnd());
      break;
    case kAlltoAll:
      if (g_alltoall != nullptr) {
        NCHECK(g_alltoall(s, r, count, type, g_comm, stream));
      } else {
        NCHECK(ncclGroupStart());
        for (int p = 0; p < n; ++p) {
          NCHECK(ncclSend(static_cast<const char*>(s) + (size_t)p * count * es, count, type, p, g_comm, stream));
          NCHECK(ncclRecv(static_cast<char*>(r) + (size_t)p * count * es, count, type, p, g_comm, stream));
        }
        NCHECK(ncclGroupEnd());
      }
      break;
    default: die("unknown operation %d", (int)kind);
  }
  syncStream(stream, what);

  b.hostRecv.assign(recvBytes + kGuardBytes, 0);
  b.hostCheck.assign(sendBytes + kGuardBytes, 0);
  CCHECK(cudaMemcpy(b.hostRecv.data(), b.recv, recvBytes + kGuardBytes, cudaMemcpyDeviceToHost));
  CCHECK(cudaMemcpy(b.hostCheck.data(), b.send, sendBytes + kGuardBytes, cudaMemcpyDeviceToHost));

  int wrong = 0;
  auto report = [&](const char* fmt, size_t i, int64_t got, int64_t want) {
    if (++wrong <= 5) {
      fprintf(stderr, "%s: WRONG %s: ", g_who, what);
      fprintf(stderr, fmt, i);
      fprintf(stderr, " holds %lld, expected %lld\n", (long long)got, (long long)want);
    }
  };
  const bool checksRecv = !(kind == kReduce && rank != reduceRoot);  // NCCL writes recvbuff on the root only
  if (checksRecv) {
    for (size_t i = 0; i < recvElems; ++i) {
      int64_t want = 0;
      switch (kind) {
        case kAllReduceSum: case kReduce:
          for (int p = 0; p < n; ++p) want += value(seed, p, i);
          break;
        case kAllReduceMax:
          want = value(seed, 0, i);
          for (int p = 1; p < n; ++p) want = value(seed, p, i) > want ? value(seed, p, i) : want;
          break;
        case kAllGather: want = value(seed, (int)(i / count), i % count); break;
        case kReduceScatter:
          for (int p = 0; p < n; ++p) want += value(seed, p, (size_t)rank * count + i);
          break;
        case kBroadcast: want = value(seed, bcastRoot, i); break;
        case kSendRecv:
          want = i < count ? value(seed, left, i) : value(seed, right, i);  // left's first half, right's second
          break;
        case kAlltoAll: want = value(seed, (int)(i / count), (size_t)rank * count + i % count); break;
        default: break;
      }
      const int64_t got = get(b.hostRecv, type, i);
      if (got != want) report("recvbuff[%zu]", i, got, want);
    }
  }
  for (size_t i = 0; i < kGuardBytes; ++i) {
    if (b.hostRecv[recvBytes + i] != kFill) {
      report("the guard byte %zu after recvbuff", i, b.hostRecv[recvBytes + i], kFill);
      break;
    }
  }
  for (size_t i = 0; i < sendBytes; ++i) {
    if (b.hostCheck[i] != b.hostSend[i]) {  // an input must come back unchanged
      report("sendbuff's byte %zu (changed)", i, b.hostCheck[i], b.hostSend[i]);
      break;
    }
  }
  for (size_t i = 0; i < kGuardBytes; ++i) {
    if (b.hostCheck[sendBytes + i] != kFill) {
      report("the guard byte %zu after sendbuff", i, b.hostCheck[sendBytes + i], kFill);
      break;
    }
  }
  if (wrong > 5) fprintf(stderr, "%s: WRONG %s: %d wrong in all\n", g_who, what, wrong);
  if (checksRecv) {
    printf("%s: checksum %s %016llx\n", g_who, what, (unsigned long long)fnv1a(b.hostRecv.data(), recvBytes));
  } else {
    printf("%s: checksum %s (not the root: recvbuff unused)\n", g_who, what);
  }
  fflush(stdout);
  return wrong == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s RANK NRANKS DIR\n", argv[0]);
    return 2;
  }
  char* end = nullptr;
  g_rank = (int)strtol(argv[1], &end, 10);
  const bool rankOk = *end == '\0';
  g_n = (int)strtol(argv[2], &end, 10);
  if (!rankOk || *end != '\0' || g_n < 1 || g_n > 256 || g_rank < 0 || g_rank >= g_n) {
    fprintf(stderr, "usage: %s RANK NRANKS DIR (0 <= RANK < NRANKS <= 256)\n", argv[0]);
    return 2;
  }
  const char* dir = argv[3];
  snprintf(g_who, sizeof g_who, "rank %d/%d", g_rank, g_n);
  setvbuf(stdout, nullptr, _IOLBF, 0);

  const char* limit = getenv("NCCL_DEVICE_PROGRAM_TIMEOUT_S");
  signal(SIGALRM, onWatchdog);
  alarm(limit != nullptr && atoi(limit) > 0 ? (unsigned)atoi(limit) : 60u);

  int devices = 0;
  g_where = "cudaGetDeviceCount";
  const cudaError_t counted = cudaGetDeviceCount(&devices);
  if (counted != cudaSuccess || devices == 0) {
    printf("%s: skipped: no GPU (cudaGetDeviceCount: %s)\n", g_who,
           counted != cudaSuccess ? cudaGetErrorString(counted) : "0 devices");
    return 77;
  }
  CCHECK(cudaSetDevice(0));  // every rank on GPU 0: several ranks on one GPU
  cudaStream_t stream = nullptr;
  CCHECK(cudaStreamCreate(&stream));

  int version = 0;
  NCHECK(ncclGetVersion(&version));
  printf("%s: ncclGetVersion %d\n", g_who, version);
  g_alltoall = reinterpret_cast<AlltoAllFn>(dlsym(RTLD_DEFAULT, "ncclAlltoAll"));
  if (g_alltoall == nullptr)
    printf("%s: note: this libnccl has no ncclAlltoAll (NCCL < 2.28): all-to-all runs as grouped ncclSend/ncclRecv\n",
           g_who);

  ncclUniqueId id;
  if (g_rank == 0) {
    NCHECK(ncclGetUniqueId(&id));
    publishId(dir, id);
  } else {
    fetchId(dir, &id);
  }
  const double initStart = nowSeconds();
  NCHECK(ncclCommInitRank(&g_comm, g_n, id, g_rank));
  int count = -1, user = -1, device = -1;
  NCHECK(ncclCommCount(g_comm, &count));
  NCHECK(ncclCommUserRank(g_comm, &user));
  NCHECK(ncclCommCuDevice(g_comm, &device));
  if (count != g_n || user != g_rank || device != 0)
    die("the communicator says rank %d of %d on device %d, expected rank %d of %d on device 0", user, count, device,
        g_rank, g_n);
  printf("%s: ncclCommInitRank on GPU 0 in %.3f s\n", g_who, nowSeconds() - initStart);

  const size_t counts[] = {1, 1001, (size_t)1 << 20};
  const ncclDataType_t types[] = {ncclFloat32, ncclInt32};
  const size_t most = (size_t)(g_n > 2 ? g_n : 2) * ((size_t)1 << 20) * 4 + kGuardBytes;
  Buffers b;
  b.bytes = most;
  CCHECK(cudaMalloc(&b.send, most));
  CCHECK(cudaMalloc(&b.recv, most));

  const double opsStart = nowSeconds();
  int ops = 0, wrongOps = 0;
  for (int k = 0; k < kKinds; ++k)
    for (ncclDataType_t type : types)
      for (size_t c : counts) {
        ++ops;
        if (!runOp((Kind)k, type, c, b, stream)) ++wrongOps;
      }
  const double opsSeconds = nowSeconds() - opsStart;

  printLoadedLibnccl();
  CCHECK(cudaFree(b.send));
  CCHECK(cudaFree(b.recv));
  NCHECK(ncclCommFinalize(g_comm));
  NCHECK(ncclCommDestroy(g_comm));
  g_comm = nullptr;
  CCHECK(cudaStreamDestroy(stream));
  if (wrongOps > 0) {
    printf("%s: %d of %d operations WRONG\n", g_who, wrongOps, ops);
    return 1;
  }
  printf("%s: passed %d operations in %.3f s\n", g_who, ops, opsSeconds);
  return 0;
}
