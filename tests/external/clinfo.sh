#!/usr/bin/env bash
# clinfo.sh - Debian's clinfo, unmodified: its whole output (the human one
# and --raw) under vocl-run equals the native one of as many PoCL devices,
# line for line, except for the lines normalised below.
#
#   clinfo.sh VOCL_RUN PROXIES DEVICES_PER_PROXY [--icd]
#
# tests/integration/clinfo.sh checks the device sections one by one (up to
# 32 devices); this test checks everything else too: the platform section,
# the raw listing, clinfo's "NULL platform behavior" section (the default
# platform, clCreateContext(NULL) and clCreateContextFromType(NULL, TYPE) for
# every type, i.e. contexts over all the devices of the platform) and, with
# --icd, the ICD loader section.
#
# Lines normalised, in both outputs, and why:
#   Platform Name, Vendor, Version, Extensions function suffix (and their
#     CL_PLATFORM_* raw forms, the "[SUFFIX/n]" prefix of raw lines, and the
#     platform name and "[SUFFIX]" of the NULL platform section): the platform
#     is VOCL, not PoCL.  VOCL's own name and suffix are checked separately.
#   SVM capabilities (the Coarse-/Fine-grained ... sharing and Atomics lines
#     of the SVM block, raw CL_DEVICE_SVM_CAPABILITIES): VOCL has no shared
#     virtual memory (README); checked separately to read No / nothing.
#   Device Vendor ID: each PoCL numbers its devices 0x8086, 0x8087, ... in
#     its process, so VOCL device i (a proxy's device (i-1) mod K) carries
#     native device ((i-1) mod K)'s id: the native value is replaced by that
#     one, the VOCL value is compared as is.
#   Run native kernels (raw CL_DEVICE_EXECUTION_CAPABILITIES): a host
#     function pointer means nothing in a proxy, so VOCL devices run no native
#     kernels (libvocl(7)); checked separately to read No / CL_EXEC_KERNEL.
#   VOCL's own extension, cl_vocl_device_location, at the end of every list
#     of extensions (and its line in the versioned ones): taken out of the
#     VOCL output; checked separately to be in each list.
#   ICD loader section (LD_PRELOAD mode only): libvocl takes the place of
#     the loader's symbols, so clinfo finds no loader to describe.  With
#     --icd the loader is there and the section is compared.
# Not normalised: "Number of platforms" (the native run lists PoCL alone),
# device counts, and the NULL platform section's context device counts.
# VOCL_RUN_OPTS adds vocl-run options (as in the other external tests).
# Both runs get POCL_MEMORY_LIMIT (GB) so that PoCL's global memory size,
# otherwise a share of the memory free at the time, is the same in both.
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
ext_check_args "$@"
vocl_run=$(realpath "$1") np=$2 dp=$3
shift 3
icd=0
[ "${1:-}" = --icd ] && icd=1
ext_need clinfo
ext_tmpdir
n=$((np * dp))
export POCL_MEMORY_LIMIT=${POCL_MEMORY_LIMIT:-4}

# shellcheck disable=SC2317  # (called through ext_time)
run_both() { # NAME CLINFO-ARGS...
    local name=$1
    shift
    # shellcheck disable=SC2046
    env $(ext_native_env) POCL_DEVICES="$(ext_pocl_devices "$n")" clinfo "$@" \
        >"$tmp/$name.native" 2>"$tmp/$name.native.err" ||
        ext_fail "native clinfo $* failed" "$tmp/$name.native.err"
    local opts=("${vocl_opts[@]}" -n "$np" -d "$dp")
    [ "$icd" = 1 ] && opts=(--icd "${opts[@]}")
    timeout 300 "$vocl_run" "${opts[@]}" -- clinfo "$@" >"$tmp/$name.vocl" 2>"$tmp/$name.vocl.err" ||
        ext_fail "clinfo $* under vocl-run ${opts[*]} failed ($?)" "$tmp/$name.vocl.err" "$tmp/$name.vocl"
}

# Native device k's vendor id becomes that of device ((k-1) mod dp)+1.
vendor_ids() {
    awk -v dp="$dp" '
        { lines[NR] = $0 }
        /^  Device Vendor ID / || /CL_DEVICE_VENDOR_ID / { k++; id[k] = $NF; at[NR] = k }
        END {
            for (i = 1; i <= NR; i++) {
                l = lines[i]
                if (i in at) { want = id[(at[i] - 1) % dp + 1]; sub(/[^ ]+$/, want, l) }
                print l
            }
        }'
}

