#!/usr/bin/env bash
# daemon.sh - long-lived proxies (voclproxyd --listen) and applications
# that connect to them, as deployed: daemons started once, applications
# started alone (no mpirun, no vocl-run) under LD_PRELOAD, over UCX.  All
# traffic stays on loopback: each daemon listens on 127.0.0.1, on a port
# the kernel picks, written to a port file ($tmp/ports/NAME) that the
# applications are given for NAME (px).
#   daemon.sh MPI LIBVOCL VOCLPROXYD EXAMPLES-DIR TEST [HOSTILE [VOCL-SMI]]
# MPI: the build's MPI (not used: daemon mode runs on UCX); TEST: overlap, cycles, deaths,
# hostile (which runs tests/reliability/hostile, HOSTILE), bench
# (vocl-bench --daemons, given as HOSTILE's place: its path), stopped
# (vocl-bench-tenants' two roles, given there too), midchunk
# (vocl-bench-worker, there too), isolate (crasher, there too), drain or
# balance (vocl-ctl, there too), spanning (contexts over devices of several
# daemons: tests/integration's programs, their directory there), ports
# (port files and vocl-smi --watch: VOCL-SMI in HOSTILE's place), metrics
# (voclproxyd --metrics-file and vocl-smi --json: VOCL-SMI in HOSTILE's
# place, tests/daemon/promcheck.py in VOCL-SMI's), restart
# (tests/daemon/leaver in HOSTILE's place).
set -euo pipefail
mpi=$1 lib=$2 proxyd=$3 examples=$4 what=$5 hostile=${6:-} smi=${7:-}
# fail WHY: the test fails, with the stacks of any application that hung.
fail() {
    echo "FAIL: $*"
    hung_stacks "${tmp:-}"
    exit 1
}
. "$(dirname "$0")/watchdog.sh"

