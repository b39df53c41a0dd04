#!/usr/bin/env python3
"""stubs.py - write a stand-in shared library for one that a carried
library names (DT_NEEDED) but never calls on the path measured here.

    stubs.py OUTDIR SONAME PATTERN CONSUMER...

Every undefined dynamic symbol of the CONSUMERs whose version or name
matches PATTERN (a regular expression) becomes a function returning 0,
under the same symbol version, in OUTDIR/SONAME.  The GPU node's image may
lack libxml2 and libz3 (needed by LLVM for Windows manifests and the static
analyser, neither of which PoCL uses) or libcurl (needed by HDF5 for its S3
driver); run.sh keeps a stub only where the node has no real library.
"""
import os
import re
import subprocess
import sys


def undefined(lib):
    out = subprocess.run(["objdump", "-T", lib], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "*UND*" not in line:
            continue
        fields = line.split()
        name = fields[-1]
        version = fields[-2].strip("()") if fields[-2].startswith("(") else ""
        yield version, name


def main():
    outdir, soname, pattern, consumers = sys.argv[1], sys.argv[2], re.compile(sys.argv[3]), sys.argv[4:]
    by_version = {}
    for lib in consumers:
        for version, name in undefined(lib):
            if pattern.search(version) or pattern.search(name):
                by_version.setdefault(version, set()).add(name)
    if not by_version:
        sys.exit(f"stubs.py: no symbol of {consumers} matches {pattern.pattern}")
    base = os.path.join(outdir, soname)
    with open(base + ".c", "w") as c, open(base + ".map", "w") as m:
        c.write(f"/* A stand-in for {soname}: every function returns 0. */\n")
        for version in sorted(by_version):
            names = sorted(by_version[version])
            for name in names:
                c.write(f"long {name}(void) {{ return 0; }}\n")
            m.write(f"{version or 'STUB'} {{ global: {'; '.join(names)}; }};\n")
    versioned = "" if list(by_version) == [""] else f"-Wl,--version-script={base}.map"
    cmd = ["cc", "-shared", "-fPIC", "-fno-builtin", "-o", base, f"-Wl,-soname,{soname}", base + ".c"]
    if versioned:
        cmd.append(versioned)
    subprocess.run(cmd, check=True)
    os.remove(base + ".c")
    os.remove(base + ".map")
    print(f"stubs.py: {soname}: {sum(len(v) for v in by_version.values())} functions")


main()
