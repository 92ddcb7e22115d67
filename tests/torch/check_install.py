# SPDX-License-Identifier: Apache-2.0
"""`meson install` puts loom_torch where the Python it was built for looks: in that Python's
site-packages under the install prefix, when it has one there (Debian's /usr/bin/python3
looks in /usr/local/lib/python3.X/dist-packages for prefix /usr/local, not in
/usr/local/lib/python3/dist-packages). Then the installed package, staged with --destdir,
imports and runs a one-rank all_reduce.

    check_install.py <build dir> <meson command...>
"""
import json
import os
import site
import subprocess
import sys
import tempfile


def main():
    build, meson = sys.argv[1], sys.argv[2:]
    installed = json.loads(subprocess.run(meson + ["introspect", "--installed", build], check=True,
                                          capture_output=True, text=True).stdout)
    options = json.loads(subprocess.run(meson + ["introspect", "--buildoptions", build], check=True,
                                        capture_output=True, text=True).stdout)
    prefix = next(o["value"] for o in options if o["name"] == "prefix")
    libdir = next(o["value"] for o in options if o["name"] == "libdir")
    package = [os.path.dirname(path) for path in installed.values()
               if path.endswith(os.path.join("loom_torch", "__init__.py"))]
    if len(package) != 1:
        sys.exit(f"FAIL: loom_torch/__init__.py is installed {len(package)} times: {package}")
    site_dir = os.path.normpath(os.path.dirname(package[0]))
    prefix = os.path.normpath(prefix)
    candidates = [os.path.normpath(d) for d in site.getsitepackages()
                  if os.path.commonpath([os.path.normpath(d), prefix]) == prefix]
    print(f"prefix {prefix}: loom_torch goes to {site_dir}; {sys.executable} looks in {site.getsitepackages()}")
    if candidates and site_dir not in candidates:
        sys.exit(f"FAIL: {site_dir} is not among {sys.executable}'s site-packages under {prefix}: {candidates}")

    with tempfile.TemporaryDirectory(prefix="loom-install-") as destdir:
        subprocess.run(meson + ["install", "-C", build, "--no-rebuild", "--quiet", "--destdir", destdir],
                       check=True, capture_output=True)
        staged = lambda path: destdir + path  # noqa: E731 - DESTDIR prefixes absolute paths
        env = {**os.environ, "PYTHONPATH": staged(site_dir),
               "LD_LIBRARY_PATH": staged(os.path.join(prefix, libdir)), "LOOM_SOCKET_IFNAME": "lo"}
        script = ("import os, tempfile, torch, torch.distributed as dist, loom_torch\n"
                  "assert loom_torch.__file__.startswith(os.environ['PYTHONPATH']), loom_torch.__file__\n"
                  "dist.init_process_group('loom', init_method='file://' + tempfile.mktemp(), rank=0, world_size=1)\n"
                  "t = torch.arange(5.0); dist.all_reduce(t); assert t.tolist() == [0, 1, 2, 3, 4]\n"
                  "dist.destroy_process_group(); print('installed loom_torch ran an all_reduce')\n")
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
        print(run.stdout + run.stderr)
        if run.returncode != 0:
            sys.exit(f"FAIL: the installed package did not run (exit {run.returncode})")
    print("PASS")


if __name__ == "__main__":
    main()
