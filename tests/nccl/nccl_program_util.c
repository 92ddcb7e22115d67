// SPDX-License-Identifier: Apache-2.0
/* Helpers of the ordinary NCCL program (see nccl_program_util.h). */
#define _GNU_SOURCE
#include "nccl_program_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char g_who[32] = "?";

static const char* volatile g_where = "start";
static int g_wrong = 0;
enum { kGuardBytes = 64, kGuardByte = 0xA5, kHeaderBytes = 64 };

double nowSeconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static void writeAll(const char* text) {
  /* async-signal-safe output for the watchdog */
  size_t left = strlen(text);
  while (left > 0) {
    ssize_t n = write(2, text, left);
    if (n <= 0) return;
    text += n;
    left -= (size_t)n;
  }
}

static void onWatchdog(int signal) {
  (void)signal;
  writeAll(g_who);
  writeAll(": TIMEOUT: the run went on past its watchdog, last in ");
  writeAll(__atomic_load_n(&g_where, __ATOMIC_RELAXED));
  writeAll("\n");
  _exit(3);
}

void startWatchdog(int seconds) {
  signal(SIGALRM, onWatchdog);
  alarm((unsigned)seconds);
}

void watchdogWhere(const char* what) { __atomic_store_n(&g_where, what, __ATOMIC_RELAXED); }

void failCall(const char* call, const char* file, int line, ncclResult_t result, ncclComm_t comm) {
  const char* last = ncclGetLastError(comm);
  fprintf(stderr, "%s: FAILED %s at %s:%d: result %d (%s): %s\n", g_who, call, file, line, (int)result,
          ncclGetErrorString(result), last != NULL ? last : "(null)");
  fflush(NULL);
  exit(1);
}

void awaitReady(ncclComm_t comm, const char* what, double seconds) {
  watchdogWhere(what);
  const double deadline = nowSeconds() + seconds;
  for (;;) {
    ncclResult_t state = ncclInProgress;
    ncclResult_t result = ncclCommGetAsyncError(comm, &state);
    if (result != ncclSuccess) failCall("ncclCommGetAsyncError", __FILE__, __LINE__, result, comm);
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) failCall(what, __FILE__, __LINE__, state, comm);
    if (nowSeconds() > deadline) die("%s still in progress after %.0f s", what, seconds);
    usleep(1000);
  }
}

void reportWrong(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "%s: WRONG ", g_who);
  vfprintf(stderr, fmt, args);
  fprintf(stderr, "\n");
  va_end(args);
  ++g_wrong;
}

int wrongResults(void) { return g_wrong; }

void die(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "%s: FAILED ", g_who);
  vfprintf(stderr, fmt, args);
  fprintf(stderr, "\n");
  va_end(args);
  fflush(NULL);
  exit(1);
}

static void idPath(char* out, size_t size, const char* dir, const char* tag, const char* suffix) {
  if (snprintf(out, size, "%s/%s%s", dir, tag, suffix) >= (int)size) die("path too long: %s/%s", dir, tag);
}

static void writeFileAtomically(const char* dir, const char* tag, const char* suffix, const void* data,
                                size_t bytes) {
  char path[4096], tmp[4200];
  idPath(path, sizeof path, dir, tag, suffix);
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) die("cannot create %s: %s", tmp, strerror(errno));
  if (bytes > 0 && write(fd, data, bytes) != (ssize_t)bytes) die("cannot write %s: %s", tmp, strerror(errno));
  close(fd);
  /* rename is atomic: a reader sees no file or the whole id, never a part of it */
  if (rename(tmp, path) != 0) die("cannot rename %s: %s", tmp, strerror(errno));
}

/* Polls for DIR/TAG+SUFFIX; reads up to `bytes` of it when `data` is given. */
static void awaitFile(const char* dir, const char* tag, const char* suffix, void* data, size_t bytes,
                      double seconds) {
  char path[4096];
  idPath(path, sizeof path, dir, tag, suffix);
  watchdogWhere(tag);
  const double deadline = nowSeconds() + seconds;
  for (;;) {
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
      ssize_t got = data != NULL ? read(fd, data, bytes) : 0;
      close(fd);
      if (got != (ssize_t)(data != NULL ? bytes : 0)) die("%s holds %zd bytes, not %zu", path, got, bytes);
      return;
    }
    if (nowSeconds() > deadline) die("no %s after %.0f s (is the rank that writes it running?)", path, seconds);
    usleep(2000);
  }
}

void publishId(const char* dir, const char* tag, const ncclUniqueId* id) {
  writeFileAtomically(dir, tag, ".id", id, sizeof *id);
}

void fetchId(const char* dir, const char* tag, ncclUniqueId* id, double seconds) {
  awaitFile(dir, tag, ".id", id, sizeof *id, seconds);
}

void publishFlag(const char* dir, const char* tag) { writeFileAtomically(dir, tag, ".flag", NULL, 0); }

void awaitFlag(const char* dir, const char* tag, double seconds) {
  awaitFile(dir, tag, ".flag", NULL, 0, seconds);
}

void printLoadedLibnccl(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) die("cannot read /proc/self/maps: %s", strerror(errno));
  char line[8192], printed[16][4096];
  int nPrinted = 0;
  while (fgets(line, sizeof line, maps) != NULL) {
    char* path = strchr(line, '/');
    if (path == NULL) continue;
    path[strcspn(path, "\n")] = '\0';
    const char* base = strrchr(path, '/') + 1;
    if (strncmp(base, "libnccl", 7) != 0) continue;
    int seen = 0;  /* a library is mapped in several segments: print each file once */
    for (int i = 0; i < nPrinted; ++i) seen |= strcmp(printed[i], path) == 0;
    if (seen) continue;
    printf("%s: libnccl: %s\n", g_who, path);
    if (nPrinted < 16) snprintf(printed[nPrinted++], sizeof printed[0], "%s", path);
  }
  fclose(maps);
  if (nPrinted == 0) printf("%s: libnccl: none mapped\n", g_who);
  fflush(stdout);
}

