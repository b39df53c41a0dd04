#!/usr/bin/env bash
# clpeak.sh - Debian's clpeak, unmodified, under vocl-run: every test of it
# (global bandwidth, SP/DP/integer compute, transfer bandwidth, kernel
# latency) completes on every VOCL device, with the same sections and
# measurements as natively and no error line; prints the numbers side by side.
#
#   clpeak.sh VOCL_RUN PROXIES DEVICES_PER_PROXY
#
# clpeak sizes its work from the device (work-group size, largest buffer): both
# runs get POCL_MAX_WORK_GROUP_SIZE=16 and POCL_MEMORY_LIMIT=1 (GB), which
# brings a whole run from about 75 s to about 14 s per device natively;
# vocl-run passes them to the proxies.  The native run measures one PoCL
# device (all are alike).  A second, short pass times with profiling events
# (--use-event-timer).  Performance is reported, not judged: this machine
# has 2 cores shared with other work.
#
# clpeak puts all the devices of the platform in one context
# (clCreateContextFromType(CL_DEVICE_TYPE_ALL)) and measures the devices of
# that context: it must see PROXIES x DEVICES_PER_PROXY of them.
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
ext_check_args "$@"
vocl_run=$(realpath "$1") np=$2 dp=$3
ext_need clpeak
ext_tmpdir
n=$((np * dp))
export POCL_MAX_WORK_GROUP_SIZE=${POCL_MAX_WORK_GROUP_SIZE:-16}
export POCL_MEMORY_LIMIT=${POCL_MEMORY_LIMIT:-1}

# parse < output: "DEVICE<TAB>SECTION<TAB>METRIC<TAB>VALUE" per measurement,
# "DEVICE<TAB>SECTION<TAB>-<TAB>skipped" for a test clpeak skips itself, and
# "?<TAB>unexpected<TAB>LINE" for any line that is none of clpeak's.
parse() {
    awk -v OFS='\t' '
        function trim(s) { gsub(/^ +| +$/, "", s); return s }
        /^$/ || /^Platform: / { next }
        /^  Device: / { dev++; sect = ""; next }
        /^    (Driver version|Compute units|Clock frequency) +: / { next }
        /^    Kernel launch latency : [0-9.]+ us$/ { print dev, "Kernel launch latency (us)", "latency", $5; next }
        /^    No half precision support! Skipped$/ { print dev, "Half-precision compute", "-", "skipped"; next }
        /^    Note: --use-event-timer/ { next }
        /^    [A-Z][A-Za-z0-9 -]+\([A-Z]+\)$/ { sect = trim($0); next }
        /^      [^:]+ +: [0-9.]+$/ && sect != "" {
            split($0, kv, ":"); print dev, sect, trim(kv[1]), trim(kv[2]); next
        }
        /^        [^:]+ +: [0-9.]+$/ && sect != "" {  # memcpy lines under a map line
            split($0, kv, ":"); print dev, sect, "  " trim(kv[1]), trim(kv[2]); next
        }
        { print "?", "unexpected", $0 }'
}

# check NAME NATIVE_OUT VOCL_OUT: sections and measurements equal, numbers sane.
status=0
check() {
    local name=$1 nat=$2 voc=$3
    parse <"$nat" >"$nat.p"
    parse <"$voc" >"$voc.p"
    local bad=0
    if grep -q '^?' "$nat.p"; then
        echo "FAIL $name: native output has lines clpeak does not print when all is well:"
        grep '^?' "$nat.p" | cut -f3 | head -5
        bad=1
    fi
    if grep -q '^?' "$voc.p"; then
        echo "FAIL $name: vocl output has lines clpeak prints only on errors:"
        grep '^?' "$voc.p" | cut -f3 | head -10
        bad=1
    fi
    local ndev
    ndev=$(grep -c '^  Device: ' "$voc" || true)
    if [ "$ndev" -ne "$n" ]; then
        echo "FAIL $name: clpeak measured $ndev device(s) under VOCL, $n expected ($np proxies x $dp)"
        bad=1
    fi
    # Every VOCL device: the native device's sections and metrics, in order.
    cut -f2,3 <(grep -v '^?' "$nat.p") >"$tmp/keys.native"
    for ((d = 1; d <= ndev; d++)); do
        awk -F'\t' -v d="$d" '$1 == d' "$voc.p" | cut -f2,3 >"$tmp/keys.vocl"
        if ! diff "$tmp/keys.native" "$tmp/keys.vocl" >"$tmp/keys.diff"; then
            echo "FAIL $name: VOCL device $d did not run what the native device ran (< native, > vocl):"
            head -20 "$tmp/keys.diff"
            bad=1
        fi
    done
    # Measurements are positive numbers.
    if awk -F'\t' '$1 != "?" && $4 != "skipped" && !($4 + 0 > 0)' "$voc.p" | grep -q .; then
        echo "FAIL $name: zero measurements under VOCL:"
        awk -F'\t' '$1 != "?" && $4 != "skipped" && !($4 + 0 > 0)' "$voc.p" | head -5
        bad=1
    fi
    # Side by side.
    echo "$name: native (1 device) vs VOCL (devices 1..$ndev)"
    awk -F'\t' -v OFS='\t' '
        FNR == NR { if ($1 != "?") { k = $2 " | " $3; if (!(k in nat)) order[++nk] = k; nat[k] = $4 }; next }
        $1 != "?" { k = $2 " | " $3; v[k] = v[k] sprintf("%12s", $4) }
        END { for (i = 1; i <= nk; i++) { k = order[i]; printf "  %-58s %12s %s\n", k, nat[k], v[k] } }
    ' "$nat.p" "$voc.p"
    [ "$bad" = 0 ] && echo "PASS $name: $ndev device(s), every test completed, no error line"
    [ "$bad" = 0 ] || status=1
}

run_pass() { # NAME CLPEAK-OPTIONS...
    local name=$1
    shift
    # shellcheck disable=SC2046
    ext_time env $(ext_native_env) POCL_DEVICES=pthread timeout 600 clpeak "$@" \
        >"$tmp/$name.native" 2>&1 || ext_fail "native clpeak $* failed" "$tmp/$name.native"
    local t_nat=$ext_secs
    local rc=0
    ext_time timeout 900 "$vocl_run" "${vocl_opts[@]}" -n "$np" -d "$dp" -- clpeak "$@" \
        >"$tmp/$name.vocl" 2>"$tmp/$name.vocl.err" || rc=$?
    local t_voc=$ext_secs
    echo "== clpeak $*: native ${t_nat}s (1 device), vocl-run ${vocl_opts[*]}${vocl_opts[*]:+ }-n $np -d $dp ${t_voc}s (exit $rc)"
    if [ "$rc" -ne 0 ]; then
        echo "FAIL $name: clpeak exited with $rc under VOCL"
        status=1
    fi
    if [ -s "$tmp/$name.vocl.err" ]; then
        echo "  stderr of the vocl run:"
        sort "$tmp/$name.vocl.err" | uniq -c | sed 's/^/   /' | head -10
    fi
    if ! grep -q '^Platform: VOCL$' "$tmp/$name.vocl"; then
        echo "FAIL $name: clpeak did not measure the VOCL platform"
        status=1
    fi
    check "$name" "$tmp/$name.native" "$tmp/$name.vocl"
}

run_pass all-tests
run_pass event-timer --use-event-timer --global-bandwidth --compute-sp --kernel-latency
exit $status
