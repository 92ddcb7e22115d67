# SPDX-License-Identifier: Apache-2.0
"""README's C program, built the way a user builds it (`cc prog.c $(pkg-config --cflags --libs
loom)`) and run with loomrun, for the uninstalled and the installed layout checks
(check_uninstalled_link.py, check_install_layout.py).

The program is README's first ```c block, whatever it holds. Each line it prints of the form
"... = VALUE (expected VALUE)" must show the expected value; the exit status must be 0.
"""
import os
import re
import subprocess

FENCE = re.compile(r"^```c[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
EXPECTATION = re.compile(r"= (\S+) \(expected (\S+)\)")


def name_values(pairs):
    """["A=1", "B=2"] -> {"A": "1", "B": "2"}"""
    return dict(pair.split("=", 1) for pair in pairs)


def first_c_block(readme_path):
    with open(readme_path, encoding="utf-8") as f:
        match = FENCE.search(f.read())
    if not match:
        raise SystemExit(f"FAIL: {readme_path} has no ```c block")
    return match.group(1)


def clean_env(**extra):
    """PATH and what the caller adds: no LD_LIBRARY_PATH, CPATH, LIBRARY_PATH or LOOM_* of the
    environment the test runs in, so the rpath and the .pc file have to do the work."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **extra}


def run(cmd, env, cwd, timeout=240):
    print("$ " + " ".join(cmd), flush=True)
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if done.stdout or done.stderr:
        print((done.stdout + done.stderr).rstrip())
    return done


def pkg_config(args, env, cwd):
    done = run(["pkg-config", *args, "--cflags", "--libs", "loom"], env, cwd)
    if done.returncode != 0:
        raise SystemExit(f"FAIL: pkg-config exited {done.returncode}")
    return done.stdout.split()


def build(readme_path, workdir, cc, flags):
    """Writes README's program to workdir/prog.c and links workdir/a.out with `flags`."""
    with open(os.path.join(workdir, "prog.c"), "w", encoding="utf-8") as f:
        f.write(first_c_block(readme_path))
    done = run([*cc, "prog.c", *flags], clean_env(), workdir)
    if done.returncode != 0:
        raise SystemExit(f"FAIL: README's program did not compile and link (exit {done.returncode})")
    return os.path.join(workdir, "a.out")


def libloom_of(program, env, cwd):
    """The libloom the dynamic loader picks for program (from ldd), or None."""
    done = run(["ldd", program], env, cwd)
    for line in done.stdout.splitlines():
        if line.strip().startswith("libloom.so"):
            parts = line.split("=>")
            return os.path.realpath(parts[1].split("(")[0].strip()) if len(parts) > 1 else None
    return None


def run_ranks(loomrun, program, ranks, workdir, extra_env=None):
    """loomrun -n ranks program in a clean environment (plus extra_env: a sanitizer build's
    options); fails unless it exits 0 and every "(expected ...)" line holds."""
    done = run([loomrun, "-n", str(ranks), "--timeout", "200", program], clean_env(**(extra_env or {})),
               workdir)
    if done.returncode != 0:
        raise SystemExit(f"FAIL: loomrun -n {ranks} README's program exited {done.returncode}")
    checked = [m.groups() for m in EXPECTATION.finditer(done.stdout)]
    wrong = [(got, want) for got, want in checked if float(got) != float(want)]
    if wrong:
        raise SystemExit(f"FAIL: wrong results (got, expected): {wrong}")
    if checked and len(checked) != ranks:
        raise SystemExit(f"FAIL: {len(checked)} result lines for {ranks} ranks")
    print(f"README's program ran on {ranks} ranks; {len(checked)} results as expected")
