#!/usr/bin/env bash
# hashcat.sh - Debian's hashcat, unmodified, cracks MD5 hashes with its
# OpenCL backend natively and under vocl-run --icd: hashcat dlopens
# libOpenCL itself, so libvocl must be found by the ICD loader
# (OCL_ICD_VENDORS, set by vocl-run --icd), not preloaded.
#
#   hashcat.sh VOCL_RUN PROXIES DEVICES_PER_PROXY
#
# Three MD5 hashes, a brute-force mask of 26^4 x 10 = 4569760 candidates
# shared out over all the devices: two are found ("vocl7", "pocl3"), one
# ("NOPE!") is not in the mask, so hashcat goes through the whole key space
# and exits with 1 (exhausted).  Each run must list every device, find exactly
# the two plaintexts and cover the whole key space.
# Runs: native (as many PoCL devices); VOCL with an empty hashcat kernel
# cache (programs built from source through VOCL, then hashcat's cached
# binaries loaded on the other devices: clCreateProgramWithBinary); VOCL
# again with that cache (binaries only).
# hashcat writes sessions and its kernel cache under HOME / XDG dirs: they
# are temporary; PoCL's own compiler cache stays where it was (POCL_CACHE_DIR),
# which makes the builds seconds instead of a minute.
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
ext_check_args "$@"
vocl_run=$(realpath "$1") np=$2 dp=$3
ext_need hashcat
ext_tmpdir
n=$((np * dp))

export POCL_CACHE_DIR=${POCL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pocl}
export HOME=$tmp/home XDG_DATA_HOME=$tmp/home/data XDG_CONFIG_HOME=$tmp/home/config
mkdir -p "$HOME"
cd "$tmp"
md5() { printf '%s' "$1" | md5sum | cut -d' ' -f1; }
for p in vocl7 pocl3 'NOPE!'; do md5 "$p"; done >hashes
expect=$'pocl3\nvocl7'

status=0
run() { # NAME CACHE-DIR COMMAND-PREFIX...
    local name=$1 cache=$2
    shift 2
    rm -f "$name.out"
    local rc=0
    ext_time env XDG_CACHE_HOME="$cache" "$@" timeout 600 hashcat -m 0 -a 3 \
        --potfile-disable --backend-ignore-cuda --opencl-device-types 1,2,3 \
        -o "$name.out" --outfile-format 2 hashes '?l?l?l?l?d' \
        </dev/null >"$name.log" 2>&1 || rc=$?
    local t=$ext_secs
    local devs found platform progress st why=()
    devs=$(grep -c '^\* Device #[0-9]*: ' "$name.log" || true)
    found=$(sort "$name.out" 2>/dev/null || true)
    platform=$(grep -m1 '^OpenCL API' "$name.log" | sed 's/^OpenCL API (\(.*\)) - Platform #1 \[\(.*\)\]$/\2: \1/' || true)
    progress=$(grep -m1 '^Progress\.*: ' "$name.log" | sed 's/^Progress\.*: //' || true)
    st=$(grep -m1 '^Status\.*: ' "$name.log" | sed 's/^Status\.*: //' || true)
    [ "$rc" = 1 ] || why+=("exit $rc, 1 (exhausted) expected")
    [ "$devs" = "$n" ] || why+=("$devs devices listed, $n expected")
    [ "$found" = "$expect" ] || why+=("cracked: '${found//$'\n'/ }', 'pocl3 vocl7' expected")
    [[ "$progress" == "4569760/4569760 "* ]] || why+=("progress '$progress', the whole key space expected")
    if [ "$name" != native ] && ! ext_vocl_used "$name.log"; then
        why+=("no VOCL profile table: hashcat did not go through libvocl")
    fi
    local speeds
    speeds=$(grep -E '^Speed\.#[0-9*]+\.+: ' "$name.log" | sed -E 's/^Speed\.(#[0-9*]+)\.+: +([0-9.]+ [kMG]?H\/s).*/\1 \2/' | paste -sd, - || true)
    if [ ${#why[@]} -eq 0 ]; then
        echo "PASS $name: ${t}s, $devs devices, cracked ${found//$'\n'/ }, $st, progress $progress; $platform; speed $speeds"
        [ "$name" = native ] || grep -A4 '^call ' "$name.log" | sed 's/^/    /'
    else
        echo "FAIL $name: ${why[*]} (${t}s)"
        sed '/^VOCL profile/,$d' "$name.log" | grep -iE 'error|fail|warn|libvocl|clGet|clCreate|clBuild|clEnqueue|MPI' | sort | uniq -c | head -15 | sed 's/^/    /'
        status=1
    fi
}

# shellcheck disable=SC2046
run native "$tmp/cache-native" env $(ext_native_env) POCL_DEVICES="$(ext_pocl_devices "$n")"
run vocl-cold "$tmp/cache-vocl" env VOCL_PROFILE=1 "$vocl_run" --icd -n "$np" -d "$dp" --
run vocl-warm "$tmp/cache-vocl" env VOCL_PROFILE=1 "$vocl_run" --icd -n "$np" -d "$dp" --
[ "$status" = 0 ] || echo "reproduce: HOME=\$(mktemp -d) $vocl_run --icd -n $np -d $dp -- hashcat -m 0 -a 3 --potfile-disable --backend-ignore-cuda --opencl-device-types 1,2,3 $(md5 vocl7) '?l?l?l?l?d'"
exit $status