tmp=$(mktemp -d)
pids=()
cleanup() {
    # (An application's program and watchdog first: children of its app.)
    for p in "${pids[@]}"; do pkill -9 -P "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    if [ -n "${VOCL_KEEP_TMP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

# UCX on loopback only; a HOME of the test's own (the token).
export UCX_NET_DEVICES=lo HOME=$tmp/home TMPDIR=$tmp
mkdir -p "$HOME" "$tmp/ports"
unset VOCL_APP_RANKS VOCL_CONNECT VOCL_PROXIES

# px NAME[,NAME...]: the daemons' port files, as VOCL_PROXIES takes them.
px() {
    local out="" n
    for n in ${1//,/ }; do out="$out,$tmp/ports/$n"; done
    echo "${out#,}"
}

# start_daemon NAME NDEV [OPTION...]: a daemon, its port in $tmp/ports/NAME
# (the kernel's pick, or $dport); its pid in $dpid.  Its log goes on.
start_daemon() {
    local name=$1 ndev=$2 devs="" i
    shift 2
    for ((i = 0; i < ndev; i++)); do devs="$devs pthread"; done
    # (Its log's lines so far counted first: a daemon started again may
    # say it listens before this shell looks.)
    local was
    touch "$tmp/$name.log"
    was=$(grep -c 'listening on' "$tmp/$name.log" || true)
    # (No MALLOC_PERTURB_, which meson sets: it writes into memory as it
    # is freed, so resident memory would count the free parts of the heap.)
    POCL_DEVICES=${devs# } env -u MALLOC_PERTURB_ "$proxyd" --listen --name "$name" -v \
        --address 127.0.0.1 --port "${dport:-0}" --port-file "$tmp/ports/$name" "$@" \
        >>"$tmp/$name.log" 2>&1 &
    dpid=$!
    pids+=("$dpid")
    for _ in $(seq 200); do
        [ "$(grep -c 'listening on' "$tmp/$name.log" || true)" -gt "$was" ] && return 0
        kill -0 "$dpid" 2>/dev/null || break
        sleep 0.1
    done
    fail "daemon $name did not start: $(cat "$tmp/$name.log")"
}

# clients NAME: how many clients daemon NAME took (its workers' own lines aside).
clients() {
    grep 'connected (process' "$tmp/$1.log" | grep -vc 'voclproxyd\[worker'
}

# state PID NAME: the daemon's figures (SIGUSR1), as "SESSIONS OBJECTS BYTES".
state() {
    local n
    n=$(grep -c 'state:' "$tmp/$2.log" || true)
    kill -USR1 "$1"
    for _ in $(seq 50); do
        [ "$(grep -c 'state:' "$tmp/$2.log" || true)" -gt "$n" ] && break
        sleep 0.1
    done
    grep 'state:' "$tmp/$2.log" | tail -1 |
        sed -E 's/.*state: ([0-9]+) sessions, ([0-9]+) objects, ([0-9]+) bytes.*/\1 \2 \3/'
}

# wait_idle PID NAME SECONDS: until the daemon holds nothing; the seconds
# it took in $idle.  (Not in $(...): its fail must end the test.)
wait_idle() {
    local start=$SECONDS held
    while held=$(state "$1" "$2") && [ "$held" != "0 0 0" ]; do
        [ $((SECONDS - start)) -lt "$3" ] || fail "daemon $2 still holds $held after $3 s"
        sleep 0.2
    done
    idle=$((SECONDS - start))
}

# app LOG PROXIES PROGRAM ARGS...: an application alone, as a user runs it.
# Past 120 s it is ended (status 124), its threads' stacks in LOG.hung
# first, which fail prints: what it waited for.
app() {
    local log=$1 proxies=$2 p rc=0
    shift 2
    case $proxies in */* | *:*) ;; *) proxies=$(px "$proxies") ;; esac
    VOCL_PROXIES=$proxies LD_PRELOAD=$lib "$@" >"$log" 2>&1 &
    p=$!
    watchdog "$p" 120 "$log.hung" >/dev/null 2>&1 &
    wait "$p" || rc=$?
    [ ! -e "$log.hung" ] || rc=124
    return "$rc"
}

verified() { grep -q 'verified=yes' "$1" || fail "$2 did not verify: $(tail -5 "$1")"; }

ms() { echo $(($(date +%s%N) / 1000000)); }

threads() { awk '/^Threads:/{print $2}' "/proc/$1/status"; }

case $what in
overlap)
    # Two daemons started once; applications in turn, then three that
    # start at different times and overlap, twice; each verifies.  After
    # each round the daemons hold nothing, and the second round leaves them
    # with the threads the first did (threads a daemon starts at a first
    # use stay).
    start_daemon a 2 --busy-share; pa=$dpid
    start_daemon b 1 --busy-share; pb=$dpid
    # Limits on by default: a quarter of the node's memory for host copies.
    limits=$(grep -o 'per session at most: .*' "$tmp/a.log") || fail "no limits logged"
    quarter=$(($(awk '/^MemTotal:/{print $2}' /proc/meminfo) / 4096))
    echo "$limits" | grep -Eq "[1-9][0-9]* MiB of memory objects, 65536 objects, $quarter MiB of host" ||
        fail "default limits: $limits (a quarter of memory: $quarter MiB)"
    echo "daemon a: $limits"
    round() {
        local x g n t
        for x in 1 2; do
            app "$tmp/turn$x" a,b "$examples/gemm" -n 128 -r 1 || fail "turn $x: $(tail -3 "$tmp/turn$x")"
            verified "$tmp/turn$x" "turn $x"
        done
        app "$tmp/gemm" a,b "$examples/gemm" -n 512 -r 3 & g=$!
        sleep 0.3
        app "$tmp/nbody" b,a "$examples/nbody" -n 2048 -s 5 & n=$!
        sleep 0.3
        app "$tmp/transpose" a "$examples/transpose" & t=$!
        wait $g || fail "gemm: exit $?: $(tail -3 "$tmp/gemm")"
        wait $n || fail "nbody: exit $?: $(tail -3 "$tmp/nbody")"
        wait $t || fail "transpose: exit $?: $(tail -3 "$tmp/transpose")"
        for x in gemm nbody transpose; do
            verified "$tmp/$x" "$x"
            grep RESULT "$tmp/$x"
        done
        wait_idle "$pa" a 5 >/dev/null
        wait_idle "$pb" b 5 >/dev/null
    }
    round
    ta=$(threads "$pa") tb=$(threads "$pb")
    round
    # Four applications started at the same instant.
    for x in 1 2 3 4; do
        app "$tmp/burst$x" a,b "$examples/gemm" -n 64 -r 1 & burst[$x]=$!
    done
    for x in 1 2 3 4; do
        wait "${burst[$x]}" || fail "burst $x: exit $?: $(tail -3 "$tmp/burst$x")"
        verified "$tmp/burst$x" "burst $x"
    done
    echo "4 applications started at once: all verified"
    # vocl-smi while an application runs: its session, by user, host and process.
    # (Its 100 steps and their check on the CPU take seconds: it is still there.)
    VOCL_PROXIES=$(px a,b) LD_PRELOAD=$lib "$examples/nbody" -n 4096 -s 100 >"$tmp/watched" 2>&1 & w=$!
    pids+=("$w")
    for _ in $(seq 200); do grep -q 'bodies \[' "$tmp/watched" && break; sleep 0.1; done
    "$smi" "$(px a)" "$(px b)" >"$tmp/smi" 2>&1 || fail "vocl-smi: $(cat "$tmp/smi")"
    kill -0 $w 2>/dev/null || fail "the watched application ended before vocl-smi looked"
    grep -Eq "^  [0-9]+ +$(id -un) +$(hostname) +$w +00:00:" "$tmp/smi" ||
        fail "vocl-smi does not list process $w: $(cat "$tmp/smi")"
    cat "$tmp/smi"
    wait $w || fail "the watched application: $(tail -3 "$tmp/watched")"
    verified "$tmp/watched" "the watched application"
    wait_idle "$pa" a 5 >/dev/null
    wait_idle "$pb" b 5 >/dev/null
    # Idle: no session but vocl-smi's own (which it leaves out); a daemon
    # that does not answer (a closed port) gets libvocl's line, the others
    # still listed.
    "$smi" "$(px a)" "$(px b)" 127.0.0.1:1 >"$tmp/smi" 2>&1 || fail "vocl-smi when idle: $(cat "$tmp/smi")"
    grep -q "^proxy a: 2 devices, 0 sessions" "$tmp/smi" &&
        grep -q "^proxy b: 1 device, 0 sessions" "$tmp/smi" &&
        [ "$(grep -c '^  device .* busy   0 %$' "$tmp/smi")" -eq 3 ] &&
        grep -q "proxy 127.0.0.1:1: cannot connect to 127.0.0.1:1 " "$tmp/smi" ||
        fail "vocl-smi when idle: $(cat "$tmp/smi")"
    cat "$tmp/smi"
    [ "$(clients a)" -eq 17 ] || fail "daemon a did not see 17 clients (15 applications, 2 vocl-smi)"
    for d in "a $pa $ta" "b $pb $tb"; do
        set -- $d
        echo "daemon $1: $(clients "$1") clients; holds $(state "$2" "$1")" \
             "(sessions objects bytes); threads $3 after the first round, $(threads "$2") after the rest"
        [ "$(threads "$2")" -le "$3" ] || fail "daemon $1: threads $3 -> $(threads "$2")"
    done
    # A user's file of proxies, as the README shows it: no VOCL_PROXIES,
    # ~/.vocl/proxies; then VOCL_PROXIES_FILE before it; a file that names
    # none is an error.
    mkdir -p "$HOME/.vocl"
    printf '# the GPU nodes\n\n%s   # one device\n%s\n' "$(cat "$tmp/ports/b")" \
        "$(cat "$tmp/ports/a")" >"$HOME/.vocl/proxies"
    printf '%s\n' "$(px a)" >"$tmp/only-a"
    printf '# nothing here\n' >"$tmp/none"
    before_a=$(clients a) before_b=$(clients b)
    LD_PRELOAD="$lib" clinfo -l >"$tmp/from-home" 2>&1 ||
        fail "proxies from ~/.vocl/proxies: $(cat "$tmp/from-home")"
    [ "$(grep -c 'Device #' "$tmp/from-home")" -eq 3 ] ||
        fail "~/.vocl/proxies (b, a) should give 3 devices: $(cat "$tmp/from-home")"
    VOCL_PROXIES_FILE="$tmp/only-a" LD_PRELOAD="$lib" "$examples/gemm" -n 64 -r 1 \
        >"$tmp/from-file" 2>&1 ||
        fail "VOCL_PROXIES_FILE: $(tail -3 "$tmp/from-file")"
    verified "$tmp/from-file" "VOCL_PROXIES_FILE"
    grep -q 'devices=2' "$tmp/from-file" || fail "VOCL_PROXIES_FILE (a): $(grep RESULT "$tmp/from-file")"
    [ "$(clients a)" -eq $((before_a + 2)) ] && [ "$(clients b)" -eq $((before_b + 1)) ] ||
        fail "the files' clients did not reach the daemons named"
    if VOCL_PROXIES_FILE="$tmp/none" LD_PRELOAD="$lib" "$examples/gemm" -n 64 -r 1 \
        >"$tmp/from-none" 2>&1; then
        fail "a file that names no proxy ran: $(tail -3 "$tmp/from-none")"
    fi
    grep -q "$tmp/none names no proxy" "$tmp/from-none" ||
        fail "a file that names no proxy: $(tail -3 "$tmp/from-none")"
    echo "proxies from ~/.vocl/proxies (HOST:PORT) and VOCL_PROXIES_FILE: served"
    ;;
ports)
    # A daemon found by its port file (a name with a '/'), as with no name
    # service reachable from the client; then vocl-smi --watch over it; a
    # stopped daemon's port file is removed.
    smi=$hostile
    mkdir -p "$tmp/run"
    start_daemon c 2 --port-file "$tmp/run/c.port"; pc=$dpid
    port=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$tmp/c.log")
    port=${port#\*:}
    [ -s "$tmp/run/c.port" ] && [ "$(cat "$tmp/run/c.port")" = "$port" ] ||
        fail "port file: '$(cat "$tmp/run/c.port" 2>&1)', the daemon listens on '$port'"
    ls "$tmp/run" | grep -q '\.tmp$' && fail "a temporary file left beside the port file: $(ls "$tmp/run")"
    app "$tmp/by-file" "$tmp/run/c.port" "$examples/gemm" -n 128 -r 1 ||
        fail "by port file: $(tail -3 "$tmp/by-file")"
    verified "$tmp/by-file" "the application given the port file"
    grep -q 'devices=2' "$tmp/by-file" || fail "by port file: $(grep RESULT "$tmp/by-file")"
    app "$tmp/by-port" "$port" "$examples/gemm" -n 64 -r 1 ||
        fail "by HOST:PORT: $(tail -3 "$tmp/by-port")"
    verified "$tmp/by-port" "the application given HOST:PORT"
    [ "$(clients c)" -eq 2 ] || fail "daemon c took $(clients c) clients, not 2"
    echo "by port file and by HOST:PORT: both served"

    # vocl-smi --watch: one connection, a round each 0.5 s, --count rounds.
    start=$(ms)
    "$smi" --watch 0.5 --count 3 "$tmp/run/c.port" >"$tmp/watch" 2>&1 ||
        fail "vocl-smi --watch: $(cat "$tmp/watch")"
    took=$(($(ms) - start))
    [ "$(grep -c '^vocl-smi  ' "$tmp/watch")" -eq 3 ] &&
        [ "$(grep -c "^proxy c: 2 devices, 0 sessions" "$tmp/watch")" -eq 3 ] ||
        fail "vocl-smi --watch 0.5 --count 3: $(cat "$tmp/watch")"
    [ "$took" -ge 1000 ] || fail "vocl-smi --watch 0.5 --count 3 took $took ms: two waits are 1000"
    [ "$(clients c)" -eq 3 ] || fail "vocl-smi --watch connected $(($(clients c) - 2)) times, not once"
    echo "vocl-smi --watch 0.5 --count 3: 3 rounds in $took ms, one connection"
    # An application that starts while vocl-smi watches appears in a later round.
    "$smi" -w 0.3 -c 40 "$tmp/run/c.port" >"$tmp/watch2" 2>&1 & w=$!
    pids+=("$w")
    for _ in $(seq 100); do [ "$(grep -c '^vocl-smi  ' "$tmp/watch2")" -ge 2 ] && break; sleep 0.1; done
    VOCL_PROXIES=$tmp/run/c.port LD_PRELOAD=$lib "$examples/nbody" -n 4096 -s 100 \
        >"$tmp/watched" 2>&1 & n=$!
    pids+=("$n")
    for _ in $(seq 200); do
        grep -Eq "^  [0-9]+ +$(id -un) +$(hostname) +$n " "$tmp/watch2" && break
        kill -0 $n 2>/dev/null || break
        sleep 0.1
    done
    grep -Eq "^  [0-9]+ +$(id -un) +$(hostname) +$n " "$tmp/watch2" ||
        fail "vocl-smi --watch never listed process $n: $(tail -20 "$tmp/watch2")"
    grep -q ' 0 sessions' "$tmp/watch2" || fail "vocl-smi --watch: no round before the application"
    wait $n || fail "the watched application: $(tail -3 "$tmp/watched")"
    verified "$tmp/watched" "the watched application"
    wait $w || fail "vocl-smi -w 0.3 -c 40: exit $?: $(tail -5 "$tmp/watch2")"
    echo "vocl-smi --watch listed process $n in round" \
         "$(awk -v n="$n" '/^vocl-smi  /{r++} $4 == n && !f {f = r} END{print f}' "$tmp/watch2") of 40"
    # Bad usage: exit 2 with the reason, nothing connected to.
    before=$(clients c)
    for bad in "-w 0" "-w abc" "-w -1" "-w 0.5 -c 0" "-c x"; do
        rc=0
        # shellcheck disable=SC2086
        "$smi" $bad "$tmp/run/c.port" >"$tmp/bad" 2>&1 || rc=$?
        [ "$rc" -eq 2 ] || fail "vocl-smi $bad: exit $rc, not 2: $(cat "$tmp/bad")"
    done
    [ "$(clients c)" -eq "$before" ] || fail "vocl-smi with bad usage connected"

    # A port file that is not there: a clear error at once.
    rc=0
    start=$(ms)
    app "$tmp/nofile" "$tmp/run/none.port" "$examples/gemm" -n 64 -r 1 || rc=$?
    [ "$rc" -ne 0 ] || fail "an application given a missing port file succeeded"
    grep -q "proxy $tmp/run/none.port: cannot read its port file (No such file or directory)" \
        "$tmp/nofile" || fail "a missing port file: $(tail -3 "$tmp/nofile")"
    echo "a missing port file: exit $rc after $(($(ms) - start)) ms: $(grep 'port file' "$tmp/nofile")"

    # SIGTERM: the daemon stops and takes its port file with it.
    kill -TERM "$pc"
    for _ in $(seq 100); do kill -0 "$pc" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pc" 2>/dev/null && fail "daemon c still runs 10 s after SIGTERM"
    [ ! -e "$tmp/run/c.port" ] || fail "the stopped daemon left its port file"
    echo "SIGTERM: daemon c stopped, its port file removed"
    # A port file it cannot write: a clear error, and no daemon.
    rc=0
    POCL_DEVICES=pthread timeout 30 "$proxyd" --listen --name d --port-file "$tmp/nodir/d.port" \
        >"$tmp/d.log" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] && grep -q -- "--port-file $tmp/nodir/d.port: cannot write it (No such file" "$tmp/d.log" ||
        fail "an unwritable port file: exit $rc: $(cat "$tmp/d.log")"
    echo "an unwritable port file: exit $rc: $(grep -- '--port-file' "$tmp/d.log")"
    ;;
spanning)
    # One context over the devices of several daemons: what goes between
    # them (a buffer's bytes, diffs of unordered writers, an event's
    # status) goes through the client.  Each program's output equals its
    # native run's; a DAG application moves data device to device.
    bin=$hostile
    declare -A dp
    for d in a b c d; do
        start_daemon $d 1
        dp[$d]=$dpid
    done
    pa=${dp[a]} pb=${dp[b]}
    for t in "a,b spanning" "a,b,c writers3" "a,b,c,d writers3 4" "a,b,c writers3 image" \
             "a,b moves" "b,a waits"; do
        set -- $t
        proxies=$1 prog=$2
        shift 2
        n=$(echo "$proxies" | tr ',' '\n' | wc -l)
        devs=$(printf 'pthread %.0s' $(seq "$n"))
        POCL_DEVICES=${devs% } "$bin/$prog" "$@" >"$tmp/native" 2>&1 ||
            fail "$prog $*: the native run failed: $(tail -3 "$tmp/native")"
        app "$tmp/vocl" "$proxies" "$bin/$prog" "$@" ||
            fail "$prog $* on $proxies: exit $?: $(tail -5 "$tmp/vocl")"
        # (Less the line PoCL's compiler writes on the stderr of the process
        # that builds, for spanning's broken program: natively the
        # application, through a daemon the daemon's log; the build log
        # has the errors either way.)
        sed -i -E '/^[0-9]+ errors? generated\.$/d' "$tmp/native" "$tmp/vocl"
        cmp -s "$tmp/native" "$tmp/vocl" ||
            fail "$prog $* on $proxies: output differs: $(diff "$tmp/native" "$tmp/vocl" | head -10)"
        echo "$prog $* on daemons $proxies: output identical to the native run's"
    done
    DAG_DCR=on DAG_DHDCR=on app "$tmp/floyd" a,b "$examples/dag/dag-floyd" ||
        fail "dag-floyd: exit $?: $(tail -3 "$tmp/floyd")"
    verified "$tmp/floyd" dag-floyd
    grep -Eq 'd2d_bytes=[1-9]' "$tmp/floyd" || fail "dag-floyd copied nothing device to device"
    grep -o 'app=.*d2d_bytes=[0-9]*' "$tmp/floyd"
    relayed=$(cat "$tmp"/[abcd].log | grep -c 'diff to the client:' || true)
    [ "$relayed" -gt 0 ] || fail "no diff went through the client"
    echo "diffs sent through the client: $relayed"
    # Every session over, each daemon holds no session, object or byte
    # (its thread count is printed).
    for d in a b c d; do
        wait_idle "${dp[$d]}" $d 5
        echo "daemon $d: idle after $idle s, $(threads "${dp[$d]}") threads"
    done
    # A daemon killed while diffs go through the client: the application
    # ends within 10 s, naming it; the other daemon releases its session.
    before=$(grep -c 'diff to the client:' "$tmp/b.log")
    app "$tmp/cut" a,b "$bin/slices" -s -r 200 & s=$!
    for _ in $(seq 100); do
        [ "$(grep -c 'diff to the client:' "$tmp/b.log")" -gt $((before + 2)) ] && break
        sleep 0.1
    done
    kill -9 "$pb"
    t0=$(ms)
    wait $s && fail "slices went on without daemon b"
    took=$(($(ms) - t0))
    [ "$took" -lt 10000 ] || fail "slices ended $took ms after daemon b was killed"
    grep -q 'proxy b: .*no longer available' "$tmp/cut" || fail "no word of b: $(tail -5 "$tmp/cut")"
    wait_idle "$pa" a 5
    echo "daemon b killed amid the relays: slices ended $took ms after, with" \
         "\"$(grep -o 'proxy b: .*' "$tmp/cut" | head -1)\"; daemon a idle after $idle s"
    ;;
cycles)
    # Sequential connect / run / disconnect: the daemon's sessions,
    # objects, bytes and threads back at their starting figures.  Its
    # resident memory must not grow in the second half by more than
    # VOCL_DAEMON_GROWTH_KB a cycle (a session that leaked what it held, a
    # context, a program, its buffers, would not pass; over UCX the
    # transport itself keeps nothing per connection).  The sessions are
    # served in the daemon's own process (--no-isolate): a worker's leak
    # would end with the worker.
    n=${VOCL_DAEMON_CYCLES:-200}
    start_daemon a 1 --no-isolate; pa=$dpid
    app "$tmp/warm" a "$examples/gemm" -n 32 -r 1 || fail "first run: $(tail -3 "$tmp/warm")"
    wait_idle "$pa" a 5 >/dev/null
    t0=$(threads "$pa")
    r0=$(awk '/^VmRSS:/{print $2}' "/proc/$pa/status")
    start=$SECONDS
    for ((i = 1; i <= n; i++)); do
        app "$tmp/run" a "$examples/gemm" -n 32 -r 1 || fail "cycle $i: exit $?: $(tail -3 "$tmp/run")"
        verified "$tmp/run" "cycle $i"
        if [ "$i" -eq $((n / 2)) ]; then
            wait_idle "$pa" a 5 >/dev/null
            rh=$(awk '/^VmRSS:/{print $2}' "/proc/$pa/status")
        fi
    done
    wait_idle "$pa" a 5 >/dev/null
    t1=$(threads "$pa")
    r1=$(awk '/^VmRSS:/{print $2}' "/proc/$pa/status")
    per=$(( (r1 - rh) / (n - n / 2) ))
    echo "$n cycles in $((SECONDS - start)) s; daemon threads $t0 -> $t1; resident $r0 -> $rh -> $r1 KiB" \
         "(second half: $per KiB a cycle); holds $(state "$pa" a) (sessions objects bytes)"
    [ "$t1" -le "$t0" ] || fail "threads grew: $t0 -> $t1"
    # (Under a sanitizer its shadow memory and quarantine grow: not compared.)
    limit=${VOCL_DAEMON_GROWTH_KB:-104}
    [ "$limit" -lt 0 ] || [ "$per" -le "$limit" ] ||
        fail "resident memory grows $per KiB a cycle after the first $((n / 2))"
    ;;
idle)
    # Any time: a daemon idle longer than any timeout of its transport
    # takes a new client at once, and a client whose session sat idle as
    # long goes on.  VOCL_DAEMON_IDLE seconds (the daemon suite: 20, with
    # UCX's keepalive and VOCL's peer timeout cut to a second; the full
    # setup: 310, past the 300 s after which Open MPI's accept used to give
    # up for good).  vocl-smi (HOSTILE's place) holds the idle session.
    smi=$hostile
    idle=${VOCL_DAEMON_IDLE:-20}
    start_daemon a 1; pa=$dpid
    "$smi" -w "$idle" -c 2 "$(px a)" >"$tmp/held" 2>&1 & held=$!
    pids+=("$held")
    sleep "$idle"
    sleep 1
    start=$(ms)
    VOCL_PROXIES=$(px a) LD_PRELOAD=$lib timeout 60 clinfo -l >"$tmp/late" 2>&1 ||
        fail "a client after $idle s idle: $(cat "$tmp/late")"
    took=$(($(ms) - start))
    [ "$(grep -c 'Device #' "$tmp/late")" -eq 1 ] || fail "a client after $idle s idle: $(cat "$tmp/late")"
    [ "$took" -le 3000 ] || fail "a client after $idle s idle waited $took ms"
    wait "$held" || fail "a session idle for $idle s: exit $?: $(cat "$tmp/held")"
    [ "$(grep -c '^vocl-smi  ' "$tmp/held")" -eq 2 ] && grep -q '^proxy a: 1 device' "$tmp/held" ||
        fail "a session idle for $idle s: $(cat "$tmp/held")"
    echo "after $idle s with no new connection: clinfo -l through the daemon in $took ms;" \
         "a session idle $idle s went on (vocl-smi's second round)"
    ;;
soak)
    # For months: VOCL_DAEMON_CYCLES (default 200) sequential applications,
    # each connecting, verifying and exiting, on a daemon with workers (the
    # default).  Each one's worker is gone within 2 s of its exit; at the
    # end the daemon's threads, descriptors and child processes are what
    # they were after the first, and its resident memory grew less than
    # VOCL_DAEMON_GROWTH_KB a connection in the second half.  Its figures
    # every tenth of the way go to VOCL_SOAK_CSV, if set (docs/report/daemon).
    n=${VOCL_DAEMON_CYCLES:-200}
    start_daemon a 1; pa=$dpid
    figures() {
        echo "$(awk '/^VmRSS:/{print $2}' "/proc/$pa/status") $(threads "$pa")" \
             "$(find "/proc/$pa/fd" -mindepth 1 | wc -l) $(pgrep -P "$pa" | wc -l)"
    }
    # workers_gone TIMEOUT-MS: until the daemon has only its spare worker.
    workers_gone() {
        local t0
        t0=$(ms)
        while [ "$(pgrep -P "$pa" | wc -l)" -gt 1 ]; do
            [ $(($(ms) - t0)) -le "$1" ] || return 1
            sleep 0.02
        done
    }
    # A client killed (-9), then one ended by SIGTERM, mid-run: their workers go.
    for sig in KILL TERM; do
        VOCL_PROXIES=$(px a) LD_PRELOAD=$lib "$examples/nbody" -n 4096 -s 200 >"$tmp/victim" 2>&1 & v=$!
        pids+=("$v")
        for _ in $(seq 200); do grep -q 'bodies \[' "$tmp/victim" && break; sleep 0.05; done
        kill -"$sig" "$v"
        wait "$v" 2>/dev/null || true
        t0=$(ms)
        workers_gone 2000 || fail "the worker of a client ended by SIG$sig still runs 2 s after"
        echo "a client ended by SIG$sig: its worker gone $(($(ms) - t0)) ms after"
    done
    app "$tmp/warm" a "$examples/gemm" -n 32 -r 1 || fail "first run: $(tail -3 "$tmp/warm")"
    wait_idle "$pa" a 5 >/dev/null
    workers_gone 2000 || fail "a worker stays after the first run"
    read -r r0 t0 f0 k0 < <(figures)
    [ -z "${VOCL_SOAK_CSV:-}" ] || echo "cycle,rss_kib,threads,fds,children" >"$VOCL_SOAK_CSV"
    start=$SECONDS
    worst=0
    for ((i = 1; i <= n; i++)); do
        app "$tmp/run" a "$examples/gemm" -n 32 -r 1 || fail "cycle $i: exit $?: $(tail -3 "$tmp/run")"
        verified "$tmp/run" "cycle $i"
        e=$(ms)
        workers_gone 2000 || fail "cycle $i: its worker still runs 2 s after the client exited"
        [ $(($(ms) - e)) -le "$worst" ] || worst=$(($(ms) - e))
        if [ $((i % (n / 10 > 0 ? n / 10 : 1))) -eq 0 ]; then
            [ "$i" -ne $((n / 2)) ] || { wait_idle "$pa" a 5 >/dev/null; rh=$(awk '/^VmRSS:/{print $2}' "/proc/$pa/status"); }
            [ -z "${VOCL_SOAK_CSV:-}" ] || echo "$i,$(figures | tr ' ' ',')" >>"$VOCL_SOAK_CSV"
        fi
    done
    took=$((SECONDS - start))
    wait_idle "$pa" a 5 >/dev/null
    read -r r1 t1 f1 k1 < <(figures)
    per=$(( (r1 - ${rh:-$r0}) * 1024 / (n - n / 2) ))
    echo "$n cycles in $took s ($(( n / (took > 0 ? took : 1) )) a second); a worker gone at most" \
         "$worst ms after its client; daemon resident $r0 -> ${rh:-?} -> $r1 KiB (second half:" \
         "$per bytes a connection), threads $t0 -> $t1, descriptors $f0 -> $f1, children $k0 -> $k1;" \
         "holds $(state "$pa" a) (sessions objects bytes)"
    [ "$t1" -le "$t0" ] && [ "$f1" -le "$f0" ] && [ "$k1" -le "$k0" ] ||
        fail "threads, descriptors or children grew: $t0 $f0 $k0 -> $t1 $f1 $k1"
    limit=${VOCL_DAEMON_GROWTH_KB:-1}
    [ "$limit" -lt 0 ] || [ "$per" -le $((limit * 1024)) ] ||
        fail "resident memory grows $per bytes a connection after the first $((n / 2))"
    ;;
limits)
    # A session limit refuses at the call that passes it, with the error a
    # driver gives for too little memory, and one line on the client's
    # stderr naming the limit and the daemon's option.  (allocs in
    # HOSTILE's place.)
    start_daemon a 1 --max-session-mem 100M; pa=$dpid
    VOCL_PROXIES=$(px a) LD_PRELOAD=$lib timeout 60 "$hostile" 40 3 >"$tmp/out" 2>"$tmp/err" ||
        fail "allocs: exit $?: $(cat "$tmp/out" "$tmp/err")"
    grep -qx 'buffer 1: 0' "$tmp/out" && grep -qx 'buffer 2: 0' "$tmp/out" &&
        grep -qx 'buffer 3: -4' "$tmp/out" && grep -qx 'finish: 0' "$tmp/out" ||
        fail "the third 40 MiB buffer against a limit of 100 MiB: $(cat "$tmp/out")"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
        grep -q "proxy a: a buffer of 40 MiB refused: .* limit of 100 MiB .*(voclproxyd --max-session-mem)" "$tmp/err" ||
        fail "the client's stderr: $(cat "$tmp/err")"
    echo "3 buffers of 40 MiB, limit 100 MiB: $(paste -sd ' ' "$tmp/out"); stderr: $(cat "$tmp/err")"
    ;;
notify)
    # A service: systemd's notification socket (a fake one here) hears
    # READY=1 once the daemon listens, WATCHDOG=1 every half of
    # WATCHDOG_USEC while it serves, STOPPING=1 at SIGTERM; its workers say
    # nothing to it.
    python3 - "$tmp/notify.sock" "$tmp/notify.out" <<'PY' & listener=$!
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); s.settimeout(0.5)
out = open(sys.argv[2], "w", buffering=1)
t0 = time.monotonic()
while time.monotonic() - t0 < 30:
    try:
        m = s.recv(4096).decode()
    except socket.timeout:
        continue
    out.write("%.3f %s\n" % (time.monotonic() - t0, m))
    if m == "STOPPING=1":
        break
PY
    pids+=("$listener")
    for _ in $(seq 50); do [ -S "$tmp/notify.sock" ] && break; sleep 0.1; done
    NOTIFY_SOCKET=$tmp/notify.sock WATCHDOG_USEC=400000 start_daemon a 1; pa=$dpid
    app "$tmp/served" a "$examples/gemm" -n 64 -r 1 || fail "a client: $(tail -3 "$tmp/served")"
    sleep 2
    kill -TERM "$pa"
    wait "$listener" || true
    grep -q ' READY=1$' "$tmp/notify.out" || fail "no READY=1: $(cat "$tmp/notify.out")"
    head -1 "$tmp/notify.out" | grep -q ' READY=1$' || fail "READY=1 is not first: $(cat "$tmp/notify.out")"
    fed=$(grep -c ' WATCHDOG=1$' "$tmp/notify.out" || true)
    [ "$fed" -ge 5 ] || fail "$fed WATCHDOG=1 in 2.5 s at a period of 0.4 s: $(cat "$tmp/notify.out")"
    tail -1 "$tmp/notify.out" | grep -q ' STOPPING=1$' || fail "no STOPPING=1 last: $(cat "$tmp/notify.out")"
    [ "$(grep -vc ' \(READY\|WATCHDOG\|STOPPING\)=1$' "$tmp/notify.out")" -eq 0 ] ||
        fail "other messages: $(cat "$tmp/notify.out")"
    echo "notifications: READY=1, $fed WATCHDOG=1 (period 0.4 s), STOPPING=1"
    ;;
deaths)
    start_daemon a 1; pa=$dpid
    start_daemon b 1; pb=$dpid
    # A client killed mid-transfer: another one is unaffected, and the
    # killed one's session is closed and freed within 5 s.
    app "$tmp/other" a,b "$examples/nbody" -n 2048 -s 10 & other=$!
    VOCL_PROXIES=$(px a) LD_PRELOAD=$lib "$examples/gemm" -n 2048 -r 5 >"$tmp/victim" 2>&1 & victim=$!
    pids+=("$victim")
    for _ in $(seq 200); do
        grep -q 'rows \[' "$tmp/victim" && break
        kill -0 $victim 2>/dev/null || fail "the client to kill ended first: $(cat "$tmp/victim")"
        sleep 0.1
    done
    sleep 0.3
    kill -0 $victim 2>/dev/null || fail "the client to kill ended first: $(cat "$tmp/victim")"
    kill -9 $victim
    killed=$(ms)
    id=$(sed -nE "s/.*client ([0-9]+) connected \(process $victim\).*/\1/p" "$tmp/a.log")
    [ -n "$id" ] || fail "daemon a never saw the victim (process $victim)"
    # Noticed in well under a second (a ping, its process gone), and closed
    # at once: not after its device finishes what it was given (the
    # serving thread waited for that once, 3-5 s, and every session with it).
    until grep -q "client $id: session closed after it died" "$tmp/a.log"; do
        [ $(($(ms) - killed)) -le 2500 ] || fail "the killed client's session is still open after 2.5 s"
        sleep 0.05
    done
    echo "killed client $id: session closed $(($(ms) - killed)) ms after: $(grep "client $id: session closed" "$tmp/a.log")"
    wait $other || fail "the other client: exit $?: $(tail -3 "$tmp/other")"
    verified "$tmp/other" "the other client"
    echo "the other client: $(grep RESULT "$tmp/other")"
    wait_idle "$pa" a 5
    echo "daemon a idle $idle s after: holds $(state "$pa" a)"

    # A daemon killed under its client: a clear error within 10 s, and exit.
    app "$tmp/orphan" b "$examples/nbody" -n 4096 -s 200 & orphan=$!
    for _ in $(seq 200); do grep -q 'bodies \[' "$tmp/orphan" && break; sleep 0.1; done
    kill -9 "$pb"
    killed=$SECONDS
    rc=0
    wait $orphan || rc=$?
    [ $((SECONDS - killed)) -le 10 ] || fail "the client of a killed daemon took $((SECONDS - killed)) s"
    [ "$rc" -ne 0 ] || fail "the client of a killed daemon succeeded?"
    grep -q 'proxy b: .*no longer available' "$tmp/orphan" || fail "no clear message: $(tail -5 "$tmp/orphan")"
    echo "daemon b killed: its client exited $rc after $((SECONDS - killed)) s: $(grep 'proxy .*b:' "$tmp/orphan" | head -1)"

    # Its port file is still there (kill -9): a new client is told in time.
    start=$SECONDS
    rc=0
    VOCL_CONNECT_TIMEOUT=2 app "$tmp/stale" b "$examples/gemm" -n 32 -r 1 || rc=$?
    grep -q "proxy b: cannot connect to 127.0.0.1:" "$tmp/stale" ||
        fail "a daemon that is down: $(tail -5 "$tmp/stale")"
    [ "$rc" -ne 0 ] || fail "a daemon that is down: the client succeeded?"
    [ $((SECONDS - start)) -le 3 ] || fail "a daemon that is down: told after $((SECONDS - start)) s"
    echo "a daemon that is down: exit $rc after $((SECONDS - start)) s: $(grep 'proxy .*b:' "$tmp/stale" | head -1)"

    # Restarted: new clients work.
    start_daemon b 1; pb=$dpid
    app "$tmp/again" a,b "$examples/gemm" -n 128 -r 1 || fail "after the restart: $(tail -5 "$tmp/again")"
    verified "$tmp/again" "after the restart"
    echo "daemon b restarted: $(grep RESULT "$tmp/again")"

    # A wrong token: refused by the daemon, which says so in its log.
    head -c 48 /dev/urandom | base64 >"$tmp/wrong"
    chmod 600 "$tmp/wrong"
    rc=0
    VOCL_TOKEN_FILE=$tmp/wrong app "$tmp/intruder" b "$examples/gemm" -n 32 -r 1 || rc=$?
    [ "$rc" -ne 0 ] || fail "a wrong token was served"
    grep -q 'token in .* is not the proxy' "$tmp/intruder" || fail "no refusal: $(tail -3 "$tmp/intruder")"
    grep -q 'refused: a wrong token (user ' "$tmp/b.log" || fail "no log line on the daemon"
    echo "wrong token: exit $rc: $(grep 'libvocl' "$tmp/intruder" | head -1); daemon: $(grep 'wrong token' "$tmp/b.log")"

    # A token per user (--users DIR): the client names its user, and must
    # present DIR/USER; another one's bytes, or none there, are refused.
    me=$(id -un)
    mkdir -m 700 "$tmp/users"
    install -m 600 "$HOME/.vocl/token" "$tmp/users/$me"
    start_daemon c 1 --users "$tmp/users"; pc=$dpid
    app "$tmp/peruser" c "$examples/gemm" -n 64 -r 1 || fail "per-user token: $(tail -3 "$tmp/peruser")"
    verified "$tmp/peruser" "per-user token"
    grep -q "client [0-9]* served (user $me, uid $(id -u), host $(hostname), process " "$tmp/c.log" ||
        fail "the daemon did not log the user: $(grep served "$tmp/c.log")"
    head -c 48 /dev/urandom | base64 >"$tmp/users/$me"
    rc=0
    app "$tmp/peruser2" c "$examples/gemm" -n 64 -r 1 || rc=$?
    [ "$rc" -ne 0 ] || fail "another token than the user's was served"
    grep -q "refused: a wrong token (user $me, uid $(id -u)," "$tmp/c.log" || fail "no refusal for $me: $(tail -3 "$tmp/c.log")"
    rm "$tmp/users/$me"
    rc=0
    app "$tmp/peruser3" c "$examples/gemm" -n 64 -r 1 || rc=$?
    [ "$rc" -ne 0 ] || fail "a user without a token file was served"
    grep -q "refused: no token for its user (user $me, uid $(id -u)," "$tmp/c.log" || fail "no refusal without a file"
    echo "per-user tokens: $me served, then refused: $(grep -o 'refused: .*' "$tmp/c.log" | paste -sd ';')"
    kill -TERM "$pc"

    # SIGTERM: the daemon ends within 5 s, and its port file goes with it.
    kill -TERM "$pa"
    start=$SECONDS
    while kill -0 "$pa" 2>/dev/null; do
        [ $((SECONDS - start)) -le 5 ] || fail "daemon a still runs 5 s after SIGTERM"
        sleep 0.1
    done
    rc=0
    app "$tmp/gone" a "$examples/gemm" -n 32 -r 1 || rc=$?
    grep -q "proxy $(px a): cannot read its port file" "$tmp/gone" || fail "after SIGTERM: $(tail -3 "$tmp/gone")"
    echo "daemon a stopped (SIGTERM) in $((SECONDS - start)) s; then a client: $(grep 'proxy .*a:' "$tmp/gone" | head -1)"
    ;;
hostile)
    # The reliability suite's hostile client on a daemon that an ordinary
    # application uses all the while (hostile.c says what it tries); the
    # applications verify, one after another, until it is done.  First on
    # a daemon that hands each client to a worker (the default), then on
    # one that serves every client in its own process (--no-isolate).
    [ -x "$hostile" ] || fail "no hostile program"
    for d in a "b --no-isolate"; do
        set -- $d
        name=$1
        shift
        start_daemon "$name" 1 --max-session-host 1G "$@"; pid=$dpid
        rm -f "$tmp/done"
        (
            i=0
            while [ ! -e "$tmp/done" ]; do
                i=$((i + 1))
                v=$tmp/victim-$name-$i
                rc=0; app "$v" "$name" "$examples/gemm" -n 128 -r 2 || rc=$?; [ $rc -eq 0 ] || { echo "run $i failed (exit $rc): $(tail -3 "$v")"; exit 1; }
                grep -q 'verified=yes' "$v" || { echo "run $i did not verify"; exit 1; }
            done
            echo "$i runs verified"
        ) >"$tmp/victims" 2>&1 & victims=$!
        rc=0
        timeout 300 "$hostile" --connect "$(cat "$tmp/ports/$name")" >"$tmp/hostile.out" 2>&1 || rc=$?
        touch "$tmp/done"
        wait $victims || fail "daemon $name: the application beside it: $(cat "$tmp/victims")"
        echo "daemon $d:"
        cat "$tmp/hostile.out"
        [ "$rc" -eq 0 ] || fail "hostile on daemon $name: exit $rc"
        echo "beside it: $(cat "$tmp/victims")"
        ! grep -l 'nobody waits for' "$tmp"/victim-"$name"-* ||
            fail "an application got replies to requests it never sent"
        grep -q 'refused: a wrong token' "$tmp/$name.log" || fail "daemon $name: no log line for the wrong token"
        for w in 'migration peer is not another proxy' 'event peer is not another proxy' \
                 'refused [0-9]* bytes of host memory'; do
            grep -q "$w" "$tmp/$name.log" || fail "daemon $name did not log: $w"
            echo "daemon $name: $(grep -o "client [0-9]*: .*$w.*" "$tmp/$name.log" | head -1)"
        done
        wait_idle "$pid" "$name" 5
        echo "daemon $name idle $idle s after: holds $(state "$pid" "$name")"
    done
    # Raw garbage on the daemon's port, then TCP connections that say
    # nothing, and a client that connects and never says HELLO (its
    # token): the daemon serves on, and drops the client within
    # VOCL_CONNECT_TIMEOUT without holding a worker.
    VOCL_CONNECT_TIMEOUT=2 start_daemon c 1; pc=$dpid
    port=$(sed 's/.*://' "$tmp/ports/c")
    for n in 1 16 4096 1048576; do
        (exec 3<>"/dev/tcp/127.0.0.1/$port" && head -c "$n" /dev/urandom >&3) 2>/dev/null || true
    done
    exec 4<>"/dev/tcp/127.0.0.1/$port" 5<>"/dev/tcp/127.0.0.1/$port"
    app "$tmp/after-garbage" c "$examples/gemm" -n 64 -r 1 ||
        fail "after garbage on its port: $(tail -3 "$tmp/after-garbage")"
    verified "$tmp/after-garbage" "a client after garbage on the daemon's port"
    exec 4>&- 5>&-
    VOCL_CONNECT_TIMEOUT=2 "$hostile" --silent "$(cat "$tmp/ports/c")" 6 >"$tmp/silent" 2>&1 ||
        fail "a client that never said HELLO: $(cat "$tmp/silent")"
    cat "$tmp/silent"
    for _ in $(seq 30); do [ "$(pgrep -P "$pc" | wc -l)" -le 1 ] && break; sleep 0.1; done
    [ "$(pgrep -P "$pc" | wc -l)" -le 1 ] || fail "the silent client's worker stays"
    # A client handed to a worker that never goes there: the worker waits
    # as long as a client waits for a daemon's answer (30 s), then ends.
    "$hostile" --away "$(cat "$tmp/ports/c")" >"$tmp/away" 2>&1 ||
        fail "a client handed on that goes away: $(cat "$tmp/away")"
    cat "$tmp/away"
    [ "$(pgrep -P "$pc" | wc -l)" -eq 2 ] || fail "no worker waits for the client that went away"
    t0=$SECONDS
    for _ in $(seq 400); do [ "$(pgrep -P "$pc" | wc -l)" -le 1 ] && break; sleep 0.1; done
    [ "$(pgrep -P "$pc" | wc -l)" -le 1 ] || fail "the worker of a client that never came stays"
    grep -q 'its client did not come in 30 s: ending' "$tmp/c.log" ||
        fail "the worker did not say why it ended: $(tail -3 "$tmp/c.log")"
    echo "the worker of a client that never came ended after $((SECONDS - t0)) s"
    kill -0 "$pc" || fail "daemon c died"
    echo "garbage (1 B to 1 MiB), silent TCP connections, a client without HELLO and one that never went to its worker: daemon c serves on"
    ;;
isolate)
    # Each client in a worker process (--isolate, the default).  A tenant
    # whose kernel crashes PoCL (a write far outside its buffer) loses only
    # its own session: an application beside it verifies, and the daemon
    # goes on serving.  With --no-isolate the crash takes the daemon down.
    start_daemon a 1 --busy-share; pa=$dpid
    grep -q 'each client in a worker process' "$tmp/a.log" || fail "daemon a does not isolate its clients"
    app "$tmp/first" a "$examples/gemm" -n 256 -r 2 || fail "the first client: exit $?: $(tail -3 "$tmp/first")"
    verified "$tmp/first" "the first client"
    VOCL_PROXIES=$(px a) LD_PRELOAD=$lib "$examples/nbody" -n 4096 -s 100 >"$tmp/beside" 2>&1 & beside=$!
    pids+=("$beside")
    for _ in $(seq 100); do grep -q 'bodies \[' "$tmp/beside" && break; sleep 0.1; done
    # vocl-smi, itself served by a worker, lists the session of another
    # worker (workers write what their sessions hold every second).
    sleep 1.2
    "$smi" "$(px a)" >"$tmp/smi" 2>&1 || fail "vocl-smi: $(cat "$tmp/smi")"
    kill -0 $beside 2>/dev/null || fail "nbody ended before vocl-smi looked"
    grep -Eq "^  [0-9]+ +$(id -un) +$(hostname) +$beside +00:00:" "$tmp/smi" ||
        fail "vocl-smi does not list nbody's session (process $beside): $(cat "$tmp/smi")"
    cat "$tmp/smi"
    # The device's busy share under nbody: its worker's, of a whole second,
    # as the worker last wrote it (each second).
    busy='^  device 0 .* busy +([1-9][0-9]?|100) %$'
    for _ in $(seq 10); do
        grep -Eq "$busy" "$tmp/smi" && break
        sleep 0.5
        "$smi" "$(px a)" >"$tmp/smi" 2>&1 || fail "vocl-smi: $(cat "$tmp/smi")"
    done
    grep -Eq "$busy" "$tmp/smi" || fail "daemon a's device not busy under nbody: $(cat "$tmp/smi")"
    kill -0 $beside 2>/dev/null || fail "nbody ended before its device was seen busy"
    echo "under nbody: $(grep -E "$busy" "$tmp/smi")"
    rc=0
    app "$tmp/crash" a "$hostile" || rc=$?
    echo "the crashing client: exit $rc: $(grep -m1 'proxy a' "$tmp/crash" || tail -1 "$tmp/crash")"
    [ "$rc" -ne 0 ] || fail "the crashing client succeeded: $(cat "$tmp/crash")"
    grep -q 'proxy a' "$tmp/crash" || fail "no clear message for the crashing client: $(cat "$tmp/crash")"
    # (Killed by SIGSEGV; under a sanitizer, its handler exits 1 instead.)
    died='worker process [0-9]* \(client [0-9]*\) (was killed by signal|exited with status [1-9])'
    for _ in $(seq 50); do grep -Eq "$died" "$tmp/a.log" && break; sleep 0.1; done
    grep -Em1 "$died" "$tmp/a.log" ||
        fail "the daemon did not say its worker died: $(grep -i 'worker' "$tmp/a.log" | tail -4)"
    crashed=$(grep -Eo "$died" "$tmp/a.log" | head -1 | awk '{print $3}') # (its report is due)
    # The client is told what happened: its own kernel, not the daemon.
    if grep -q "worker process $crashed (client [0-9]*) was killed by signal" "$tmp/a.log"; then
        grep -q "proxy a: a kernel of this program crashed the driver there (its worker process ended by signal [0-9]* (" \
            "$tmp/crash" || fail "the crashing client was not told why: $(cat "$tmp/crash")"
    fi
    wait $beside || fail "the application beside it: exit $?: $(tail -3 "$tmp/beside")"
    verified "$tmp/beside" "the application beside it"
    echo "beside it: $(grep RESULT "$tmp/beside")"
    kill -0 "$pa" 2>/dev/null || fail "the daemon died"
    app "$tmp/after" a "$examples/gemm" -n 256 -r 2 || fail "the next client: exit $?: $(tail -3 "$tmp/after")"
    verified "$tmp/after" "the next client"
    echo "after it: $(grep RESULT "$tmp/after")"
    echo "daemon a: $(grep -c 'handed to worker process' "$tmp/a.log") clients handed to workers;" \
         "$(grep -c 'worker process [0-9]* (client [0-9]*) ended' "$tmp/a.log") workers ended"
    start_daemon b 1 --no-isolate; pb=$dpid
    app "$tmp/crash-b" b "$hostile" && fail "the crashing client of daemon b succeeded"
    for _ in $(seq 50); do kill -0 "$pb" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$pb" 2>/dev/null || fail "daemon b (--no-isolate) outlived the crash"
    mv "$tmp/b.log" "$tmp/b.crashed" # (a sanitizer's report there is the crash's)
    echo "daemon b (--no-isolate): the same crash ended it"
    ;;
midchunk)
    # A client killed in the middle of sending a write's chunk: stopped amid
    # 64 MiB writes and reads, then killed.  Such a chunk is never received
    # whole: 2 s after the session closed, the
    # daemon gives it up (the memory it lands in is left alone for good)
    # and releases the rest.  Tried until a kill catches a chunk on its
    # way (5 tries at most), then a new client works.
    start_daemon a 1; pa=$dpid
    caught=
    for try in 1 2 3 4 5; do
        VOCL_SHM=0 VOCL_PROXIES=$(px a) LD_PRELOAD=$lib "$hostile" --sections bw \
            --sizes 64M --reps 100 >"$tmp/victim" 2>&1 & victim=$!
        pids+=("$victim")
        sleep "2.$((try * 3))"
        kill -STOP "$victim"
        sleep 0.3
        kill -9 "$victim"
        wait "$victim" 2>/dev/null || true
        killed=$(ms)
        app "$tmp/next" a "$examples/gemm" -n 64 -r 1 || fail "a client after the kill: exit $?: $(tail -3 "$tmp/next")"
        echo "try $try: a client started at the kill took $(($(ms) - killed)) ms"
        id=$(sed -nE "s/.*client ([0-9]+) connected \(process $victim\).*/\1/p" "$tmp/a.log")
        [ -n "$id" ] || fail "daemon a never saw the client (process $victim)"
        wait_idle "$pa" a 5
        if grep -q "client $id: the chunk it began to send did not come" "$tmp/a.log"; then
            caught=$try
            break
        fi
        echo "try $try: the kill caught no chunk on its way; daemon idle $idle s after"
    done
    [ -n "$caught" ] || fail "5 kills, none in the middle of a chunk: $(grep "client " "$tmp/a.log" | tail -5)"
    echo "try $caught: killed in the middle of a chunk; daemon idle $(($(ms) - killed)) ms after the kill"
    grep "client $id: " "$tmp/a.log" | sed 's/^/  /'
    app "$tmp/next" a "$examples/gemm" -n 256 -r 2 || fail "the next client: exit $?: $(tail -3 "$tmp/next")"
    verified "$tmp/next" "the next client"
    echo "the next client: $(grep RESULT "$tmp/next")"
    ;;
bench)
    # vocl-bench --daemons, tiny: the table comes, with the connect row.
    "$hostile" --daemons 4 --quick --csv "$tmp/bench.csv" >"$tmp/bench.out" 2>&1 ||
        fail "vocl-bench --daemons: $(tail -20 "$tmp/bench.out")"
    grep -E 'first call, connecting to 4 daemons +\| +[0-9.]+ [mu]?s +\| +[0-9.]+ [mu]?s' \
        "$tmp/bench.out" || fail "no connect row: $(cat "$tmp/bench.out")"
    # Its target is daemon mode's: raw UCX between two programs, measured.
    grep -E '^read 4 B, blocking.*<= UCX \([0-9.]+ [mu]?s\) \+ 10 us, less native: (PASS|MISS)' \
        "$tmp/bench.out" || fail "no round trip row against raw UCX: $(cat "$tmp/bench.out")"
    # --breakdown in daemon mode: the trace tells the daemon from the
    # application (both are rank 0 of their worlds), so each part of the
    # read has its figure.
    "$hostile" --daemons 1 --breakdown --rounds 1 --quick >"$tmp/breakdown.out" 2>&1 ||
        fail "vocl-bench --daemons 1 --breakdown: $(tail -20 "$tmp/breakdown.out")"
    for part in "client: checks" "to the proxy" "proxy: decoding" "back: the reply"; do
        grep -E "^$part.*\| +[0-9.]+ us +\|" "$tmp/breakdown.out" ||
            fail "no figure for '$part': $(cat "$tmp/breakdown.out")"
    done
    ;;
stopped)
    # Two tenants of one daemon: vocl-bench-tenants' roles (its path in
    # HOSTILE's place), two applications started alone.  A's phases include
    # a write behind its kernel and a second in which its process is
    # stopped (SIGSTOP) amid 64 MiB writes and reads and 64 KiB reads; B
    # times 4-byte reads all along, with a 1 MiB read after every hundred.
    # B must never wait behind A: never go half of A's 1 s kernel without
    # a read while A's write waits for it, nor half of the second A is
    # stopped (beside a full CI run B once went 299 ms: a 0.5 s kernel's
    # half was too near).  (A stall behind A lasts the whole phase.  Issue 34's 100 ms
    # while A is stopped is a performance figure, vocl-bench-tenants'
    # table on a quiet machine: beside a CPU hog, B went 196 ms without a
    # read with A idle, and 212 ms with A stopped.)
    # Open MPI's shared-memory transport copies a large message in
    # fragments its sender writes: a chunk of A's that the daemon has begun
    # to receive stays unfinished until A goes on, and the daemon serves B
    # meanwhile (channel.c, mpi_recv_try).  Nothing shared (VOCL_SHM=0):
    # A's data goes in chunks.
    start_daemon a 2; pa=$dpid
    d=$tmp/tenants
    mkdir -p "$d"
    VOCL_SHM=0 app "$tmp/b.out" a "$hostile" --role b --dir "$d" & b=$!
    VOCL_SHM=0 app "$tmp/a.out" a "$hostile" --role a --dir "$d" --kernel-seconds 1 \
        --build-functions 20 || fail "tenant A: exit $?: $(tail -5 "$tmp/a.out")"
    wait $b || fail "tenant B: exit $?: $(tail -5 "$tmp/b.out")"
    for phase in idle kernel-write stopped; do
        # The gaps between B's reads that end in the phase, and from its
        # last read (or its start) to its end.
        read -r n worst gap < <(awk -v p="$phase" '
            NR == FNR { if ($1 == p) { s = $2; e = $3; at = s } next }
            { if ($1 >= s && $1 <= e) { if ($1 - $2 >= s) { n++; if ($2 > w) w = $2 }
                                        if ($1 - (last > s ? last : s) > g) g = $1 - (last > s ? last : s)
                                        at = $1 }
              last = $1 }
            END { if (e - at > g) g = e - at
                  printf "%d %.1f %.1f\n", n, w * 1e3, g * 1e3 }' "$d/a.phases" "$d/b.samples")
        echo "A $phase: B read $n times, worst $worst ms, longest without a read $gap ms"
        case $phase in
        kernel-write) bound=500 ;; # half of A's 1 s kernel
        stopped) bound=500 ;;      # half of the second A is stopped
        *) continue ;;
        esac
        awk -v g="$gap" -v b="$bound" 'BEGIN { exit !(g < b) }' ||
            fail "B went $gap ms without a read while A was $phase (bound $bound ms)"
    done
    wait_idle "$pa" a 5
    echo "daemon a idle $idle s after: holds $(state "$pa" a)"
    ;;
