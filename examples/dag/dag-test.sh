#!/bin/bash
# dag-test.sh: the integration tests of the DAG runtime's applications
# (tests/apps/meson.build; mode multi: examples/dag/meson.build).
#
#   dag-test.sh native PLAIN APP ARGS...
#     runs APP on the PoCL devices of POCL_DEVICES with DCR and DHDCR both
#     on, both off, and each alone; every run must say verified=yes, all
#     must give the same checksum= as PLAIN (the same application written
#     directly on OpenCL, run on one device), and the counters must show
#     what the optimisations promise (see expect below); the DAG_TRACE
#     files of the first run must hold every command (see trace below).
#   dag-test.sh vocl VOCL_RUN P D APP ARGS...
#     the same under `VOCL_RUN -n P -d D --`, with both optimisations on and
#     both off (each alone is left to the native test: every vocl-run
#     starts an MPI job), plus one native run on two PoCL devices whose
#     checksum the others must match.
#   dag-test.sh multi PLAIN MULTI ARGS...
#     runs MULTI (the application written directly on OpenCL for every
#     device: examples/dag/multi-*.c) on the PoCL devices of POCL_DEVICES:
#     it must say verified=yes, run on two or more devices, and give the
#     checksum= of PLAIN run on one device.
#   dag-test.sh multi-vocl VOCL_RUN P D PLAIN MULTI ARGS...
#     the same with MULTI under `VOCL_RUN -n P -d D --` (PLAIN natively).
#   dag-test.sh nodes VOCL_RUN APP
#     DQL's FROM NODE under `VOCL_RUN -n 2 -d 2` with DAG_NODE_SIZE=2 (two
#     proxies of two devices: nodes 0 and 1, where cl_vocl_device_location
#     says one node, this host; the override wins): node 1 alone is 2
#     devices, nodes 0 and 1 are 4, node 2 is none (exit status 2).
#   dag-test.sh location VOCL_RUN VOCLPROXYD APP
#     nodes from cl_vocl_device_location, no DAG_NODE_SIZE (issue 38):
#     under `VOCL_RUN -n 4 -d 2`, each proxy (ranks 1-4) told its own node
#     by VOCL_NODE_NAME, named against the rank order (node8 .. node5) so
#     that numbering by name would go wrong: the devices are on nodes 0-3,
#     two each, in rank order, and FROM NODE 2 runs on exactly the two of
#     the third node to appear (node6, rank 3).  Then two nodes whose
#     proxies alternate (host1: ranks 1 and 3, host0: 2 and 4): FROM NODE 1
#     is the four devices of ranks 2 and 4, and the run on all eight,
#     verified, broadcasts along a tree that crosses between the nodes
#     once (one over the device order would cross twice: DAG_TRACE).
#   dag-test.sh location-native APP
#     the same natively, where no driver has the extension: every device
#     on node 0 with no node name, FROM NODE 0 selects them all and FROM
#     NODE 1 none.
#   dag-test.sh bad-input APP
#     broken command lines and queries: each must end with exit status 2 and
#     a message naming the problem, never a crash or a RESULT line.
set -u
mode=$1
shift
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# field NAME LINE: the value of NAME= in a RESULT line.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# run LABEL DCR DHDCR COMMAND...: prints the RESULT line into $dir/LABEL.
run() {
    local label=$1 dcr=$2 dhdcr=$3
    shift 3
    local out rc
    out=$(DAG_DCR=$dcr DAG_DHDCR=$dhdcr "$@" 2>"$dir/$label.err")
    rc=$?
    local last
    last=$(tail -n 1 <<<"$out")
    echo "$label: $last"
    if [[ $rc != 0 || $last != RESULT\ *\ verified=yes ]]; then
        fail "$label: exit status $rc"
        tail -n 80 "$dir/$label.err"
    fi
    printf '%s\n' "$last" >"$dir/$label"
}