size_t typeSize(ncclDataType_t type) {
  switch (type) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: die("typeSize: datatype %d", (int)type);
  }
}

const char* typeName(ncclDataType_t type) {
  static const char* const names[] = {"int8",    "uint8",   "int32",   "uint32",  "int64",  "uint64",
                                      "float16", "float32", "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};
  return (int)type >= 0 && (int)type < 12 ? names[type] : "?";
}

int typeIsSigned(ncclDataType_t type) {
  return type != ncclUint8 && type != ncclUint32 && type != ncclUint64;
}

int typeIsFloat(ncclDataType_t type) {
  return type == ncclFloat16 || type == ncclFloat32 || type == ncclFloat64 || type == ncclBfloat16;
}

static uint32_t floatBits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

static float bitsFloat(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

/* Exact for the values used here (normal numbers with at most 10 significant bits, or zero):
 * the program never needs rounding, so none is implemented. */
static uint16_t toHalf(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
  if ((bits & 0x7fffffffu) == 0) return sign;
  int exponent = (int)((bits >> 23) & 0xff) - 127 + 15;
  if (exponent <= 0 || exponent >= 31 || (bits & 0x1fffu) != 0) die("toHalf: %g is not exact in float16", value);
  return (uint16_t)(sign | (exponent << 10) | ((bits >> 13) & 0x3ffu));
}

static float fromHalf(uint16_t half) {
  uint32_t sign = (uint32_t)(half & 0x8000u) << 16;
  int exponent = (half >> 10) & 0x1f;
  uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0 && mantissa == 0) return bitsFloat(sign);
  if (exponent == 0) return (sign ? -1.0f : 1.0f) * (float)mantissa * (1.0f / 16777216.0f);  /* subnormal */
  if (exponent == 31) return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  return bitsFloat(sign | ((uint32_t)(exponent - 15 + 127) << 23) | (mantissa << 13));
}

void putValue(void* buf, ncclDataType_t type, size_t i, double value) {
  switch (type) {
    case ncclInt8: ((int8_t*)buf)[i] = (int8_t)value; break;
    case ncclUint8: ((uint8_t*)buf)[i] = (uint8_t)value; break;
    case ncclInt32: ((int32_t*)buf)[i] = (int32_t)value; break;
    case ncclUint32: ((uint32_t*)buf)[i] = (uint32_t)value; break;
    case ncclInt64: ((int64_t*)buf)[i] = (int64_t)value; break;
    case ncclUint64: ((uint64_t*)buf)[i] = (uint64_t)value; break;
    case ncclFloat16: ((uint16_t*)buf)[i] = toHalf((float)value); break;
    case ncclFloat32: ((float*)buf)[i] = (float)value; break;
    case ncclFloat64: ((double*)buf)[i] = value; break;
    case ncclBfloat16: {
      uint32_t bits = floatBits((float)value);
      if ((bits & 0xffffu) != 0) die("putValue: %g is not exact in bfloat16", value);
      ((uint16_t*)buf)[i] = (uint16_t)(bits >> 16);
      break;
    }
    default: die("putValue: datatype %d", (int)type);
  }
}

double getValue(const void* buf, ncclDataType_t type, size_t i) {
  switch (type) {
    case ncclInt8: return ((const int8_t*)buf)[i];
    case ncclUint8: return ((const uint8_t*)buf)[i];
    case ncclInt32: return ((const int32_t*)buf)[i];
    case ncclUint32: return ((const uint32_t*)buf)[i];
    case ncclInt64: return (double)((const int64_t*)buf)[i];
    case ncclUint64: return (double)((const uint64_t*)buf)[i];
    case ncclFloat16: return fromHalf(((const uint16_t*)buf)[i]);
    case ncclFloat32: return ((const float*)buf)[i];
    case ncclFloat64: return ((const double*)buf)[i];
    case ncclBfloat16: return bitsFloat((uint32_t)((const uint16_t*)buf)[i] << 16);
    default: die("getValue: datatype %d", (int)type);
  }
}

/* The size is kept in a header before the data, so guardIntact and freeBuffer need only the
 * pointer; the header keeps the data 64-byte aligned. */
void* allocBuffer(size_t bytes) {
  unsigned char* block = NULL;
  if (posix_memalign((void**)&block, 64, kHeaderBytes + bytes + kGuardBytes) != 0) die("out of memory (%zu B)", bytes);
  memcpy(block, &bytes, sizeof bytes);
  memset(block + kHeaderBytes, 0x5A, bytes);
  memset(block + kHeaderBytes + bytes, kGuardByte, kGuardBytes);
  return block + kHeaderBytes;
}

int guardIntact(const void* buf) {
  const unsigned char* block = (const unsigned char*)buf - kHeaderBytes;
  size_t size;
  memcpy(&size, block, sizeof size);
  for (size_t i = 0; i < kGuardBytes; ++i)
    if (((const unsigned char*)buf)[size + i] != kGuardByte) return 0;
  return 1;
}

void freeBuffer(void* buf) {
  if (buf != NULL) free((unsigned char*)buf - kHeaderBytes);
}
