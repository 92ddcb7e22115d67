#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the synthetic machines of this folder (see README.md).

The XML files are checked in; this script is how they were made, so a change to a machine is
a change here followed by `python3 generate.py` in this folder. Output follows the layout NCCL
uses for NCCL_TOPO_DUMP_FILE (element order, attribute order, two-space indent), so the files
read like real dumps. Bus ids, GUIDs and device ids are plausible but invented.
"""

import os

HERE = os.path.dirname(os.path.abspath(__file__))

# PCI identities used below (vendor, device).
NVIDIA = "0x10de"
MELLANOX = "0x15b3"
BROADCOM_PLX = "0x10b5"
V100_SXM2 = "0x1db1"
A100_SXM4 = "0x20b2"
A100_PCIE = "0x20f1"
H100_SXM5 = "0x2330"
CX4_IB = "0x1013"
CX6_IB = "0x101b"
CX6DX_ETH = "0x101d"
CX7 = "0x1021"

CLASS_BRIDGE = "0x060400"
CLASS_3D = "0x030200"
CLASS_ETH = "0x020000"
CLASS_IB = "0x020700"
CLASS_NVSWITCH = "0x068000"


class Writer:
    def __init__(self, comment):
        self.lines = ["<!--"] + ["  " + line if line else "" for line in comment] + ["-->"]
        self.depth = 0

    def open(self, tag, attrs):
        self.lines.append("  " * self.depth + "<%s%s>" % (tag, fmt(attrs)))
        self.depth += 1

    def close(self, tag):
        self.depth -= 1
        self.lines.append("  " * self.depth + "</%s>" % tag)

    def leaf(self, tag, attrs):
        self.lines.append("  " * self.depth + "<%s%s/>" % (tag, fmt(attrs)))

    def save(self, name):
        # Bus ids are unique, and NVLink targets that are not GPUs (NVSwitches) are not on the
        # PCI tree: a clash would turn a switch into a GPU.
        busids = [line.split('busid="')[1].split('"')[0] for line in self.lines if "busid=" in line]
        assert len(busids) == len(set(busids)), name
        for line in self.lines:
            if 'tclass="%s"' % CLASS_NVSWITCH in line:
                assert line.split('target="')[1].split('"')[0] not in busids, name
        with open(os.path.join(HERE, name), "w") as out:
            out.write("\n".join(self.lines) + "\n")


def fmt(attrs):
    return "".join(' %s="%s"' % (k, v) for k, v in attrs)


def cpu_attrs(numa, affinity, vendor, family, model):
    return [("numaid", numa), ("affinity", affinity), ("arch", "x86_64"), ("vendor", vendor),
            ("familyid", family), ("modelid", model)]


def pci_attrs(busid, cls, vendor, device, sub_vendor, sub_device, speed, width):
    return [("busid", busid), ("class", cls), ("vendor", vendor), ("device", device),
            ("subsystem_vendor", sub_vendor), ("subsystem_device", sub_device),
            ("link_speed", speed), ("link_width", width)]


def switch(w, busid, speed, width="16"):
    w.open("pci", pci_attrs(busid, CLASS_BRIDGE, BROADCOM_PLX, "0x8764" if speed.startswith("8")
                            else "0xc010", BROADCOM_PLX, "0x0000", speed, width))


def gpu(w, busid, device, sub_device, speed, dev, sm, nvlinks):
    """nvlinks: list of (target busid, count, target class)."""
    w.open("pci", pci_attrs(busid, CLASS_3D, NVIDIA, device, NVIDIA, sub_device, speed, "16"))
    attrs = [("dev", dev), ("sm", sm), ("rank", dev), ("gdr", 1)]
    if nvlinks:
        w.open("gpu", attrs)
        for target, count, tclass in nvlinks:
            w.leaf("nvlink", [("target", target), ("count", count), ("tclass", tclass)])
        w.close("gpu")
    else:
        w.leaf("gpu", attrs)
    w.close("pci")


def nic(w, busid, cls, device, speed, nets, gdr=1):
    """nets: list of (name, dev, speedMbps, port, guid). busid None: a <nic> without PCI."""
    if busid:
        w.open("pci", pci_attrs(busid, cls, MELLANOX, device, MELLANOX, "0x0000", speed, "16"))
    w.open("nic", [])
    for name, dev, mbps, port, guid in nets:
        w.leaf("net", [("name", name), ("dev", dev), ("speed", mbps), ("port", port),
                       ("latency", "0.000000"), ("guid", guid), ("maxconn", 131072), ("gdr", gdr)])
    w.close("nic")
    if busid:
        w.close("pci")


def guid(index):
    return "0x%x" % (0xb8cef60300a1f000 + index * 0x10)


def dgx1_v100():
    # DGX-1 with V100 (NVIDIA "DGX-1 with Tesla V100 System Architecture" white paper): each
    # quad {0,1,2,3} and {4,5,6,7} is fully connected, GPU i links to GPU i+4, and the pairs
    # 0-3, 1-2, 0-4, 1-5 (and their mirrors 4-7, 5-6) are doubled, so every GPU uses all six
    # of its NVLinks. This is the matrix `nvidia-smi topo -m` prints on a DGX-1V.
    pairs = {(0, 1): 1, (0, 2): 1, (0, 3): 2, (1, 2): 2, (1, 3): 1, (2, 3): 2,
             (4, 5): 1, (4, 6): 1, (4, 7): 2, (5, 6): 2, (5, 7): 1, (6, 7): 2,
             (0, 4): 2, (1, 5): 2, (2, 6): 1, (3, 7): 1}
    busids = ["0000:06:00.0", "0000:07:00.0", "0000:0a:00.0", "0000:0b:00.0",
              "0000:85:00.0", "0000:86:00.0", "0000:89:00.0", "0000:8a:00.0"]
    switch_busids = ["0000:03:00.0", "0000:09:00.0", "0000:82:00.0", "0000:88:00.0"]
    nic_busids = ["0000:05:00.0", "0000:0c:00.0", "0000:84:00.0", "0000:8b:00.0"]
    links = {g: [] for g in range(8)}
    for (a, b), count in sorted(pairs.items()):
        links[a].append((b, count))
        links[b].append((a, count))
    for g in range(8):
        assert sum(c for _, c in links[g]) == 6, g
    w = Writer([
        "Synthetic machine written for Loom's tests (not a dump of a real host).",
        "Models a DGX-1V: 2 Intel Broadwell sockets (E5-2698 v4, family 6 model 79), 4 PLX",
        "PCIe gen3 switches with 2 V100 SXM2 (sm 70) and 1 EDR InfiniBand NIC each, and the",
        "NVLink hybrid cube mesh: quads 0-3 and 4-7 fully connected, GPU i linked to GPU i+4,",
        "pairs 0-3, 1-2, 0-4, 1-5, 4-7, 5-6 doubled: 6 NVLinks per GPU.",
    ])
    w.open("system", [("version", 1)])
    for socket in range(2):
        aff = "00000000,000fffff" if socket == 0 else "000000ff,fff00000"
        w.open("cpu", cpu_attrs(socket, aff, "GenuineIntel", 6, 79))
        for sw in range(2):
            index = socket * 2 + sw
            switch(w, switch_busids[index], "8 GT/s")
            for g in (index * 2, index * 2 + 1):
                nv = [(busids[peer], count, CLASS_3D) for peer, count in sorted(links[g])]
                gpu(w, busids[g], V100_SXM2, "0x1212", "8 GT/s", g, 70, nv)
            nic(w, nic_busids[index], CLASS_IB, CX4_IB, "8 GT/s",
                [("mlx5_%d" % index, index, 100000, 1, guid(index))])
            w.close("pci")
        w.close("cpu")
    w.close("system")
    w.save("dgx1-v100x8-hybrid-cube-mesh.xml")


def a100_nvswitch6():
    nvswitches = ["0000:c%d:00.0" % i for i in range(6)]
    w = Writer([
        "Synthetic machine written for Loom's tests (not a dump of a real host).",
        "Models a DGX/HGX A100 8-GPU board: 2 AMD EPYC Rome sockets (family 23 model 49),",
        "4 PCIe gen4 switch trees per machine (2 per socket); each tree has 2 leaf switches",
        "and each leaf switch pairs one A100 SXM4 (sm 80) with one 200G HDR InfiniBand NIC.",
        "6 NVSwitches (not on the PCI tree, as NCCL sees them): each GPU has 2 NVLinks to each",
        "switch, 12 in total.",
    ])
    w.open("system", [("version", 1)])
    for socket in range(2):
        aff = "00000000,ffffffff,00000000,ffffffff" if socket == 0 else \
              "ffffffff,00000000,ffffffff,00000000"
        w.open("cpu", cpu_attrs(socket, aff, "AuthenticAMD", 23, 49))
        for tree in range(2):
            top = (0x0c if socket == 0 else 0x8c) + tree * 0x20
            switch(w, "0000:%02x:00.0" % top, "16.0 GT/s PCIe")
            for leaf in range(2):
                g = socket * 4 + tree * 2 + leaf
                leafbus = top + 2 + leaf * 0x08
                switch(w, "0000:%02x:00.0" % leafbus, "16.0 GT/s PCIe")
                nv = [(target, 2, CLASS_NVSWITCH) for target in nvswitches]
                gpu(w, "0000:%02x:00.0" % (leafbus + 2), A100_SXM4, "0x1463", "16.0 GT/s PCIe",
                    g, 80, nv)
                nic(w, "0000:%02x:00.0" % (leafbus + 3), CLASS_IB, CX6_IB, "16.0 GT/s PCIe",
                    [("mlx5_%d" % g, g, 200000, 1, guid(g))])
                w.close("pci")
            w.close("pci")
        w.close("cpu")
    w.close("system")
    w.save("a100x8-nvswitch6-nic8.xml")


def h100_nvswitch4():
    nvswitches = ["0000:f%d:00.0" % i for i in range(3, 7)]
    counts = [5, 5, 4, 4]  # 18 NVLink4 links per H100 SXM5 over the 4 third-gen NVSwitches
    w = Writer([
        "Synthetic machine written for Loom's tests (not a dump of a real host).",
        "Models an HGX H100 8-GPU board: 2 Intel Sapphire Rapids sockets (family 6 model 143),",
        "8 PCIe gen5 switches (4 per socket), each holding one H100 SXM5 (sm 90) and one 400G",
        "NDR ConnectX-7 NIC, rail-aligned. 4 NVSwitches: each GPU has 5, 5, 4 and 4 NVLinks to",
        "them, 18 in total.",
    ])
    w.open("system", [("version", 1)])
    for socket in range(2):
        aff = "00000000,00000000,0000ffff,ffffffff,ffffffff" if socket == 0 else \
              "ffffffff,ffffffff,ffff0000,00000000,00000000"
        w.open("cpu", cpu_attrs(socket, aff, "GenuineIntel", 6, 143))
        for sw in range(4):
            g = socket * 4 + sw
            bus = (0x18 if socket == 0 else 0x98) + sw * 0x10
            switch(w, "0000:%02x:00.0" % bus, "32.0 GT/s PCIe")
            nv = [(target, count, CLASS_NVSWITCH) for target, count in zip(nvswitches, counts)]
            gpu(w, "0000:%02x:00.0" % (bus + 2), H100_SXM5, "0x16c1", "32.0 GT/s PCIe", g, 90, nv)
            nic(w, "0000:%02x:00.0" % (bus + 3), CLASS_IB, CX7, "32.0 GT/s PCIe",
                [("mlx5_%d" % g, g, 400000, 1, guid(g))])
            w.close("pci")
        w.close("cpu")
    w.close("system")
    w.save("h100x8-nvswitch4-nic8.xml")


def pcie_2socket():
    w = Writer([
        "Synthetic machine written for Loom's tests (not a dump of a real host).",
        "Models a 2-socket PCIe GPU server: 2 Intel Ice Lake sockets (family 6 model 106),",
        "2 PCIe gen4 switches per socket with 2 A100 PCIe (sm 80) each (8 GPUs, 4 per socket),",
        "one 100G Ethernet (RoCE) NIC on a root port of each socket. No NVLink: GPUs on",
        "different sockets can only reach each other across the inter-socket link.",
    ])
    w.open("system", [("version", 1)])
    for socket in range(2):
        aff = "00000000,ffffffff,00000000,ffffffff" if socket == 0 else \
              "ffffffff,00000000,ffffffff,00000000"
        w.open("cpu", cpu_attrs(socket, aff, "GenuineIntel", 6, 106))
        base = 0x17 if socket == 0 else 0x97
        nic(w, "0000:%02x:00.0" % base, CLASS_ETH, CX6DX_ETH, "16.0 GT/s PCIe",
            [("mlx5_%d" % socket, socket, 100000, 1, guid(socket))])
        for sw in range(2):
            bus = base + 0x10 + sw * 0x20
            switch(w, "0000:%02x:00.0" % bus, "16.0 GT/s PCIe")
            for slot in range(2):
                g = socket * 4 + sw * 2 + slot
                gpu(w, "0000:%02x:00.0" % (bus + 2 + slot), A100_PCIE, "0x145f",
                    "16.0 GT/s PCIe", g, 80, [])
            w.close("pci")
        w.close("cpu")
    w.close("system")
    w.save("pcie-2socket-gpu8-nic2.xml")


def nvlink_mesh4():
    busids = ["0000:01:00.0", "0000:41:00.0", "0000:81:00.0", "0000:c1:00.0"]
    w = Writer([
        "Synthetic machine written for Loom's tests (not a dump of a real host).",
        "Models a 4-GPU HGX A100 board: 1 AMD EPYC Milan socket (family 25 model 1), 4 A100",
        "SXM4 (sm 80) on their own PCIe gen4 root ports, fully meshed by NVLink with 4 links",
        "per pair (12 per GPU, no NVSwitch), and one 200G HDR InfiniBand NIC on a root port.",
    ])
    w.open("system", [("version", 1)])
    w.open("cpu", cpu_attrs(0, "ffffffff,ffffffff", "AuthenticAMD", 25, 1))
    for g in range(4):
        nv = [(busids[peer], 4, CLASS_3D) for peer in range(4) if peer != g]
        gpu(w, busids[g], A100_SXM4, "0x1463", "16.0 GT/s PCIe", g, 80, nv)
    nic(w, "0000:21:00.0", CLASS_IB, CX6_IB, "16.0 GT/s PCIe",
        [("mlx5_0", 0, 200000, 1, guid(0))])
    w.close("cpu")
    w.close("system")
    w.save("nvlink-mesh-gpu4.xml")


if __name__ == "__main__":
    dgx1_v100()
    a100_nvswitch6()
    h100_nvswitch4()
    pcie_2socket()
    nvlink_mesh4()
