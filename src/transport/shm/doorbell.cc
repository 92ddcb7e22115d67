#include "transport/shm/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace loom::transport {

namespace {
// Shared (not FUTEX_PRIVATE) because the word lives in memory mapped by several processes.
long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}
}  // namespace

void Doorbell::wake() {
  word_->sequence.fetch_add(1, std::memory_order_seq_cst);
  futex(&word_->sequence, FUTEX_WAKE, INT32_MAX, nullptr);
}

void Doorbell::wait(uint32_t seen, int timeoutUs) {
  timespec timeout{timeoutUs / 1000000, (timeoutUs % 1000000) * 1000L};
  futex(&word_->sequence, FUTEX_WAIT, seen, &timeout);  // EAGAIN/ETIMEDOUT/EINTR all fine
}

}  // namespace loom::transport