drain)
    # Three daemons; three applications on a and b, with c their spare
    # (VOCL_SPARE=1), are moved off a to c while they run: vocl-ctl drain
    # (HOSTILE's place).  Meanwhile a refuses a new application, saying
    # why (it runs on b alone); the three verify, a is left with no
    # session, and once undrained a serves again.  Then an application on
    # a daemon of two devices is not moved to one of one.
    ctl=$hostile
    export VOCL_CTL_DIR=$tmp/ctl
    mkdir -m 700 "$VOCL_CTL_DIR"
    start_daemon a 1; pa=$dpid
    start_daemon b 1
    start_daemon c 1
    runs=("gemm -n 256 -r 150" "nbody -n 2048 -s 150" "transpose -n 1024 -r 250")
    jobs_=()
    for i in 0 1 2; do
        # shellcheck disable=SC2086
        VOCL_SPARE=1 app "$tmp/app$i" a,b,c "$examples"/${runs[$i]} & jobs_+=($!)
    done
    for _ in $(seq 400); do
        [ "$(find "$VOCL_CTL_DIR" -name '[0-9]*.sock' | wc -l)" -eq 3 ] && break
        sleep 0.05
    done
    sleep 1 # (their contexts made)
    "$ctl" drain a --to c >"$tmp/drain.out" 2>&1 || fail "drain: $(cat "$tmp/drain.out")"
    cat "$tmp/drain.out"
    moved=$(grep -c ': ok objects=' "$tmp/drain.out" || true)
    [ "$moved" -eq 3 ] || fail "drain moved $moved applications, not 3: $(cat "$tmp/drain.out")"
    grep -q '^ok drained' "$tmp/drain.out" || fail "daemon a did not say it is drained"
    # (It runs on b's device alone.)
    app "$tmp/late" a,b "$examples/gemm" -n 64 -r 1 || fail "a new application: $(tail -3 "$tmp/late")"
    grep -q 'proxy a is drained' "$tmp/late" || fail "the refusal gave no reason: $(tail -3 "$tmp/late")"
    grep -q 'devices=1 .*verified=yes' "$tmp/late" || fail "drained daemon a served: $(tail -3 "$tmp/late")"
    for i in 0 1 2; do
        wait "${jobs_[$i]}" || fail "application $i: $(tail -3 "$tmp/app$i")"
        verified "$tmp/app$i" "application $i"
    done
    wait_idle "$pa" a 10
    echo "daemon a: no session $idle s after the applications ended"
    "$ctl" undrain a | grep -q '^ok undrained' || fail "undrain"
    app "$tmp/after" a,b "$examples/gemm" -n 64 -r 1 || fail "after undrain: $(tail -3 "$tmp/after")"
    verified "$tmp/after" "the application after undrain"
    # A proxy of two devices is not moved onto one of one: refused, saying
    # why, and the application verifies where it was.
    start_daemon two 2
    rm -f "$VOCL_CTL_DIR"/[0-9]*.sock
    VOCL_SPARE=1 app "$tmp/two" two,a "$examples/gemm" -n 256 -r 100 & j=$!
    for _ in $(seq 400); do
        sock=$(find "$VOCL_CTL_DIR" -name '[0-9]*.sock' | head -n 1)
        [ -n "$sock" ] && break
        sleep 0.05
    done
    sleep 0.5
    out=$("$ctl" migrate "$(basename "$sock" .sock)" two a 2>&1) && fail "2 devices moved onto 1: $out"
    echo "$out"
    echo "$out" | grep -q 'proxy a has no device 2 like proxy two' || fail "the refusal gave no reason: $out"
    wait "$j" || fail "the application of two devices: $(tail -3 "$tmp/two")"
    grep -q 'devices=2 .*verified=yes' "$tmp/two" || fail "it did not verify: $(tail -3 "$tmp/two")"
    ;;
