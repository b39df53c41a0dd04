# common.sh - sourced by the external tests (tests/external/*.sh): unmodified
# third-party OpenCL clients run natively (PoCL) and under vocl-run.
# shellcheck shell=bash

# A client that is not installed skips the test (meson's exit code 77), and
# says so on both streams so that nobody mistakes the skip for a pass.
ext_skip() {
    local msg="SKIPPED, NOT RUN: $* (tools/setup-debian.sh installs it)"
    echo "$msg"
    echo "$msg" >&2
    exit 77
}

# ext_need PROGRAM [DEBIAN PACKAGE]
ext_need() {
    command -v "$1" >/dev/null 2>&1 || ext_skip "$1 is not installed (Debian package ${2:-$1})"
}

# ext_pocl_devices N: the POCL_DEVICES value giving N CPU devices.
ext_pocl_devices() {
    local devs
    devs=$(printf 'pthread %.0s' $(seq "$1"))
    echo "${devs% }"
}

# Natively only PoCL's ICD is listed, whatever else is installed, so that the
# native run sees what the proxies see; where OCL_ICD_VENDORS already says
# which (a GPU node: tools/bench/gpu-node.sh), the proxies inherit it, and
# the native run keeps it.
ext_native_env() {
    local icd=/etc/OpenCL/vendors/pocl.icd
    if [ -n "${OCL_ICD_VENDORS:-}" ]; then
        echo "OCL_ICD_VENDORS=$OCL_ICD_VENDORS"
    elif [ -r "$icd" ]; then
        echo "OCL_ICD_VENDORS=$icd"
    fi
}

# ext_time COMMAND...: runs COMMAND, leaves its wall time in seconds (one
# decimal) in $ext_secs and returns its status.
ext_time() {
    local t0 t1 rc=0
    t0=$(date +%s%N)
    "$@" || rc=$?
    t1=$(date +%s%N)
    # shellcheck disable=SC2034  # read by the callers
    ext_secs=$(printf '%d.%d' $(((t1 - t0) / 1000000000)) $((((t1 - t0) / 100000000) % 10)))
    return $rc
}

# Extra vocl-run options for every vocl run (VOCL_RUN_OPTS, e.g. --icd or -v),
# as an array.
# shellcheck disable=SC2034  # used by the callers
read -ra vocl_opts <<<"${VOCL_RUN_OPTS:-}"

# ext_tmpdir: a temporary directory removed at exit (in $tmp).
ext_tmpdir() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/vocl-ext.XXXXXX")
    # shellcheck disable=SC2064
    trap "rm -rf '$tmp'" EXIT
}

# ext_fail MESSAGE [FILE...]: prints MESSAGE and the tail of each FILE, exits 1.
ext_fail() {
    echo "FAIL: $1"
    shift
    local f
    for f in "$@"; do
        [ -s "$f" ] || continue
        echo "---- last lines of $(basename "$f") ----"
        tail -n 25 "$f" | sed 's/\x1b\[[0-9;]*m//g'
    done
    exit 1
}

# The vocl runs set VOCL_PROFILE=1: libvocl then prints its table of calls at
# exit, which proves that the client really went through libvocl (and did not
# find PoCL by itself).  ext_vocl_used FILE: that table is in FILE.
ext_vocl_used() {
    grep -q '^VOCL profile (pid [0-9]*): ' "$1"
}

# ext_check_args VOCL_RUN PROXIES DEVICES_PER_PROXY: the common arguments.
ext_check_args() {
    if [ $# -lt 3 ] || ! [[ "$2" =~ ^[1-9][0-9]*$ && "$3" =~ ^[1-9][0-9]*$ ]] || [ ! -x "$1" ]; then
        echo "usage: $(basename "$0") VOCL_RUN PROXIES DEVICES_PER_PROXY ..." >&2
        exit 2
    fi
}
