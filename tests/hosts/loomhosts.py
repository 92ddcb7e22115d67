# SPDX-License-Identifier: Apache-2.0
"""K hosts on one machine, for testing Loom across hosts without a cluster.

Each host is a sandbox made by `unshare --net --pid --mount --uts`: its own network stack with
one address on a shared Linux bridge, its own hostname, its own PID namespace with its own
/proc, and a private /dev/shm. A rank on one host cannot see another host's processes, so it
can neither open their memfds through /proc/<pid>/fd nor read their memory with
process_vm_readv: a bug that uses shared memory across hosts fails here as it would on a
cluster. The bridge lives in a sandbox of its own, so nothing touches the machine's network,
and everything goes away with the sandboxes' processes.

    with Cluster(2) as cluster:                       # 2 hosts on a bridge
        job = cluster.launch(Layout.parse("2x2"), ["prog", "arg"])
        results = job.wait(timeout=60)                # [(rank, returncode, stdout, stderr)]

Layouts: "2x2" (2 hosts x 2 ranks, ranks 0-1 on host 0), "2x2/cyclic" (ranks 0 and 2 on host
0, 1 and 3 on host 1, as `srun --distribution=cyclic` places them) and "2+1" (2 ranks on host
0, 1 on host 1). Ranks get the launcher environment `loomCommInitFromEnv` reads: torchrun's
(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, ...), mpirun's (OMPI_COMM_WORLD_RANK, ...,
LOOM_COMM_ID) or loomrun's (LOOM_RANK, LOOM_WORLD_SIZE, LOOM_COMM_ID). Needs root; `skip_reason()` says why not where it cannot run.
"""
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time

SUBNET = "10.93.0."
MASTER_PORT = 29400


def _run(argv, check=True, timeout=30):
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=timeout)


def skip_reason():
    """Why the harness cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root to create namespaces and a bridge"
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            return "%s is not installed" % tool
    probe = _run(["unshare", "--net", "--pid", "--mount", "--uts", "--fork", "--mount-proc", "--",
                  "ip", "link", "add", "probe0", "type", "bridge"], check=False)
    if probe.returncode != 0:
        return "cannot create namespaces with a bridge here: " + (probe.stderr or probe.stdout).strip()
    return None


class Layout:
    """Which host each rank runs on: hosts[h] lists host h's ranks in local-rank order."""

    def __init__(self, hosts, name):
        self.hosts = hosts
        self.name = name
        self.nranks = sum(len(ranks) for ranks in hosts)
        self.host_of = {rank: h for h, ranks in enumerate(hosts) for rank in ranks}

    @staticmethod
    def parse(text):
        """ "KxR" (host-major), "KxR/cyclic" (interleaved) or "A+B+..." (ranks per host)."""
        shape, _, placement = text.partition("/")
        if "x" in shape:
            k, r = (int(part) for part in shape.split("x"))
            counts = [r] * k
        else:
            counts = [int(part) for part in shape.split("+")]
        if placement == "cyclic":
            if len(set(counts)) != 1:
                raise ValueError("cyclic placement needs the same rank count on every host: " + text)
            hosts = [[rank for rank in range(sum(counts)) if rank % len(counts) == h] for h in range(len(counts))]
        elif placement == "":
            first = [sum(counts[:h]) for h in range(len(counts))]
            hosts = [list(range(first[h], first[h] + counts[h])) for h in range(len(counts))]
        else:
            raise ValueError("unknown placement '%s' in %s" % (placement, text))
        return Layout(hosts, text)


class Host:
    """One sandbox: `init` is its PID 1 as the machine numbers it."""

    def __init__(self, index, name, address, launcher, init):
        self.index, self.name, self.address = index, name, address
        self.launcher, self.init = launcher, init
        self.killed = False

    def enter(self):
        """The command prefix that runs a program inside this host."""
        return ["nsenter", "--target", str(self.init), "--net", "--mount", "--uts", "--pid", "--"]