balance)
    # Two daemons of one device; two applications, both on a (b is their
    # spare: VOCL_SPARE=1).  vocl-ctl balance (HOSTILE's place) moves one
    # of them to b while they run, and a second pass finds nothing to do;
    # both verify.  With VOCL_BALANCE_ROUNDS=N, then N timed rounds of the
    # two on a alone against the two balanced (each daemon one core:
    # POCL_MAX_PTHREAD_COUNT=1): the table of docs/report/migration.
    ctl=$hostile
    export VOCL_CTL_DIR=$tmp/ctl
    mkdir -m 700 "$VOCL_CTL_DIR"
    POCL_MAX_PTHREAD_COUNT=1 start_daemon a 1
    POCL_MAX_PTHREAD_COUNT=1 start_daemon b 1
    # pair ARGS...: the two applications at once; balanced when $bal is
    # set; their wall time, in ms, in $wall.
    pair() {
        local t0 i js=()
        rm -f "$VOCL_CTL_DIR"/[0-9]*.sock
        t0=$(ms)
        for i in 0 1; do
            VOCL_SPARE=1 app "$tmp/pair$i" a,b "$examples/gemm" "$@" & js+=($!)
        done
        for _ in $(seq 400); do
            [ "$(find "$VOCL_CTL_DIR" -name '[0-9]*.sock' | wc -l)" -eq 2 ] && break
            sleep 0.05
        done
        if [ -n "${bal:-}" ]; then
            sleep 0.5 # (their contexts made)
            "$ctl" balance >"$tmp/balance.out" 2>&1 || fail "balance: $(cat "$tmp/balance.out")"
            "$ctl" balance >"$tmp/balance2.out" 2>&1 || fail "balance: $(cat "$tmp/balance2.out")"
        fi
        for i in 0 1; do
            wait "${js[$i]}" || fail "application $i: $(tail -3 "$tmp/pair$i")"
            verified "$tmp/pair$i" "application $i"
        done
        wall=$(($(ms) - t0))
    }
    bal=1 pair -n 256 -r 150
    cat "$tmp/balance.out"
    grep -q '(shared by 2 applications) -> b (idle): ok' "$tmp/balance.out" ||
        fail "balance moved nothing: $(cat "$tmp/balance.out")"
    grep -q '^balanced' "$tmp/balance2.out" || fail "a second pass moved: $(cat "$tmp/balance2.out")"
    for _ in $(seq "${VOCL_BALANCE_ROUNDS:-0}"); do
        bal= pair -n 512 -r 20; alone=$wall
        bal=1 pair -n 512 -r 20
        echo "round: two gemm -n 512 -r 20 on one device: $alone ms; balanced: $wall ms;" \
             "$(awk -v a="$alone" -v b="$wall" 'BEGIN{printf "%.2fx", a / b}')"
    done
    ;;
