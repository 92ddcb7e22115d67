# SPDX-License-Identifier: Apache-2.0
"""What the machine is, and whether anything else used its CPUs while a round ran.

This VM is shared with other work (builds, other benchmarks); a round that ran beside it gives
numbers that mean little. The check is exact rather than a load-average guess: all CPU time the
kernel counted (/proc/stat) minus the CPU time of this script and of every tool run it waited
for (their ranks included: launchers wait for their ranks, so rusage rolls up).
"""

import os
import platform


def describe():
    model = "?"
    try:
        with open("/proc/cpuinfo") as handle:
            model = next(line.split(":", 1)[1].strip() for line in handle
                         if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{platform.node()}: {os.cpu_count()} CPUs ({model}); load average {load}"


def _busy_cpu_seconds():
    """CPU seconds all processes spent running since boot: user, nice and system. Interrupt time
    is left out on both sides, as a process's rusage may not include the softirq time its own
    loopback TCP traffic causes."""
    try:
        with open("/proc/stat") as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    user, nice, system = (int(x) for x in fields[1:4])
    return (user + nice + system) / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds():
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


class CpuMeter:
    """Share of the machine's CPU time that others used between start() and stop()."""

    def start(self):
        self._busy, self._own = _busy_cpu_seconds(), _own_cpu_seconds()
        self._wall = os.times().elapsed

    def stop(self):
        """Others' CPU use as a fraction of all CPUs over the interval, or None if unknown."""
        busy = _busy_cpu_seconds()
        if busy is None or self._busy is None:
            return None
        wall = os.times().elapsed - self._wall
        others = (busy - self._busy) - (_own_cpu_seconds() - self._own)
        return max(0.0, others) / (wall * (os.cpu_count() or 1)) if wall > 0 else None