class Job:
    """A job's rank processes. Each rank's output goes to files, not pipes: a rank that fills a
    pipe no one reads yet would stall its collectives and so every other rank."""

    def __init__(self, processes, outputs, layout):
        self.processes, self.outputs, self.layout = processes, outputs, layout

    def output(self, rank):
        """What rank `rank` has written so far: (stdout, stderr)."""
        texts = []
        for stream in self.outputs[rank]:
            stream.seek(0)
            texts.append(stream.read())
        return tuple(texts)

    def wait_for_line(self, rank, text, timeout):
        """Until rank `rank` has printed a line containing `text`; False at the timeout or when the
        rank has exited without it."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if text in self.output(rank)[0]:
                return True
            if self.processes[rank].poll() is not None:
                return text in self.output(rank)[0]
            time.sleep(0.02)
        return False

    def kill(self, rank):
        # nsenter forks the rank into the host's PID namespace: kill its whole process group,
        # which crosses the namespace, not only nsenter.
        try:
            os.killpg(self.processes[rank].pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self, timeout):
        """Waits for every rank (killing those still running at the deadline: returncode None).
        Returns [(rank, returncode, stdout, stderr)] in rank order."""
        deadline = time.time() + timeout
        results = []
        for rank, process in enumerate(self.processes):
            try:
                process.wait(timeout=max(0.1, deadline - time.time()))
                code = process.returncode
            except subprocess.TimeoutExpired:
                self.kill(rank)
                process.wait()
                code = None
            out, err = self.output(rank)
            results.append((rank, code, out, err))
        for streams in self.outputs:
            for stream in streams:
                stream.close()
        return results


class Cluster:
    def __init__(self, nhosts, prefix="loomhost"):
        self.nhosts = nhosts
        self.prefix = prefix
        self.hosts = []
        self._switch = None
        self._sandboxes = []

    # ---- set-up and tear-down ----------------------------------------------------------------
    def __enter__(self):
        try:
            self._make_switch()
            for index in range(self.nhosts):
                self._make_host(index)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        # A host's PID 1 outlives its `unshare` (which only waits for it): kill it, and the
        # kernel kills every process left in that host.
        for host in self.hosts:
            if host.killed:
                continue  # its pid may belong to another process by now
            try:
                os.kill(host.init, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for sandbox in self._sandboxes:
            if sandbox.poll() is None:
                sandbox.kill()
            sandbox.wait()
        self._sandboxes = []
        self.hosts = []

    def _make_switch(self):
        # The bridge's own network namespace: `unshare` execs sleep in place, so its pid is the
        # namespace's holder.
        self._switch = subprocess.Popen(["unshare", "--net", "--", "sleep", "infinity"])
        self._sandboxes.append(self._switch)
        self._wait_for_namespace(self._switch.pid, "net")
        self.switch_ip(["link", "add", "br0", "type", "bridge"])
        self.switch_ip(["link", "set", "br0", "up"])

    def _make_host(self, index):
        name = "%s%d" % (self.prefix, index)
        setup = "hostname %s && mount -t tmpfs -o size=1g tmpfs /dev/shm && echo ready && exec sleep infinity" % name
        launcher = subprocess.Popen(["unshare", "--net", "--pid", "--mount", "--uts", "--fork", "--mount-proc", "--",
                                     "sh", "-c", setup], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._sandboxes.append(launcher)
        if launcher.stdout.readline().strip() != "ready":
            raise RuntimeError("host %s did not start (unshare exited %s)" % (name, launcher.poll()))
        children = open("/proc/%d/task/%d/children" % (launcher.pid, launcher.pid)).read().split()
        host = Host(index, name, SUBNET + str(index + 1), launcher, int(children[0]))
        self.hosts.append(host)  # from here on close() kills it
        # A veth pair: "h<index>" on the bridge, "eth0" inside the host.
        self.switch_ip(["link", "add", "h%d" % index, "type", "veth", "peer", "name", "eth0", "netns", str(host.init)])
        self.switch_ip(["link", "set", "h%d" % index, "master", "br0", "up"])
        self.host_ip(host, ["addr", "add", host.address + "/24", "dev", "eth0"])
        self.host_ip(host, ["link", "set", "eth0", "up"])
        self.host_ip(host, ["link", "set", "lo", "up"])
        return host

    @staticmethod
    def _wait_for_namespace(pid, kind):
        mine = os.readlink("/proc/self/ns/" + kind)
        for _ in range(500):
            if os.readlink("/proc/%d/ns/%s" % (pid, kind)) != mine:
                return
            time.sleep(0.01)
        raise RuntimeError("pid %d never entered a new %s namespace" % (pid, kind))

    # ---- commands ----------------------------------------------------------------------------
    def switch_ip(self, args, check=True):
        return _run(["nsenter", "--target", str(self._switch.pid), "--net", "--", "ip"] + args, check=check)

    def host_ip(self, host, args, check=True):
        return _run(["nsenter", "--target", str(host.init), "--net", "--", "ip"] + args, check=check)

    def run_on(self, host, argv, check=False, timeout=30):
        return _run(host.enter() + list(argv), check=check, timeout=timeout)

    def link_down(self, index):
        """Pulls host `index`'s cable: its port on the bridge goes down, nothing is closed."""
        self.switch_ip(["link", "set", "h%d" % index, "down"])

    def kill_host(self, index):
        """Every process of host `index` dies at once, as in a power failure (the PID
        namespace's init is killed, and the kernel kills the rest)."""
        os.kill(self.hosts[index].init, signal.SIGKILL)
        self.hosts[index].killed = True

    def add_netem(self, index, spec=("delay", "2ms", "1ms", "loss", "1%", "reorder", "10%", "50%")):
        """Delay, jitter, loss and reordering on host `index`'s link; returns None, or why not."""
        result = _run(self.hosts[index].enter() + ["tc", "qdisc", "add", "dev", "eth0", "root", "netem"] + list(spec),
                      check=False)
        return None if result.returncode == 0 else (result.stderr or result.stdout).strip()

    # ---- jobs --------------------------------------------------------------------------------
    def launch(self, layout, argv, style="torchrun", env=None, port=MASTER_PORT):
        """Starts one process per rank of `layout` on its host, with `style`'s launcher
        environment (plus `env`), rank order. Returns a Job."""
        if len(layout.hosts) > len(self.hosts):
            raise ValueError("layout %s needs %d hosts, the cluster has %d" % (layout.name, len(layout.hosts), len(self.hosts)))
        job_id = secrets.token_hex(8)
        secret = secrets.token_hex(16)
        master = self.hosts[layout.host_of[0]].address
        processes, outputs = [], []
        for rank in range(layout.nranks):
            h = layout.host_of[rank]
            local = layout.hosts[h].index(rank)
            variables = _clean_environment()
            if style == "torchrun":
                variables.update({"RANK": rank, "WORLD_SIZE": layout.nranks, "LOCAL_RANK": local,
                                  "LOCAL_WORLD_SIZE": len(layout.hosts[h]), "GROUP_RANK": h, "NODE_RANK": h,
                                  "MASTER_ADDR": master, "MASTER_PORT": port, "TORCHELASTIC_RUN_ID": job_id})
            elif style == "mpirun":
                variables.update({"OMPI_COMM_WORLD_RANK": rank, "OMPI_COMM_WORLD_SIZE": layout.nranks,
                                  "OMPI_COMM_WORLD_LOCAL_RANK": local, "OMPI_COMM_WORLD_LOCAL_SIZE": len(layout.hosts[h]),
                                  "OMPI_COMM_WORLD_NODE_RANK": h, "OMPI_MCA_ess_base_jobid": job_id,
                                  "LOOM_COMM_ID": "%s:%d" % (master, port)})
            elif style == "loomrun":
                variables.update({"LOOM_RANK": rank, "LOOM_WORLD_SIZE": layout.nranks, "LOOM_LOCAL_RANK": local,
                                  "LOOM_LOCAL_SIZE": len(layout.hosts[h]), "LOOM_COMM_ID": "%s:%d" % (master, port)})
            else:
                raise ValueError("unknown launcher style " + style)
            variables["LOOM_COMM_SECRET"] = secret
            variables.update(env or {})
            streams = (tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+"))
            outputs.append(streams)
            processes.append(subprocess.Popen(self.hosts[h].enter() + list(argv),
                                              env={k: str(v) for k, v in variables.items()},
                                              stdout=streams[0], stderr=streams[1], start_new_session=True))
        return Job(processes, outputs, layout)


# Variables a launcher sets per rank, which must not leak from the test's own environment into
# a rank's, and the ones that would make ranks of different hosts look alike.
_LAUNCHER_VARIABLES = ("LOOM_RANK", "LOOM_WORLD_SIZE", "LOOM_COMM_ID", "LOOM_LOCAL_RANK", "LOOM_LOCAL_SIZE",
                       "LOOM_HOSTID", "LOOM_SOCKET_IFNAME", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                       "MASTER_PORT", "SLURM_PROCID", "SLURM_NTASKS")


def _clean_environment():
    return {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARIABLES and not k.startswith("OMPI_")}