normalise() { # MODE(native|vocl) < output
    local mode=$1
    {
        if [ "$mode" = native ]; then
            vendor_ids
        else
            sed -E -e 's/ cl_vocl_device_location(:0x400000)?$//' \
                -e '/^ +cl_vocl_device_location +0x400000 \(1\.0\.0\)$/d'
        fi
    } | sed -E \
        -e 's/^(  Platform (Name|Vendor|Version|Extensions function suffix) +).*/\1<platform>/' \
        -e 's/^(  CL_PLATFORM_(NAME|VENDOR|VERSION|ICD_SUFFIX_KHR) +).*/\1<platform>/' \
        -e '/^\[OCLICD\//!s/^\[[A-Za-z0-9_]+\//[<suffix>\//' \
        -e 's/^(\[<suffix>\/\*\] +CL_PLATFORM_NAME +).*/\1<platform>/' \
        -e 's/^(  clGetPlatformInfo\(NULL, CL_PLATFORM_NAME, \.\.\.\) +).*/\1<platform>/' \
        -e 's/(Success \[)[A-Za-z0-9_]+\]/\1<suffix>]/' \
        -e 's/^(    Platform Name +).*/\1<platform>/' \
        -e 's/^(    (Coarse-grained buffer|Fine-grained buffer|Fine-grained system) sharing +).*/\1<svm>/' \
        -e 's/^(    Atomics +).*/\1<svm>/' \
        -e 's/^(\[<suffix>\/[0-9]+\] +CL_DEVICE_SVM_CAPABILITIES +).*/\1<svm>/' \
        -e 's/^(    Run native kernels +).*/\1<native>/' \
        -e 's/^(\[<suffix>\/[0-9]+\] +CL_DEVICE_EXECUTION_CAPABILITIES +).*/\1<native>/' |
    if [ "$icd" = 0 ]; then
        # No loader section in LD_PRELOAD mode; trailing blank lines go with it.
        sed -e '/^ICD loader properties/,$d' -e '/^\[OCLICD\//d' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'
    else
        cat
    fi
}

check_vocl_identity() { # FILE: it is VOCL's listing (not PoCL's by mistake), without SVM
    local f=$1 bad=0
    grep -Eq '^  (Platform Name|CL_PLATFORM_NAME) +VOCL$' "$f" ||
        { echo "FAIL $(basename "$f"): the platform is not VOCL"; bad=1; }
    grep -Eq '^  (Platform Extensions function suffix|CL_PLATFORM_ICD_SUFFIX_KHR) +VOCL$' "$f" ||
        { echo "FAIL $(basename "$f"): the ICD suffix is not VOCL"; bad=1; }
    if grep -E '^    (Coarse-grained buffer|Fine-grained buffer|Fine-grained system) sharing|^    Atomics ' "$f" |
        grep -vqE ' No$'; then
        echo "FAIL $(basename "$f"): VOCL reports SVM support"; bad=1
    fi
    local lists with
    lists=$(grep -cE '^  (Platform|Device) Extensions  |^  CL_PLATFORM_EXTENSIONS  |CL_DEVICE_EXTENSIONS  ' "$f")
    with=$(grep -cE '(^  (Platform|Device) Extensions  |^  CL_PLATFORM_EXTENSIONS  |CL_DEVICE_EXTENSIONS  ).* cl_vocl_device_location$' "$f")
    if [ "$lists" -eq 0 ] || [ "$with" -ne "$lists" ]; then
        echo "FAIL $(basename "$f"): $with of $lists lists of extensions name cl_vocl_device_location"; bad=1
    fi
    if grep -qE 'CL_DEVICE_SVM_CAPABILITIES +[^ ]' "$f"; then
        echo "FAIL $(basename "$f"): VOCL reports SVM capabilities"; bad=1
    fi
    if grep -E '^    Run native kernels ' "$f" | grep -vqE ' No$' ||
        grep -E 'CL_DEVICE_EXECUTION_CAPABILITIES ' "$f" | grep -vqE ' CL_EXEC_KERNEL$'; then
        echo "FAIL $(basename "$f"): VOCL reports native kernels"; bad=1
    fi
    return $bad
}

how="LD_PRELOAD mode"
[ "$icd" = 1 ] && how="ICD mode"
status=0
modes=(human raw)
# Debian's clinfo 3.0.23.01.25 overflows a heap buffer of its own in --raw
# (a sprintf): a sanitizer build, which loads ASan into the client for
# libvocl (VOCL_PRELOAD), would report that natively as well.
if [[ "${VOCL_PRELOAD:-}" == *libasan* ]]; then
    modes=(human)
    echo "NOTE clinfo --raw not run: clinfo overflows its own buffer there, which ASan reports (natively too)"
fi
for mode in "${modes[@]}"; do
    args=()
    [ "$mode" = raw ] && args=(--raw)
    ext_time run_both "$mode" "${args[@]}"
    t_both=$ext_secs
    check_vocl_identity "$tmp/$mode.vocl" || status=1
    normalise native <"$tmp/$mode.native" >"$tmp/$mode.native.n"
    normalise vocl <"$tmp/$mode.vocl" >"$tmp/$mode.vocl.n"
    lines=$(wc -l <"$tmp/$mode.vocl")
    if diff -u "$tmp/$mode.native.n" "$tmp/$mode.vocl.n" >"$tmp/$mode.diff"; then
        echo "PASS clinfo ${args[*]:-(human)}: $lines lines equal to native's; $n devices ($np proxies x $dp), $how [${t_both}s]"
    else
        echo "FAIL clinfo ${args[*]:-(human)}: differs from native after normalisation (--- native, +++ vocl):"
        grep -E '^[-+][^-+]' "$tmp/$mode.diff" | head -40
        status=1
    fi
    if [ -s "$tmp/$mode.vocl.err" ]; then
        echo "  libvocl said (stderr of the vocl run):"
        sort "$tmp/$mode.vocl.err" | uniq -c | sed 's/^/   /' | head -10
    fi
done
exit $status
