#!/usr/bin/env bash
# pyopencl-upstream.sh - PyOpenCL's own test suite (the test_*.py that
# Debian's python-pyopencl-doc ships among its examples), run by pytest
# natively (PoCL) and under vocl-run.  Fails iff a test that passes
# natively does not pass through VOCL, except where VOCL differs by design:
#   - the SVM tests skip (VOCL offers no shared virtual memory);
# and prints the tests whose outcome differs, the counts, and the wall time
# of each run and of each file.  Tests that are not passes natively ask
# nothing: test_image_2d and test_image_3d are xfailed only when the
# platform is named PoCL, so through VOCL the first passes and the second
# fails, as PoCL's own clCreateImage fails it natively.  A test's device
# and platform names are left out of its id (VOCL names its platform VOCL).
#
#   pyopencl-upstream.sh VOCL_RUN PROXIES DEVICES_PER_PROXY
#
# The native run has PROXIES x DEVICES_PER_PROXY PoCL devices, so both runs
# run every test on as many devices.  PyOpenCL's and PoCL's caches are left
# where they are: the first run of a machine compiles for minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
ext_check_args "$@"
vocl_run=$(realpath "$1") np=$2 dp=$3
py=${VOCL_PYTHON:-/usr/bin/python3}
src=${PYOPENCL_TESTS:-/usr/share/doc/python-pyopencl-doc/examples}
[ -x "$py" ] || ext_skip "$py is missing (Debian's python3)"
"$py" -c 'import pyopencl, numpy, pytest' 2>/dev/null ||
    ext_skip "$py cannot import pyopencl, numpy and pytest (Debian: python3-pyopencl python3-numpy python3-pytest)"
compgen -G "$src/test_*.py" >/dev/null ||
    ext_skip "no test_*.py in $src (Debian: python-pyopencl-doc)"
ext_tmpdir
# The tests read files beside them (empty-header.h): a copy of the folder.
cp -r "$src" "$tmp/tests"
cd "$tmp/tests"
n=$((np * dp))
pytest=("$py" -m pytest -q -p no:cacheprovider -rfE)

rc_n=0 rc_v=0
# shellcheck disable=SC2046
ext_time env $(ext_native_env) POCL_DEVICES="$(ext_pocl_devices "$n")" timeout 3000 \
    "${pytest[@]}" --junitxml="$tmp/native.xml" . >"$tmp/native.out" 2>&1 || rc_n=$?
t_n=$ext_secs
ext_time timeout 3000 "$vocl_run" "${vocl_opts[@]}" -n "$np" -d "$dp" -- \
    "${pytest[@]}" --junitxml="$tmp/vocl.xml" . >"$tmp/vocl.out" 2>&1 || rc_v=$?
t_v=$ext_secs
echo "native: exit $rc_n, $(tail -1 "$tmp/native.out")"
echo "VOCL ${np}x$dp: exit $rc_v, $(tail -1 "$tmp/vocl.out")"
# (pytest exits 1 when a test fails: the comparison below decides.)
[ -s "$tmp/native.xml" ] || ext_fail "no native results" "$tmp/native.out"
[ -s "$tmp/vocl.xml" ] || ext_fail "no VOCL results" "$tmp/vocl.out"

"$py" - "$tmp/native.xml" "$tmp/vocl.xml" "$t_n" "$t_v" <<'EOF'
import collections, re, sys
import xml.etree.ElementTree as ET

platforms = collections.Counter()

def outcomes(path):
    """test id -> list of (outcome, seconds), in order (a test may run on several devices)."""
    out = collections.defaultdict(list)
    for tc in ET.parse(path).getroot().iter("testcase"):
        platforms.update((path, p) for p in re.findall(r"<pyopencl\.Device .*? on '(.*?)'>", tc.get("name")))
        name = re.sub(r"<context factory for <pyopencl\.Device .*?>>", "DEV", tc.get("name"))
        name = re.sub(r"<pyopencl\.Platform .*?>", "PLATFORM", name)
        state = "pass"
        for c in tc:
            if c.tag in ("failure", "error"):
                state = "fail"
            elif c.tag == "skipped":
                state = "xfail" if c.get("type") == "pytest.xfail" else "skip"
        out[tc.get("classname") + "::" + name].append((state, float(tc.get("time"))))
    return out

native, vocl = outcomes(sys.argv[1]), outcomes(sys.argv[2])
# Through libvocl, every device a test names is on VOCL's platform.
seen = {p for (path, p) in platforms if path == sys.argv[2]}
if seen != {"VOCL"}:
    print(f"FAIL: the VOCL run's tests ran on {sorted(seen)}, not on VOCL's platform alone")
    sys.exit(1)
t_n, t_v = float(sys.argv[3]), float(sys.argv[4])
lost, other = [], []
for test, runs in native.items():
    got = vocl.get(test, [])
    for i, (state, _) in enumerate(runs):
        v = got[i][0] if i < len(got) else "missing"
        if v == state:
            continue
        by_design = "svm" in test and v == "skip"
        (lost if state == "pass" and not by_design else other).append((test, state, v))
for test in vocl.keys() - native.keys():
    other.append((test, "missing", ",".join(s for s, _ in vocl[test])))
for test, n, v in other:
    print(f"differs (allowed): {test}: native {n}, VOCL {v}")
for test, n, v in lost:
    print(f"LOST: {test}: native {n}, VOCL {v}")

def count(o):
    return dict(collections.Counter(s for runs in o.values() for s, _ in runs))
print("outcomes: native", count(native), "VOCL", count(vocl))
files = collections.defaultdict(lambda: [0.0, 0.0])
for i, o in enumerate((native, vocl)):
    for test, runs in o.items():
        files[test.split("::")[0]][i] += sum(t for _, t in runs)
print(f"{'file':<28}{'native s':>10}{'VOCL s':>10}{'ratio':>8}")
for f, (a, b) in sorted(files.items()):
    print(f"{f:<28}{a:>10.1f}{b:>10.1f}{b / a if a else 0:>8.2f}")
print(f"{'wall':<28}{t_n:>10.1f}{t_v:>10.1f}{t_v / t_n:>8.2f}")
print("FAIL" if lost else "PASS")
sys.exit(1 if lost else 0)
EOF
