#!/bin/bash
# allpairs-test.sh: the integration tests of the all-pairs applications
# (tests/apps/meson.build).
#
#   allpairs-test.sh run COMMAND...
#     runs COMMAND (an application and its arguments, or vocl-run ... --
#     and one) and passes when it exits 0 with a RESULT line saying
#     verified=yes for every pair (n(n-1)/2 of them at pairs_per_s x seconds).
#   allpairs-test.sh identical VOCL_RUN PROGRAM ARGS...
#     runs PROGRAM ARGS natively on two PoCL devices and under
#     VOCL_RUN -n 2 -d 1, each writing its results with -o; both must be
#     verified and the two result files identical, byte for byte.
#   allpairs-test.sh caches PROGRAM ARGS...
#     small caches (5 slots a device, a host cache of 2): items are evicted
#     and loaded again (R > 1) and the results still verify.  Then the
#     third level alone: a device cache that holds every item (nothing is
#     evicted) and no host cache, so an item the second device needs is on
#     the first one for the rest of the run and comes device to device
#     (hit_peer > 0) whenever the devices share work (steals > 0); with
#     --hops 0 nothing goes device to device (bytes_peer=0).
#   allpairs-test.sh trace PROGRAM ARGS...
#     --trace writes Chrome trace JSON with the runtime's threads in it.
#   allpairs-test.sh location VOCL_RUN VOCLPROXYD PROGRAM ARGS...
#     the steal order by node from cl_vocl_device_location, no --group
#     (issue 38): under `VOCL_RUN -n 4 -d 2` with each proxy (ranks 1-4)
#     told its own node by VOCL_NODE_NAME, every device's printed steal
#     order (-v) starts with the other device of its node, then the six of
#     the other nodes; with two nodes whose proxies alternate (ranks 1 and
#     3, 2 and 4: devices 0, 1, 4, 5 and 2, 3, 6, 7) it starts with the
#     three of its node; there --group 2 still overrides (pairs 0-1, 2-3,
#     ...).  Each run verified.
#   allpairs-test.sh location-native PROGRAM ARGS...
#     natively on two PoCL devices, no extension: both on node 0, each
#     stealing from the other.
#   allpairs-test.sh bad-input PROGRAM
#     broken options and files, case by case: each must end with exit
#     status 2 and a message naming the problem, never a RESULT line.
set -u
mode=$1
shift
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT

# field NAME LINE: the value of NAME= in a RESULT line.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# check COMMAND...: runs it; sets $last to its RESULT line; fails unless
# it exited 0 and verified.
check() {
    local out rc
    out=$("$@" 2>"$dir/stderr")
    rc=$?
    tail -n 6 "$dir/stderr"
    printf '%s\n' "$out"
    last=$(grep '^RESULT ' <<<"$out" | tail -n 1)
    [[ $rc == 0 ]] || { echo "FAIL: exit status $rc"; return 1; }
    [[ $last == RESULT\ *\ verified=yes ]] || { echo "FAIL: not verified"; return 1; }
}

run() {
    check "$@" || return 1
    local n pairs
    n=$(field items "$last")
    pairs=$(awk -v r="$(field pairs_per_s "$last")" -v s="$(field seconds "$last")" \
        'BEGIN { printf "%.0f", r * s }')
    [[ $pairs == $((n * (n - 1) / 2)) ]] || { echo "FAIL: $pairs pairs of $n items"; return 1; }
    echo "ok: $pairs pairs"
}

identical() {
    local vocl_run=$1
    shift
    POCL_DEVICES="pthread pthread" check "$@" -o "$dir/native.txt" || return 1
    [[ $(field devices "$last") == 2 ]] || { echo "FAIL: native on $(field devices "$last") devices"; return 1; }
    check "$vocl_run" -n 2 -d 1 -- "$@" -o "$dir/vocl.txt" || return 1
    [[ $(field devices "$last") == 2 ]] || { echo "FAIL: vocl on $(field devices "$last") devices"; return 1; }
    [[ -s $dir/native.txt ]] || { echo "FAIL: no results written"; return 1; }
    cmp "$dir/native.txt" "$dir/vocl.txt" || { echo "FAIL: results differ"; return 1; }
    echo "ok: $(wc -l <"$dir/native.txt") results identical natively and under vocl-run"
}