# expect APP: what the counters of the runs must show, for two or more
# devices (with one, nothing is replicated and nothing changes).
expect() {
    local app=$1 on off dcr dhdcr devices
    on=$(<"$dir/on") off=$(<"$dir/off")
    # Without runs of each optimisation alone, both on stands for each.
    dcr=$(cat "$dir/dcr" 2>/dev/null || echo "$on")
    dhdcr=$(cat "$dir/dhdcr" 2>/dev/null || echo "$on")
    devices=$(field devices "$on")
    local sum
    sum=$(field checksum "$on")
    for l in off dcr dhdcr; do
        [[ ! -e $dir/$l || $(field checksum "$(<"$dir/$l")") == "$sum" ]] ||
            fail "checksum of '$l' differs from 'on' ($sum)"
    done
    [[ $(field broadcasts "$off") == 0 && $(field dhdcr_writes "$off") == 0 ]] ||
        fail "collectives or copies replaced with both optimisations off"
    [[ $devices -ge 2 ]] || return 0
    local h2d_off h2d_dcr h2d_dhdcr
    h2d_off=$(field h2d_bytes "$off") h2d_dcr=$(field h2d_bytes "$dcr")
    h2d_dhdcr=$(field h2d_bytes "$dhdcr")
    case $app in
    dag-linreg | dag-matmul | dag-knn | dag-nbody)
        # A broadcast's bytes leave the host once instead of once per device.
        [[ $(field broadcasts "$dcr") -ge 1 && $h2d_dcr -lt $h2d_off ]] ||
            fail "DCR made no broadcast, or the host sent as much ($h2d_dcr vs $h2d_off)"
        ;;
    esac
    case $app in
    dag-abcd)
        # Only the inputs go from the host to a device: A and C split, B and
        # D to every device (once, with DCR too); no part of AB or CD.
        local n m h2d_on
        n=$(field size "$on") h2d_on=$(field h2d_bytes "$on")
        m=$((n * n * 4))
        [[ ! -e $dir/dhdcr || $h2d_dhdcr == $(((2 + 2 * devices) * m)) ]] ||
            fail "with DHDCR the host sent $h2d_dhdcr bytes, not the inputs' $(((2 + 2 * devices) * m))"
        [[ $(field dhdcr_writes "$dhdcr") -gt 0 ]] || fail "DHDCR replaced no write"
        [[ $h2d_on == $((4 * m)) ]] ||
            fail "with DHDCR and DCR the host sent $h2d_on bytes, not the inputs' $((4 * m))"
        ;;
    dag-floyd)
        # Only the initial matrix goes from the host to a device.
        local n
        n=$(field size "$on")
        [[ $h2d_dhdcr == $((n * n * 4)) ]] ||
            fail "with DHDCR the host sent $h2d_dhdcr bytes, not the matrix's $((n * n * 4))"
        ;;
    dag-nbody)
        [[ $(field dhdcr_writes "$dhdcr") -gt 0 ]] || fail "DHDCR replaced no write"
        ;;
    dag-perlin)
        [[ $(field gathers "$dcr") -ge 1 && $(field d2h_ops "$dcr") == 1 ]] ||
            fail "DCR made no gather, or the host read more than once"
        ;;
    esac
}

# trace: the DAG_TRACE files of the 'on' run: a dot graph with one node per
# command the RESULT line counts, and a Chrome trace JSON with one event per
# command, on as many rows as there are devices.
trace() {
    local on commands nodes
    on=$(<"$dir/on")
    commands=$(field commands "$on")
    nodes=$(grep -c '^  c[0-9]* \[label=' "$dir/trace.dot")
    [[ $(head -n 1 "$dir/trace.dot") == "digraph dag {" && $nodes == "$commands" ]] ||
        fail "DAG_TRACE: $nodes nodes in the dot file, RESULT says $commands commands"
    grep -q ' -> ' "$dir/trace.dot" || fail "DAG_TRACE: no edges"
    /usr/bin/env python3 - "$dir/trace.dot.json" "$commands" "$(field devices "$on")" <<'PY' ||
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
rows = {e["tid"] for e in events}
assert len(events) == int(sys.argv[2]), (len(events), sys.argv[2])
assert rows == set(range(int(sys.argv[3]))), rows
assert all(e["dur"] >= 0 for e in events)
PY
        fail "DAG_TRACE: the timeline JSON does not hold one event per command and device"
}

native() {
    local plain=$1
    shift
    POCL_DEVICES=pthread run plain 1 1 "$plain" "${@:2}"
    DAG_TRACE=$dir/trace.dot run on 1 1 "$@"
    run off 0 0 "$@"
    run dcr 1 0 "$@"
    run dhdcr 0 1 "$@"
    trace
    expect "$(basename "$1")"
    [[ $(field checksum "$(<"$dir/plain")") == $(field checksum "$(<"$dir/on")") ]] ||
        fail "the result differs from the plain OpenCL version's"
}

vocl() {
    local vocl_run=$1 p=$2 d=$3
    shift 3
    POCL_DEVICES="pthread pthread" run native 1 1 "$@"
    run on 1 1 "$vocl_run" -n "$p" -d "$d" -- "$@"
    run off 0 0 "$vocl_run" -n "$p" -d "$d" -- "$@"
    expect "$(basename "$1")"
    [[ $(field checksum "$(<"$dir/native")") == $(field checksum "$(<"$dir/on")") ]] ||
        fail "the result under vocl-run differs from the native one"
}

