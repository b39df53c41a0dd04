#!/usr/bin/env bash
# pyopencl.sh - the PyOpenCL checks of tests/external/pyopencl (Debian's
# python3-pyopencl and python3-numpy, run by /usr/bin/python3) natively and
# under vocl-run: each script checks its results against NumPy and prints one
# PASS/FAIL line per check and device; both runs must pass everything and
# print the same lines (so VOCL computes what PoCL computes, to the bit).
#
#   pyopencl.sh VOCL_RUN PROXIES DEVICES_PER_PROXY [SCRIPT.py...]
#
# Without scripts: all of them but multidevice.py (one context over every
# device, across proxies), which has tests of its own (meson.build).
# PyOpenCL's binary cache is off (PYOPENCL_NO_CACHE=1): every program is
# built from source through VOCL.  Its other caches go to a temporary
# XDG_CACHE_HOME; PoCL's compiler cache stays where it was (POCL_CACHE_DIR).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
ext_check_args "$@"
vocl_run=$(realpath "$1") np=$2 dp=$3
shift 3
py=${VOCL_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || ext_skip "$py is missing (Debian's python3)"
"$py" -c 'import pyopencl, numpy' 2>/dev/null ||
    ext_skip "$py cannot import pyopencl and numpy (Debian packages python3-pyopencl python3-numpy)"
scripts=("$@")
if [ ${#scripts[@]} -eq 0 ]; then
    for s in "$here"/pyopencl/*.py; do
        case $(basename "$s") in common.py | multidevice.py) ;; *) scripts+=("$s") ;; esac
    done
fi
ext_tmpdir
n=$((np * dp))
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pocl}
export XDG_CACHE_HOME=$tmp/cache PYOPENCL_NO_CACHE=1 PYTHONDONTWRITEBYTECODE=1

status=0
for s in "${scripts[@]}"; do
    [ -f "$s" ] || s=$here/pyopencl/$s
    name=$(basename "$s" .py)
    rc_n=0 rc_v=0
    # shellcheck disable=SC2046
    ext_time env $(ext_native_env) POCL_DEVICES="$(ext_pocl_devices "$n")" timeout 600 "$py" "$s" \
        >"$tmp/$name.native" 2>"$tmp/$name.native.err" || rc_n=$?
    t_n=$ext_secs
    ext_time timeout 600 env VOCL_PROFILE=1 "$vocl_run" "${vocl_opts[@]}" -n "$np" -d "$dp" -- "$py" "$s" \
        >"$tmp/$name.vocl" 2>"$tmp/$name.vocl.err" || rc_v=$?
    t_v=$ext_secs
    pass_n=$(grep -c '^PASS ' "$tmp/$name.native" || true)
    pass_v=$(grep -c '^PASS ' "$tmp/$name.vocl" || true)
    fail_n=$(grep -c '^FAIL ' "$tmp/$name.native" || true)
    fail_v=$(grep -c '^FAIL ' "$tmp/$name.vocl" || true)
    why=()
    [ "$rc_n" = 0 ] || why+=("native exit $rc_n")
    [ "$rc_v" = 0 ] || why+=("vocl exit $rc_v")
    [ "$fail_n" = 0 ] || why+=("$fail_n native FAIL")
    [ "$fail_v" = 0 ] || why+=("$fail_v vocl FAIL")
    [ "$pass_n" -gt 0 ] || why+=("no native PASS")
    cmp -s "$tmp/$name.native" "$tmp/$name.vocl" || why+=("outputs differ")
    ext_vocl_used "$tmp/$name.vocl.err" || why+=("no VOCL profile table: not run through libvocl")
    if [ ${#why[@]} -eq 0 ]; then
        echo "PASS $name: $pass_v checks on $n devices, output identical to native (native ${t_n}s, vocl ${t_v}s)"
    else
        status=1
        echo "FAIL $name: ${why[*]} (native: $pass_n PASS $fail_n FAIL ${t_n}s; vocl: $pass_v PASS $fail_v FAIL ${t_v}s)"
        echo "  reproduce: PYOPENCL_NO_CACHE=1 $vocl_run ${vocl_opts[*]}${vocl_opts[*]:+ }-n $np -d $dp -- $py $s"
        diff "$tmp/$name.native" "$tmp/$name.vocl" | grep '^[<>]' | head -20 | sed 's/^/  /' || true
        for run in native vocl; do
            [ -s "$tmp/$name.$run.err" ] || continue
            echo "  stderr of the $run run:"
            sed '/^VOCL profile/,$d' "$tmp/$name.$run.err" | grep -v 'UserWarning\|^  \|^$' | sort | uniq -c | head -8 | sed 's/^/    /'
        done
    fi
done
exit $status