caches() {
    check "$@" --device-slots 5 --jobs 2 --host-slots 2 --hops 1 || return 1
    local r n peer steals
    r=$(field R "$last")
    n=$(field items "$last")
    awk -v r="$r" 'BEGIN { exit !(r > 1) }' || { echo "FAIL: R = $r, expected evictions"; return 1; }
    echo "ok: R = $r with small caches, third level hit $(field hit_peer "$last") %"
    # With 5 slots a device the two rarely hold the same item at the same
    # time, so whether the third level hits there depends on the timing
    # (none at all under the sanitizers, at times).  With a slot for every
    # item nothing leaves a device: once the devices share work, every item
    # the second one asks for is on the first (unless it asks before the
    # first's fill is even enqueued).
    check "$@" --device-slots "$n" --jobs 2 --host-slots 0 --hops 1 || return 1
    peer=$(field hit_peer "$last")
    steals=$(sed -n 's/.* \([0-9]*\) steals$/\1/p' "$dir/stderr")
    [[ -n $steals ]] || { echo "FAIL: no steal count"; return 1; }
    if [[ $steals == 0 ]]; then
        echo "ok: one device did everything (no steal): nothing to share"
    else
        awk -v p="$peer" 'BEGIN { exit !(p > 0) }' || { echo "FAIL: no third-level hit ($steals steals)"; return 1; }
        [[ $(field bytes_peer "$last") != 0 ]] || { echo "FAIL: hits but no bytes device to device"; return 1; }
        echo "ok: third level hit $peer % ($steals steals)"
    fi
    check "$@" --device-slots 5 --jobs 2 --host-slots 2 --hops 0 || return 1
    [[ $(field bytes_peer "$last") == 0 ]] || { echo "FAIL: device to device with --hops 0"; return 1; }
    echo "ok: R = $(field R "$last") without the third level"
}

trace() {
    check "$@" --trace "$dir/trace.json" || return 1
    python3 - "$dir/trace.json" <<'EOF' || return 1
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["args"]["name"] for e in events if e["ph"] == "M"}
spans = {e["name"] for e in events if e["ph"] == "X"}
for want in ("io", "completion", "worker 0", "submitter 1", "parser 0"):
    assert want in names, "no thread " + want
for want in ("read", "parse", "load", "compare", "postprocess"):
    assert want in spans, "no span " + want
print("ok: %d spans, threads %s" % (sum(e["ph"] == "X" for e in events), sorted(names)))
EOF
}

# orders NODES COMMAND...: runs COMMAND -v, which must verify; each
# device's line "device D: node N \"NAME\"..., steal order A B | C D"
# must have N and NAME as NODES says (line D + 1: "N NAME", NAME may be
# empty), and list every other device once: first those of its node (by
# NAME, or by N under --group), "|", then the others.
orders() {
    local nodes=$1
    shift
    check "$@" -v || return 1
    python3 - "$dir/stderr" "$nodes" <<'EOF' || return 1
import re, sys
lines = open(sys.argv[1]).read().splitlines()
want = [(l.split(" ", 1) + [""])[:2] for l in sys.argv[2].splitlines()]
seen = {}
for l in lines:
    m = re.search(r': device (\d+): node (\d+) "([^"]*)"( \(--group\))?, steal order (.*)$', l)
    if m:
        seen[int(m[1])] = (m[2], m[3], m[4] is not None, m[5].split())
p = len(want)
assert sorted(seen) == list(range(p)), "devices with a steal order: %s" % sorted(seen)
for d, (node, name, group, order) in sorted(seen.items()):
    assert [node, name] == want[d], "device %d: node %s %r, wanted %s" % (d, node, name, want[d])
    key = (lambda x: seen[x][0]) if group else (lambda x: seen[x][1])
    assert order.count("|") == 1, "device %d: %s" % (d, order)
    bar = order.index("|")
    peers = [int(x) for x in order[:bar] + order[bar + 1:]]
    assert sorted(peers) == [x for x in range(p) if x != d], "device %d tries %s" % (d, peers)
    local = [x for x in range(p) if x != d and key(x) == key(d)]
    assert sorted(peers[:bar]) == local, "device %d: first %s, its node's are %s" % (d, peers[:bar], local)
    print("ok: device %d on %s (node %s): steals from %s" % (d, name or "this node", node, " ".join(order)))
EOF
}

