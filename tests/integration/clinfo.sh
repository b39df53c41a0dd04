#!/usr/bin/env bash
# clinfo.sh - clinfo under vocl-run lists one VOCL platform with every
# proxy's devices, and each device's info equals the native device's.
#   clinfo.sh VOCL_RUN PROXIES DEVICES_PER_PROXY
set -euo pipefail
vocl_run=$1 np=$2 dp=$3
want=$((np * dp))
command -v clinfo >/dev/null || { echo "clinfo not installed (apt-get install clinfo)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
devs=$(printf 'pthread %.0s' $(seq "$dp"))
POCL_DEVICES=${devs% } clinfo >"$tmp/native"
timeout 300 "$vocl_run" -n "$np" -d "$dp" -- clinfo >"$tmp/vocl" 2>"$tmp/err" || {
    cat "$tmp/err"; exit 1; }

grep -q '^Number of platforms *1$' "$tmp/vocl" || { echo "not one platform"; exit 1; }
grep -q '^  Platform Name *VOCL$' "$tmp/vocl" || { echo "platform is not VOCL"; exit 1; }
got=$(grep -c '^  Device Name' "$tmp/vocl")
[ "$got" -eq "$want" ] || { echo "$got devices listed, $want expected"; exit 1; }

# One device's section of the detailed listing: from its Device Name line to
# the next one (or the end of the platform's devices).
section() { awk -v n="$2" '/^  Device Name/{k++} /^NULL platform/{k=-1} k==n' "$1"; }
# What VOCL reports differently, on purpose: no shared virtual memory, no
# native kernels (a host function pointer means nothing in a proxy), and
# its own extension, cl_vocl_device_location, in both lists (checked below).
filter() { grep -v -e 'grained buffer sharing' -e 'grained system sharing' -e '^    Atomics ' \
                   -e '^    Run native kernels ' -e '^  *cl_vocl_device_location  *0x400000 (1.0.0)$' |
           sed 's/ cl_vocl_device_location$//' ; }
for ((i = 1; i <= want; i++)); do
    # Proxy device k is native device k of its node (PoCL numbers vendor ids).
    section "$tmp/native" $(( (i - 1) % dp + 1 )) >"$tmp/native.dev"
    section "$tmp/vocl" "$i" >"$tmp/vocl.dev"
    [ "$(grep -c 'cl_vocl_device_location' "$tmp/vocl.dev")" -eq 2 ] ||
        { echo "device $i does not list cl_vocl_device_location in both lists of extensions"; exit 1; }
    if ! diff <(filter <"$tmp/native.dev") <(filter <"$tmp/vocl.dev") >"$tmp/diff"; then
        echo "device $i differs from the native device:"; head -30 "$tmp/diff"; exit 1
    fi
done
lines=$(wc -l <"$tmp/native.dev")
echo "clinfo: 1 VOCL platform, $got devices, each equal to native ($lines info lines each)"