restart)
    # Restarting a daemon does not end the applications it serves, with
    # failover on: each session goes on on the daemon once it is back (or
    # on another daemon named), sent its log again, and one line says so.
    # (Their info lines too, for when one fails: where its session went.)
    export VOCL_FAILOVER=spare-proxy VOCL_VERBOSE=2
    # again NAME: daemon NAME started again on its port (its port file goes
    # when it is stopped: the port is kept in $tmp/NAME.port).
    again() {
        [ -s "$tmp/$1.port" ] || sed 's/.*://' "$tmp/ports/$1" >"$tmp/$1.port"
        dport=$(cat "$tmp/$1.port") start_daemon "$1" 1
    }
    # runs PROXIES TAG: gemm, nbody and smithwaterman through PROXIES, in
    # the background, until each has said it started its work; then they
    # are stopped (SIGSTOP), so that what comes next lands amid their work
    # however fast this machine is (go: they go on).
    progs=("$examples/gemm -n 512 -r 40" "$examples/nbody -n 2048 -s 120"
           "$examples/smithwaterman -n 1024 -p 64")
    runs() {
        local p=$1 t=$2 a
        three=()
        app "$tmp/$t-gemm" "$p" ${progs[0]} & three+=($!)
        app "$tmp/$t-nbody" "$p" ${progs[1]} & three+=($!)
        app "$tmp/$t-sw" "$p" ${progs[2]} & three+=($!)
        pids+=("${three[@]}")
        # (Each as soon as it said so: smithwaterman's work is short.)
        local -A sign=([gemm]='rows \[' [nbody]='bodies \[' [sw]='pairs \[') prog=(
            [gemm]=${progs[0]} [nbody]=${progs[1]} [sw]=${progs[2]}) stopped=()
        for _ in $(seq 3000); do
            for a in gemm nbody sw; do
                [ -z "${stopped[$a]:-}" ] && grep -q "${sign[$a]}" "$tmp/$t-$a" &&
                    pkill -STOP -xf "${prog[$a]}" && stopped[$a]=1
            done
            [ ${#stopped[@]} -eq 3 ] && break
            sleep 0.01
        done
        # (RESULT is flushed as it is printed: examples/common.c.)
        for a in gemm nbody sw; do
            ! grep -q RESULT "$tmp/$t-$a" || fail "$a ended before it could be stopped: give it more work"
        done
    }
    go() { local a; for a in "${progs[@]}"; do pkill -CONT -xf "$a" || true; done; }
    # waited TAG WHAT: the three of TAG ended with status 0 (else their logs).
    waited() {
        local i=0 a rc
        for a in gemm nbody sw; do
            rc=0
            wait "${three[$i]}" || rc=$?
            [ "$rc" -eq 0 ] || fail "$a ($1), $2: exit $rc: $(tail -20 "$tmp/$1-$a")"
            i=$((i + 1))
        done
    }
    # ended TAG WORDS: each of the three verified, having said WORDS on one line.
    ended() {
        local t=$1 a n
        for a in gemm nbody sw; do
            verified "$tmp/$t-$a" "$a ($t)"
            n=$(grep -c 'libvocl: error' "$tmp/$t-$a" || true)
            [ "$n" -eq 1 ] && grep -q "$2" "$tmp/$t-$a" ||
                fail "$a ($t): not one line saying '$2': $(grep 'libvocl' "$tmp/$t-$a")"
        done
        echo "$t: gemm, nbody and smithwaterman verified; $(grep -h 'libvocl: error' "$tmp/$t-nbody")"
    }
    # 0. An application done with its work when its daemon is killed and
    #    back: it leaves at once with a warning, its BYE not failed over
    #    (a replay would run its work again only to say goodbye; the BYE
    #    went unlogged, and the application waited for its reply forever).
    start_daemon a 1; pa=$dpid
    sed 's/.*://' "$tmp/ports/a" >"$tmp/a.port"
    app "$tmp/leaver" a "$hostile" "$tmp/leave" & lpid=$!
    pids+=("$lpid")
    for _ in $(seq 600); do grep -qs idle "$tmp/leaver" && break; sleep 0.1; done
    grep -q 'came back; idle' "$tmp/leaver" || fail "leaver: $(cat "$tmp/leaver")"
    kill -9 "$pa"
    again a; pa=$dpid
    served=$(clients a)
    left=$(ms)
    touch "$tmp/leave"
    for _ in $(seq 300); do kill -0 "$lpid" 2>/dev/null || break; sleep 0.1; done
    ! kill -0 "$lpid" 2>/dev/null ||
        fail "leaver: still there 30 s after its daemon died: $(cat "$tmp/leaver")"
    rc=0
    wait "$lpid" || rc=$?
    left=$(($(ms) - left))
    [ "$rc" -eq 0 ] && grep -q 'as this program left' "$tmp/leaver" &&
        ! grep -q 'libvocl: error' "$tmp/leaver" ||
        fail "leaver after its daemon died: exit $rc: $(grep libvocl "$tmp/leaver")"
    [ "$(clients a)" -eq "$served" ] || fail "leaver: its session went on on the restarted daemon"
    echo "done when its daemon died: left in $left ms, $(grep -o 'warning: .*' "$tmp/leaver")"
    # 1. Daemon a killed (-9: a crash) amid their work, back after 2 s.
    # (And nbody without failover: it ends with the clear error it always did.)
    off="$examples/nbody -n 2048 -s 121"
    app "$tmp/crash-off" a env VOCL_FAILOVER=0 $off & offpid=$!
    pids+=("$offpid")
    for _ in $(seq 3000); do grep -q 'bodies \[' "$tmp/crash-off" && break; sleep 0.01; done
    pkill -STOP -xf "$off" || fail "nbody without failover ended before it could be stopped"
    runs a crash
    kill -9 "$pa"
    go
    pkill -CONT -xf "$off" || true
    sleep 2
    again a; pa=$dpid
    waited crash "through the restarted daemon"
    ended crash 'goes on on the same daemon'
    ! wait "$offpid" || fail "nbody without failover went on after its daemon died"
    grep -q 'its devices are no longer available' "$tmp/crash-off" ||
        fail "nbody without failover: no clear error: $(tail -3 "$tmp/crash-off")"
    echo "without failover: $(grep -m1 'libvocl: error' "$tmp/crash-off")"
    # 2. Daemon a killed and not back, b named too: they go on on b.
    start_daemon b 1; pb=$dpid
    VOCL_FAILOVER_WAIT=6 runs a,b gone
    kill -9 "$pa"
    go
    waited gone "after daemon a died"
    ended gone 'goes on on b'
    # 3. A rolling restart (SIGTERM, as systemctl restart) of 4 daemons,
    #    one after another, under 8 applications using all of them.
    declare -A dp
    again a; dp[a]=$dpid
    dp[b]=$pb
    start_daemon c 1; dp[c]=$dpid
    start_daemon d 1; dp[d]=$dpid
    for n in b c d; do sed 's/.*://' "$tmp/ports/$n" >"$tmp/$n.port"; done
    rolling=()
    for i in $(seq 8); do
        app "$tmp/roll$i" a,b,c,d "$examples/nbody" -n 1024 -s $((300 + 20 * i)) & rolling+=($!)
    done
    pids+=("${rolling[@]}")
    for _ in $(seq 300); do
        [ "$(grep -l 'bodies \[' "$tmp"/roll* | wc -l || true)" -eq 8 ] && break
        sleep 0.1
    done
    for n in a b c d; do
        kill -TERM "${dp[$n]}"
        for _ in $(seq 100); do kill -0 "${dp[$n]}" 2>/dev/null || break; sleep 0.05; done
        ! kill -0 "${dp[$n]}" 2>/dev/null || fail "daemon $n did not end within 5 s of SIGTERM"
        again "$n"; dp[$n]=$dpid
        sleep 1
    done
    done_before=$(grep -l RESULT "$tmp"/roll* | wc -l || true)
    for i in $(seq 8); do
        wait "${rolling[$((i - 1))]}" || fail "application $i under the rolling restart: exit $?: $(tail -3 "$tmp/roll$i")"
        verified "$tmp/roll$i" "application $i under the rolling restart"
    done
    ! grep -h 'libvocl: error' "$tmp"/roll* | grep -v 'goes on on the same daemon' ||
        fail "more than where their sessions went on, above"
    moved=$(grep -h 'goes on on the same daemon' "$tmp"/roll* | wc -l || true)
    echo "rolling restart of 4 daemons under 8 applications: all verified ($done_before had ended before the last restart), $moved sessions went on on their restarted daemons"
    [ "$moved" -ge 8 ] || fail "only $moved sessions went on across the restarts"
    ;;
metrics)
    # voclproxyd --metrics-file: the daemon's figures for Prometheus,
    # rewritten whole every --metrics-interval.  The file parses strictly
    # (promcheck.py; promtool too, where Debian's prometheus package put
    # it), and its counters move as clients work, through workers (the
    # default) and without: commands, bytes both ways, connections
    # accepted, a wrong token's refusal under its reason; they never go
    # down, also as workers end; a worker's file that is not well formed
    # is ignored.  vocl-smi --json: one object a daemon, read by Python's
    # json module.
    check=$smi smi=$hostile
    py=/usr/bin/python3
    [ -x "$py" ] || py=python3
    mkdir -p "$tmp/metrics"
    ma=$tmp/metrics/a.prom mb=$tmp/metrics/b.prom
    # metric FILE SERIES...: their values, the file checked first.
    metric() {
        "$py" "$check" "$@" || { echo "FAIL: metrics file $1: $(cat "$1")" >&2; return 1; }
        if command -v promtool >/dev/null; then
            promtool check metrics <"$1" >&2 || { echo "FAIL: promtool: $(cat "$1")" >&2; return 1; }
        fi
    }
    # counters FILE: "ACCEPTED TOKEN-REFUSED COMMANDS RECEIVED SENT".
    counters() {
        metric "$1" vocl_connections_accepted_total \
            'vocl_connections_refused_total{reason="token"}' vocl_commands_total \
            vocl_received_bytes_total vocl_sent_bytes_total | paste -sd' '
    }
    # settled FILE: the counters once two writes in a row agree (workers
    # write theirs each second), in $now (an array).
    settled() {
        local last="" line
        for _ in $(seq 40); do
            line=$(counters "$1")
            [ "$line" = "$last" ] && break
            last=$line
            sleep 1
        done
        read -r -a now <<<"$line"
    }
    umask 077 # (as the systemd unit's: the file is node_exporter's to read all the same)
    start_daemon a 2 --busy-share --metrics-file "$ma" --metrics-interval 0.5; pa=$dpid
    start_daemon b 1 --no-isolate --metrics-file "$mb" --metrics-interval 0.5; pb=$dpid
    for _ in $(seq 50); do [ -s "$ma" ] && [ -s "$mb" ] && break; sleep 0.1; done
    [ -s "$ma" ] && [ -s "$mb" ] || fail "no metrics file: $(ls -l "$tmp/metrics")"
    [ "$(stat -c %a "$ma")" = 644 ] || fail "the metrics file's mode: $(stat -c %a "$ma"), not 644"
    line=$(counters "$ma")
    [ "$line" = "0 0 0 0 0" ] || fail "a new daemon's counters: $line"
    line=$(metric "$ma" vocl_sessions 'vocl_device_memory_bytes{device="1"}' \
        'vocl_device_busy_ratio{device="0"}' | paste -sd' ')
    read -r -a g <<<"$line"
    [ "${g[0]}" = 0 ] && [ "${g[1]}" -gt 0 ] && [ "${g[2]}" = 0.000 ] ||
        fail "a new daemon's gauges (sessions, device 1's memory, busy): $line"
    echo "daemon a's metrics at start: $(grep -vc '^#' "$ma") series; $(grep -c '^# TYPE' "$ma") families"
    # Counters sampled all along, to check that they never go down.
    (while :; do counters "$ma" 2>/dev/null || true; sleep 0.1; done) >"$tmp/samples" & sampler=$!
    pids+=("$sampler")

    # One client, its data over the connection (VOCL_SHM=0): every counter
    # but the refusals grows, by what gemm sends (two matrices) and gets (one).
    n=256
    settled "$ma"; before=("${now[@]}")
    VOCL_SHM=0 app "$tmp/gemm" a "$examples/gemm" -n $n -r 2 || fail "gemm: $(tail -3 "$tmp/gemm")"
    verified "$tmp/gemm" "gemm"
    settled "$ma"
    [ "${now[0]}" -eq $((before[0] + 1)) ] || fail "accepted: ${before[0]} -> ${now[0]}, not one more"
    [ "${now[1]}" -eq "${before[1]}" ] || fail "token refusals moved: ${before[1]} -> ${now[1]}"
    [ "${now[2]}" -ge $((before[2] + 10)) ] || fail "commands: ${before[2]} -> ${now[2]}"
    [ "${now[3]}" -ge $((before[3] + 2 * n * n * 4)) ] ||
        fail "bytes received: ${before[3]} -> ${now[3]}, not the two matrices ($((2 * n * n * 4)))"
    [ "${now[4]}" -ge $((before[4] + n * n * 4)) ] ||
        fail "bytes sent: ${before[4]} -> ${now[4]}, not the result ($((n * n * 4)))"
    echo "gemm -n $n through a worker: accepted ${before[0]} -> ${now[0]}, commands" \
         "${before[2]} -> ${now[2]}, received ${before[3]} -> ${now[3]}, sent ${before[4]} -> ${now[4]}"
    # The worker was reaped: its figures folded in, its file gone.
    ls "$tmp"/voclproxyd-*/ | grep -q '\.figures$' &&
        fail "a worker's figures file left: $(ls "$tmp"/voclproxyd-*/)"

    # A wrong token: refused under reason "token", nothing accepted.
    head -c 48 /dev/urandom | base64 >"$tmp/wrong"
    chmod 600 "$tmp/wrong"
    before=("${now[@]}")
    VOCL_TOKEN_FILE=$tmp/wrong app "$tmp/intruder" a "$examples/gemm" -n 32 -r 1 &&
        fail "a wrong token was served"
    settled "$ma"
    [ "${now[1]}" -eq $((before[1] + 1)) ] && [ "${now[0]}" -eq "${before[0]}" ] ||
        fail "a wrong token: accepted ${before[0]} -> ${now[0]}, refused (token) ${before[1]} -> ${now[1]}"
    echo "a wrong token: refused{reason=\"token\"} ${before[1]} -> ${now[1]}, accepted stays ${now[0]}"

    # A worker's figures file that is not well formed (the spare worker's
    # place): ignored, the counters as they were.
    spare=$(pgrep -P "$pa" | head -1)
    [ -n "$spare" ] || fail "daemon a has no worker started ahead"
    wdir=$(echo "$tmp"/voclproxyd-*)
    before=("${now[@]}")
    good=$(printf '%s\n' commands bytes_received bytes_sent refused_token refused_user \
        refused_drained refused_hello_timeout refused_greeting refused_worker refused_other \
        sessions objects memory | sed 's/$/ 0/'; echo 'accepted 5')
    for bad in 'commands 99999999999999999999999' $'commands 5\ncommands 7' 'commands -5' \
                'accepted 5' "$good"$'\nbusy 0 1001' "$good"$'\nwhat 1' "${good/accepted 5/accepted 5x}" \
                "$good"$'\naccepted 5' "${good/accepted 5/accepted  5}" "$good"$'\n'; do
        printf '%s\n' "$bad" >"$wdir/$spare.figures"
        sleep 1.2
        line=$(counters "$ma")
        [ "$line" = "${before[*]}" ] || fail "a bad figures file (${bad//$'\n'/\\n}): ${before[*]} -> $line"
    done
    printf 'commands 1\000\n%s\n' "$good" >"$wdir/$spare.figures" # (a NUL in a line)
    sleep 1.2
    line=$(counters "$ma")
    [ "$line" = "${before[*]}" ] || fail "a figures file with a NUL: ${before[*]} -> $line"
    kill -0 "$pa" || fail "daemon a died of a figures file with a NUL"
    # (A good one counts: the check above is not blind.)
    printf '%s\n' "$good" >"$wdir/$spare.figures"
    sleep 1.2
    line=$(counters "$ma")
    [ "${line%% *}" -eq $((before[0] + 5)) ] || fail "a good figures file not read: $line"
    printf '%s\n' "${good/accepted 5/accepted 7}" >"$tmp/elsewhere"
    ln -sf "$tmp/elsewhere" "$wdir/$spare.figures"
    sleep 1.2
    line=$(counters "$ma")
    [ "${line%% *}" -eq $((before[0] + 5)) ] || fail "a figures file as a link: $line"
    rm -f "$wdir/$spare.figures"
    echo "bad figures files of a worker: ignored; counters kept at most what was read"
    settled "$ma"

    # While nbody runs: sessions, memory and busy share in the metrics,
    # and vocl-smi --json over both daemons (b's own session aside).
    VOCL_PROXIES=$(px a) LD_PRELOAD=$lib "$examples/nbody" -n 4096 -s 150 >"$tmp/nbody" 2>&1 & nb=$!
    pids+=("$nb")
    for _ in $(seq 100); do grep -q 'bodies \[' "$tmp/nbody" && break; sleep 0.1; done
    ok=
    for _ in $(seq 30); do
        line=$(metric "$ma" vocl_sessions vocl_memory_objects_bytes 'vocl_device_busy_ratio{device="0"}' \
            'vocl_device_busy_ratio{device="1"}' | paste -sd' ')
        read -r -a g <<<"$line"
        if [ "${g[0]}" -ge 1 ] && [ "${g[1]}" -gt 0 ] && [ "${g[2]}${g[3]}" != 0.0000.000 ]; then
            ok=1
            break
        fi
        sleep 0.3
    done
    kill -0 $nb 2>/dev/null || fail "nbody ended before its figures were seen: $(tail -3 "$tmp/nbody")"
    [ -n "$ok" ] || fail "under nbody (sessions, memory, busy 0, busy 1): $line"
    echo "under nbody: sessions ${g[0]}, memory objects ${g[1]} bytes, busy ${g[2]} ${g[3]}"
    "$smi" --json "$(px a)" "$(px b)" >"$tmp/smi.json" 2>"$tmp/smi.err" ||
        fail "vocl-smi --json: $(cat "$tmp/smi.json" "$tmp/smi.err")"
    kill -0 $nb 2>/dev/null || fail "nbody ended before vocl-smi --json looked"
    "$py" - "$tmp/smi.json" "$nb" "$(id -un)" <<'PY' || fail "vocl-smi --json: $(cat "$tmp/smi.json")"
import json, sys
path, pid, user = sys.argv[1:]
lines = open(path).read().splitlines()
assert len(lines) == 2, "%d lines, not one per daemon" % len(lines)
a, b = (json.loads(l) for l in lines)
assert (a["proxy"], b["proxy"]) == ("a", "b"), (a["proxy"], b["proxy"])  # (their names)
for o, ndev in ((a, 2), (b, 1)):
    assert o["answers"] is True and isinstance(o["time"], int), o
    assert len(o["devices"]) == ndev, o["devices"]
    for i, d in enumerate(o["devices"]):
        assert d["device"] == i and d["name"] and d["global_memory_bytes"] > 0, d
    assert isinstance(o["objects"], int) and isinstance(o["memory_bytes"], int), o
mine = [s for s in a["sessions"] if s["pid"] == int(pid)]
assert len(mine) == 1, a["sessions"]
s = mine[0]
assert s["user"] == user and s["host"] and s["objects"] > 0 and s["memory_bytes"] > 0, s
assert isinstance(s["session"], int) and s["seconds"] >= 0 and s["host_memory_bytes"] >= 0, s
assert a["memory_bytes"] >= s["memory_bytes"], (a["memory_bytes"], s)
assert all(0 <= d["busy_share"] <= 1 for d in a["devices"]), a["devices"]
assert all(d["busy_share"] is None for d in b["devices"]), b["devices"]  # (not measured)
assert b["sessions"] == [], b["sessions"]  # (vocl-smi's own left out)
print("vocl-smi --json: daemon a: %d devices, busy %s, nbody's session: %d objects, %d bytes"
      % (len(a["devices"]), [d["busy_share"] for d in a["devices"]], s["objects"], s["memory_bytes"]))
PY
    wait $nb || fail "nbody: exit $?: $(tail -3 "$tmp/nbody")"
    verified "$tmp/nbody" "nbody"

    # Without workers (--no-isolate): the daemon's own counts.
    VOCL_SHM=0 app "$tmp/gemm-b" b "$examples/gemm" -n $n -r 1 || fail "gemm on b: $(tail -3 "$tmp/gemm-b")"
    verified "$tmp/gemm-b" "gemm on b"
    settled "$mb"
    # (vocl-smi's connection above, then gemm's.)
    [ "${now[0]}" -eq 2 ] && [ "${now[2]}" -ge 10 ] && [ "${now[3]}" -ge $((2 * n * n * 4)) ] &&
        [ "${now[4]}" -ge $((n * n * 4)) ] || fail "daemon b (--no-isolate): ${now[*]}"
    echo "daemon b (--no-isolate): accepted ${now[0]}, commands ${now[2]}, received ${now[3]}, sent ${now[4]}"

    # Never down, across clients and workers' ends.
    kill "$sampler"
    wait "$sampler" 2>/dev/null || true
    awk 'NF == 5 { for (i = 1; i <= 5; i++) { if ($i < m[i]) { print "line " NR ": column " i ": " m[i] " -> " $i; bad = 1 } m[i] = $i } }
         END { exit bad }' "$tmp/samples" || fail "a counter went down"
    echo "$(wc -l <"$tmp/samples") samples of daemon a's counters: none went down"
    ls "$tmp/metrics" | grep -q '\.tmp$' && fail "a temporary file left beside the metrics file: $(ls "$tmp/metrics")"
    # Bad usage; and a stopped daemon takes its file with it.
    for bad in "--metrics-interval 0" "--metrics-interval x" "--metrics-file $tmp/m.prom"; do
        rc=0
        # shellcheck disable=SC2086
        "$proxyd" $bad >"$tmp/bad" 2>&1 || rc=$?
        [ "$rc" -eq 2 ] || fail "voclproxyd $bad: exit $rc, not 2: $(cat "$tmp/bad")"
    done
    kill -TERM "$pa"
    for _ in $(seq 100); do kill -0 "$pa" 2>/dev/null || break; sleep 0.1; done
    [ ! -e "$ma" ] || fail "the stopped daemon left its metrics file"
    echo "SIGTERM: daemon a stopped, its metrics file removed"
    ;;
*)
    fail "unknown test $what"
    ;;
esac
# A sanitizer's report in a daemon's log (a build with -Db_sanitize) fails
# the test; but for the crash the isolate test makes on purpose.
[ -z "${crashed:-}" ] || sed -i "/^==$crashed==/d; /^AddressSanitizer:DEADLYSIGNAL/d" "$tmp"/*.log
if grep -l 'ERROR: AddressSanitizer\|runtime error:\|ThreadSanitizer' "$tmp"/*.log 2>/dev/null; then
    fail "a sanitizer reported in a daemon's log: $(grep -h -A5 'Sanitizer\|runtime error:' "$tmp"/*.log | head -20)"
fi
echo "PASS"