location() {
    local vocl_run=$1 proxyd=$2
    shift 2
    # wrapper NAME: each proxy names its node NAME, in which $PMI_RANK is
    # its rank (hydra sets it; the application is rank 0).
    wrapper() {
        printf '#!/bin/sh\nVOCL_NODE_NAME=%s exec "%s" "$@"\n' "$1" "$proxyd" >"$dir/proxyd"
        chmod +x "$dir/proxyd"
    }
    local d four="" alternate="" pairs=""
    for d in 0 1 2 3 4 5 6 7; do
        four+="$((d / 2)) node$((8 - d / 2))"$'\n'
        # ranks 1 and 3 on host1 (node 0), 2 and 4 on host0 (node 1)
        alternate+="$((d / 2 % 2)) host$((1 - d / 2 % 2))"$'\n'
        pairs+="$((d / 2)) host$((1 - d / 2 % 2))"$'\n'
    done
    wrapper 'node$((9 - PMI_RANK))'
    orders "$four" env VOCL_PROXYD="$dir/proxyd" "$vocl_run" -n 4 -d 2 -- "$@" || return 1
    echo "ok: four nodes, each device's node peer first"
    wrapper 'host$((PMI_RANK % 2))'
    orders "$alternate" env VOCL_PROXYD="$dir/proxyd" "$vocl_run" -n 4 -d 2 -- "$@" || return 1
    echo "ok: two nodes whose devices alternate, each device's three node peers first"
    orders "$pairs" env VOCL_PROXYD="$dir/proxyd" "$vocl_run" -n 4 -d 2 -- "$@" --group 2 ||
        return 1
    echo "ok: --group 2 overrides the driver's nodes"
}

location_native() {
    local host
    host=$(hostname)
    orders "0 $host"$'\n'"0 $host" env POCL_DEVICES="pthread pthread" "$@" || return 1
    echo "ok: natively both devices on this node"
}

failures=0
# expect NAME PATTERN ARGS...: PROGRAM ARGS must fail with status 2 and say
# PATTERN on stderr.
expect() {
    local name=$1 pattern=$2
    shift 2
    local out rc
    out=$(POCL_DEVICES="pthread pthread" "$program" "$@" 2>&1 >"$dir/stdout")
    rc=$?
    if [[ $rc != 2 ]] || ! grep -q -- "$pattern" <<<"$out" || grep -q '^RESULT' "$dir/stdout"; then
        echo "FAIL $name: status $rc, wanted 2 and '$pattern'; it said:"
        printf '%s\n' "$out" | head -n 5
        failures=$((failures + 1))
    else
        echo "ok $name: $(grep -m 1 -- "$pattern" <<<"$out")"
    fi
}

bad_input() {
    program=$1
    local small=(-n 4 --no-progress)
    expect unknown-option "unknown argument '--frobnicate'" --frobnicate
    expect one-item '-n needs an integer from 2' -n 1
    expect not-a-number '-n needs an integer' -n 12x
    expect missing-value '--dir needs a value' --dir
    expect few-slots '--device-slots needs an integer from 3' --device-slots 2
    expect jobs-too-many 'needs more than 6 device slots' --device-slots 5 --jobs 3
    expect too-many-devices 'devices asked for' "${small[@]}" -d 99
    expect reuse-without-dir '--reuse needs --dir' --reuse
    # The files of a real run, then broken one at a time and read again.
    mkdir -p "$dir/in"
    "$program" "${small[@]}" --dir "$dir/in" >/dev/null 2>&1 || { echo "FAIL: no input made"; return 1; }
    local first
    first=$(ls "$dir/in" | head -n 1)
    mv "$dir/in/$first" "$dir/saved"
    expect missing-file "cannot open .*$first" "${small[@]}" --dir "$dir/in" --reuse
    printf 'garbage\n' >"$dir/in/$first"
    expect garbage-file "$first: " "${small[@]}" --dir "$dir/in" --reuse
    head -c 40 "$dir/saved" >"$dir/in/$first"
    expect truncated-file "$first: " "${small[@]}" --dir "$dir/in" --reuse
    [[ $failures == 0 ]] || { echo "$failures case(s) failed"; return 1; }
}

case $mode in
run) run "$@" ;;
identical) identical "$@" ;;
caches) caches "$@" ;;
trace) trace "$@" ;;
location) location "$@" ;;
location-native) location_native "$@" ;;
bad-input) bad_input "$@" ;;
*)
    echo "usage: allpairs-test.sh run|identical|caches|trace|location|location-native|bad-input ..." >&2
    exit 2
    ;;
esac
