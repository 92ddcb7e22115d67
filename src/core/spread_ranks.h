// SPDX-License-Identifier: Apache-2.0
// Where a rank starts out when the ranks on a host outnumber its cores.
//
// The kernel places busy-waiting ranks at random and rarely moves them again: every rank is
// always runnable and cache-hot, so its load balancer gives up on them for tens of
// milliseconds at a time. Measured with scheduler traces (4 ranks on 2 cores, sendrecv 8 B):
// a run spent 10-26% of its time with three ranks on one core and one on the other, and the
// rest in whichever pairing init happened to leave. A ring's neighbours on different cores
// (local rank i on the i-th allowed CPU mod the count, as `mpirun --bind-to core` and
// `loomrun --bind core` place them) pass messages while both run; neighbours sharing a core
// must switch for every message.
//
// So at init each oversubscribed rank moves its calling thread once to that CPU and then gives
// back the mask it had: the thread starts where it should and the kernel stays free to move it
// later (this is not binding). Once per process; LOOM_SPREAD_RANKS=0 leaves placement to the
// kernel.
#pragma once

#include <sched.h>

namespace loom {

// The CPU local rank `localIndex` starts on: the (localIndex mod count)-th CPU of `allowed`,
// or -1 when `allowed` is empty.
int spreadCpu(const cpu_set_t& allowed, int localIndex);

// Moves the calling thread to spreadCpu(its mask, localIndex) and gives back its mask. Returns
// the CPU it moved to, or -1: this process moved once already, its mask holds one CPU, or the
// kernel refused (the reason is logged at INFO). Never throws.
int spreadCallingThread(int localIndex);

}  // namespace loom