launcher=() # multi-vocl's
multi() {
    local plain=$1
    shift
    POCL_DEVICES=pthread run plain 1 1 "$plain" "${@:2}"
    run multi 1 1 "${launcher[@]}" "$@"
    local devices sum
    devices=$(field devices "$(<"$dir/multi")") sum=$(field checksum "$(<"$dir/plain")")
    [[ $devices -ge 2 ]] || fail "$(basename "$1") ran on '$devices' device(s), not two or more"
    [[ -n $sum && $(field checksum "$(<"$dir/multi")") == "$sum" ]] ||
        fail "the result differs from the plain OpenCL version's ($sum)"
}

# bad CASE PATTERN ARGS...: APP ARGS must fail with status 2 and say PATTERN.
bad() {
    local name=$1 pattern=$2
    shift 2
    local out rc
    out=$("$program" "$@" 2>&1 >"$dir/stdout")
    rc=$?
    if [[ $rc != 2 ]] || ! grep -q -- "$pattern" <<<"$out" || grep -q '^RESULT' "$dir/stdout"; then
        fail "$name: status $rc, wanted 2 and '$pattern'; it said:"
        printf '%s\n' "$out" | head -n 5
    else
        echo "ok $name: $(grep -m 1 -- "$pattern" <<<"$out")"
    fi
}

bad_input() {
    program=$1
    local help
    help=$("$program" --help) && grep -q '^Usage: ' <<<"$help" || fail "--help"
    bad unknown-option "unknown argument '--frobnicate'" --frobnicate
    bad zero-size '-n needs an integer from 1' -n 0
    bad not-a-number '-n needs an integer' -n 12x
    bad missing-value '-n needs an integer' -n
    bad no-query '--query needs a DQL query' --query
    bad syntax 'DQL: at position 11 of "SELECT ALL WHER": expected FROM NODE, WHERE, ORDER BY' \
        --query 'SELECT ALL WHER'
    bad attribute "unknown device attribute 'SPEED'" --query 'SELECT ALL WHERE SPEED > 1'
    bad type-value 'expected GPU, CPU, ACCELERATOR' --query 'SELECT ALL WHERE TYPE = FPGA'
    bad selects-none 'selects none of the' --query 'SELECT ALL WHERE MAX_COMPUTE_UNITS > 1000000'
    bad no-node 'selects none of the' --query 'SELECT ALL FROM NODE 5'
    bad too-many-devices 'device(s) requested, only' -d 99
    bad too-few-units 'cannot keep' -n 1 -d 2
}

