#!/usr/bin/env python3
"""gpu_node_smoke.py GPU_NODE_SH BUILD OUT - runs `GPU_NODE_SH --smoke
--build BUILD OUT` (tools/bench/gpu-node.sh, every part tiny, on PoCL) and
fails unless it exits 0 and each of its five tables exists, names its
device, and has native, VOCL and VOCL/native columns holding numbers in
the rows it must have.  A SKIP line is accepted only where this machine
cannot run the part (PyOpenCL or its upstream tests not installed)."""
import os
import re
import shutil
import subprocess
import sys

NUMBER = re.compile(r"^-?\d+(\.\d+)?(e[-+]?\d+)?( (GB/s|us|ms|s))?$")
RATIO = re.compile(r"^\d+(\.\d+)?x$")
# file: the first cells of the rows each of its tables must have, in order.
WANT = {
    "1-bandwidth": [["write 16 MiB", "write 64 MiB", "read 16 MiB", "read 64 MiB"]],
    "2-latency": [["read 4 B, blocking", "1-item kernel + clFinish", "launches, 7 args"]],
    "3-scaling": [["prnu", "dag-nbody", "hep", "kmer", "gemm", "nbody", "transpose",
                   "smithwaterman"]] * 2,
    "4-unused": [["gemm", "nbody", "transpose", "smithwaterman"]],
    "5-pyopencl": [["all 8 scripts"], ["wall"]],
}
errors = []


def fail(msg):
    errors.append(msg)


def may_skip(name, index):
    """Whether this machine lacks what the table needs (its SKIP is honest)."""
    if name != "5-pyopencl":
        return False
    has_pyopencl = any(subprocess.run([py, "-c", "import pyopencl, numpy"],
                                      stderr=subprocess.DEVNULL).returncode == 0
                       for py in ("/usr/bin/python3", "python3") if shutil.which(py))
    if not has_pyopencl:
        return True
    return index == 1 and not any(
        f.startswith("test_") for f in
        os.listdir("/usr/share/doc/python-pyopencl-doc/examples")
        if os.path.isdir("/usr/share/doc/python-pyopencl-doc/examples"))


def tables(text):
    """[(header cells, [row cells...]), ...] of the markdown tables."""
    out, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip("|").split("|")])
            out.append((header, rows))
    return out


def check_file(out, name, want):
    path = os.path.join(out, name + ".md")
    try:
        text = open(path).read()
    except OSError as e:
        fail("%s: %s" % (name, e))
        return
    devices = re.findall(r"^Device: (\S.*)$", text, re.M)
    if not devices or any(d.startswith(("none", "?")) for d in devices):
        fail("%s: no device named (a 'Device: ...' line)" % name)
    found = tables(text)
    if len(found) != len(want):
        fail("%s: %d tables, want %d" % (name, len(found), len(want)))
    for i, ((header, rows), first_cells) in enumerate(zip(found, want)):
        where = "%s, table %d" % (name, i + 1)
        try:
            n = next(j for j, h in enumerate(header) if h.startswith("native"))
            v = next(j for j, h in enumerate(header) if h.startswith("VOCL") and "/" not in h)
            r = header.index("VOCL/native")
        except (StopIteration, ValueError):
            fail("%s: no native, VOCL and VOCL/native columns in %s" % (where, header))
            continue
        skips = [row[0] for row in rows if row[0].startswith(("SKIP", "FAILED"))]
        if skips:
            if not (may_skip(name, i) and all(s.startswith("SKIP") for s in skips)):
                fail("%s: %s" % (where, skips[0]))
            continue
        for cell in first_cells:
            hits = [row for row in rows if row[0].startswith(cell) or
                    (cell.startswith("launches") and cell in row[0])]
            if not hits:
                fail("%s: no row '%s'" % (where, cell))
            for row in hits:
                if not (NUMBER.match(row[n]) and NUMBER.match(row[v]) and RATIO.match(row[r])):
                    fail("%s: row '%s' lacks numbers: native '%s', VOCL '%s', ratio '%s'"
                         % (where, row[0], row[n], row[v], row[r]))


def main():
    script, build, out = sys.argv[1:4]
    shutil.rmtree(out, ignore_errors=True)
    try:
        p = subprocess.run(["bash", script, "--smoke", "--build", build, out],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=230)
        print(p.stdout)
        if p.returncode != 0:
            fail("gpu-node.sh --smoke exited with %d" % p.returncode)
        if "gpu-node: every part ran and verified" not in p.stdout:
            fail("no 'every part ran and verified' line")
    except subprocess.TimeoutExpired:
        fail("gpu-node.sh --smoke took more than 230 s")
    for name, want in WANT.items():
        check_file(out, name, want)
    for e in errors:
        print("FAIL: " + e)
    if not errors:
        print("gpu-node-smoke: every table has native, VOCL and VOCL/native numbers")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