nodes() {
    local vocl_run=$1 app=$2 query want out
    for pair in "1:2" "0, 1:4"; do
        query="SELECT ALL FROM NODE ${pair%:*}" want=${pair#*:}
        out=$(DAG_NODE_SIZE=2 "$vocl_run" -n 2 -d 2 -- "$app" -n 64 --query "$query" 2>/dev/null |
            tail -n 1)
        echo "$query: $out"
        [[ $(field devices "$out") == "$want" && $out == *verified=yes ]] ||
            fail "'$query' did not run on $want devices"
    done
    out=$(DAG_NODE_SIZE=2 "$vocl_run" -n 2 -d 2 -- "$app" -n 64 --query "SELECT ALL FROM NODE 2" \
        2>&1)
    local rc=$?
    [[ $rc != 0 ]] && grep -q 'selects none of the 4 device(s)' <<<"$out" ||
        fail "'FROM NODE 2' (status $rc) did not say it selects none of the 4 devices"
}

# devices FILE: the "device I (node N NAME)" lines of a run's stderr, as
# "I N NAME" (NAME: this host's without the extension).
devices() {
    sed -n 's/^device \([0-9]*\) (node \([0-9]*\) *\([^)]*\)): .*/\1 \2 \3/p' "$1" | sed 's/ *$//'
}

# located LABEL WANT COMMAND...: runs COMMAND (DAG_NODE_SIZE unset), which
# must verify; its device lines must be WANT (one "I N NAME" a line).
located() {
    local label=$1 want=$2
    shift 2
    local out rc
    out=$(env -u DAG_NODE_SIZE "$@" 2>"$dir/$label.err")
    rc=$?
    out=$(tail -n 1 <<<"$out")
    echo "$label: $out"
    if [[ $rc != 0 || $out != RESULT\ *\ verified=yes ]]; then
        fail "$label: exit status $rc, not verified"
        tail -n 40 "$dir/$label.err"
        return 1
    fi
    local got
    got=$(devices "$dir/$label.err")
    if [[ $got != "$want" ]]; then
        fail "$label: the devices are not where they should be"
        diff <(printf '%s\n' "$want") <(printf '%s\n' "$got")
        return 1
    fi
}

location() {
    local vocl_run=$1 proxyd=$2 app=$3
    # wrapper NAME: each proxy names its node NAME, in which $PMI_RANK is
    # its rank (hydra sets it; the application is rank 0).
    wrapper() {
        printf '#!/bin/sh\nVOCL_NODE_NAME=%s exec "%s" "$@"\n' "$1" "$proxyd" >"$dir/proxyd"
        chmod +x "$dir/proxyd"
    }
    wrapper 'node$((9 - PMI_RANK))'
    local want="" k
    for k in 0 1 2 3; do
        want+="$((2 * k)) $k node$((8 - k))"$'\n'"$((2 * k + 1)) $k node$((8 - k))"$'\n'
    done
    located named-all "${want%$'\n'}" \
        env VOCL_PROXYD="$dir/proxyd" "$vocl_run" -n 4 -d 2 -- "$app" -n 64
    located named-node-2 $'0 2 node6\n1 2 node6' \
        env VOCL_PROXYD="$dir/proxyd" "$vocl_run" -n 4 -d 2 -- "$app" -n 64 \
        --query "SELECT ALL FROM NODE 2"
    echo "ok: FROM NODE 2 ran on the two devices of node6 (rank 3), the third node"

    wrapper 'host$((PMI_RANK % 2))'
    located alternate-node-1 $'0 1 host0\n1 1 host0\n2 1 host0\n3 1 host0' \
        env VOCL_PROXYD="$dir/proxyd" "$vocl_run" -n 4 -d 2 -- "$app" -n 64 \
        --query "SELECT ALL FROM NODE 1"
    located alternate-all $'0 0 host1\n1 0 host1\n2 1 host0\n3 1 host0\n4 0 host1\n5 0 host1\n6 1 host0\n7 1 host0' \
        env VOCL_PROXYD="$dir/proxyd" DAG_TRACE="$dir/alternate.dot" DAG_DCR=on "$vocl_run" -n 4 -d 2 -- \
        "$app" -n 64 || return
    # (DAG_DCR=on: left to auto, DCR would be off where copies between
    # proxies cost more than writes, as on one host.)
    # The broadcast: "N write broadcast" on device 0, then each copy
    # ("copy broadcast" on its device) waits for the broadcast command it
    # copies from.
    local crossings
    crossings=$(awk '
        /label="[0-9]* (write|copy) broadcast/ {
            id = $1; sub(/^c/, "", id)
            match($0, /device [0-9]+/); dev[id] = substr($0, RSTART + 7, RLENGTH - 7)
        }
        / -> / { from = $1; to = $3; sub(/^c/, "", from); sub(/^c/, "", to); sub(/;$/, "", to)
                 edge[++n] = from " " to }
        END {
            for (k = 1; k <= n; k++) {
                split(edge[k], e, " ")
                if ((e[1] in dev) && (e[2] in dev)) {
                    copies++
                    # devices 0, 1, 4, 5 on host1; 2, 3, 6, 7 on host0
                    if (int(dev[e[1]] / 2) % 2 != int(dev[e[2]] / 2) % 2) cross++
                }
            }
            print copies + 0, cross + 0
        }' "$dir/alternate.dot")
    if [[ $crossings != "7 1" ]]; then
        fail "the broadcast's copies, and of them between nodes: '$crossings', wanted '7 1'"
        return
    fi
    echo "ok: FROM NODE 1 ran on ranks 2 and 4's devices; the broadcast: 7 copies, 1 between nodes"
}

location_native() {
    local app=$1
    local host
    host=$(hostname)
    located native-all "0 0 $host"$'\n'"1 0 $host" env POCL_DEVICES="pthread pthread" "$app" -n 64
    located native-node-0 "0 0 $host"$'\n'"1 0 $host" env POCL_DEVICES="pthread pthread" "$app" -n 64 \
        --query "SELECT ALL FROM NODE 0"
    local out rc
    out=$(env -u DAG_NODE_SIZE POCL_DEVICES="pthread pthread" "$app" -n 64 \
        --query "SELECT ALL FROM NODE 1" 2>&1)
    rc=$?
    [[ $rc == 2 ]] && grep -q 'selects none of the 2 device(s)' <<<"$out" ||
        fail "natively 'FROM NODE 1' (status $rc) did not select none of the 2 devices"
    echo "ok: natively every device on node 0"
}

case $mode in
native) native "$@" ;;
location) location "$@" ;;
location-native) location_native "$@" ;;
multi) multi "$@" ;;
multi-vocl)
    launcher=("$1" -n "$2" -d "$3" --)
    shift 3
    multi "$@"
    ;;
nodes) nodes "$@" ;;
vocl) vocl "$@" ;;
bad-input) bad_input "$@" ;;
*)
    echo "usage: dag-test.sh native|multi|multi-vocl|vocl|nodes|location|location-native|bad-input ..." >&2
    exit 2
    ;;
esac
[[ $failures == 0 ]] || { echo "$failures failure(s)"; exit 1; }
echo "all passed"
