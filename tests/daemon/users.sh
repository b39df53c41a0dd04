#!/usr/bin/env bash
# users.sh - daemon mode as deployed: the daemon runs as a service user of
# its own, and the applications of two other Unix users connect to it, at
# once, with a token each (--users, the README's recipe run as it is
# written there).  Needs root (useradd, runuser): skipped (77) otherwise.
#   users.sh README LIBVOCL VOCLPROXYD EXAMPLES-DIR TEST [WORKER]
# TEST: any (both users served, refusals), burst (N applications of the
# two users started in the same instant: VOCL_BURST, default 16), bw
# (another user's client maps the daemon's buffers: vocl-bench-worker,
# WORKER, natively and through the daemon, its bandwidth side by side).
# All traffic stays on loopback.
set -euo pipefail
readme=$1 lib=$2 proxyd=$3 examples=$4 what=$5 worker=${6:-}
fail() {
    echo "FAIL: $*"
    hung_stacks "${tmp:-}"
    exit 1
}
. "$(dirname "$0")/watchdog.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root, to make the users it runs as (useradd)"; exit 77; }
for c in useradd userdel runuser; do
    command -v $c >/dev/null || { echo "SKIP: no $c"; exit 77; }
done

svc=vocl-t-svc alice=vocl-t-alice bob=vocl-t-bob
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    pkill -9 -u "$svc" 2>/dev/null || true
    pkill -9 -u "$bob" 2>/dev/null || true
    for u in $svc $alice $bob; do userdel "$u" 2>/dev/null || true; done
    if [ -n "${VOCL_KEEP_TMP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
chmod 755 "$tmp"
for u in $svc $alice $bob; do
    userdel "$u" 2>/dev/null || true # (left by a run that was killed)
    useradd -M -d "$tmp/home/$u" -s /usr/sbin/nologin "$u"
    install -d -m 700 -o "$u" -g "$u" "$tmp/home/$u"
done
# What the users run, where they can read it (a build tree may be in
# root's home).
mkdir -p "$tmp/bin"
cp "$lib" "$tmp/bin/libvocl.so"
cp "$proxyd" "$examples/gemm" "$examples/nbody" ${worker:+"$worker"} "$tmp/bin/"
chmod -R a+rX "$tmp/bin"
export UCX_NET_DEVICES=lo
unset VOCL_APP_RANKS VOCL_CONNECT VOCL_PROXIES VOCL_TOKEN_FILE
# (Nor MALLOC_PERTURB_, which meson sets: every free then writes over the
# memory, PoCL's compiler frees much, and the times these tests check are
# those users see.)
unset MALLOC_PERTURB_

# as USER CMD...: CMD as USER, in its HOME.
as() {
    local u=$1
    shift
    (cd "$tmp/home/$u" && runuser -u "$u" -- env HOME="$tmp/home/$u" USER="$u" "$@")
}

# The README's recipe for tokens per user, as written there (between its
# markers), with its variables: the daemon's user, its directory of
# tokens, the users.
recipe=$(sed -n '/^# users-recipe: begin/,/^# users-recipe: end/p' "$readme")
[ -n "$recipe" ] || fail "no users recipe in $readme"
mkdir -p "$tmp/etc"
VOCL_USER=$svc USERS_DIR=$tmp/etc/users TOKEN_USERS="$alice $bob" \
    HOME_OF="$tmp/home" bash -euc "$recipe" || fail "the README's recipe failed"
for u in $alice $bob; do
    t=$tmp/home/$u/.vocl
    [ "$(stat -c '%U %a' "$t")" = "$u 700" ] || fail "$t: $(stat -c '%U %a' "$t"), not $u 700"
    [ "$(stat -c '%U %a' "$t/token")" = "$u 600" ] || fail "$t/token: $(stat -c '%U %a' "$t/token")"
    # The user can write there (its proxies file, say).
    as "$u" sh -c 'echo "# mine" > ~/.vocl/proxies' || fail "$u cannot write in its ~/.vocl"
done

# The daemon, as the service user, with a token per user.
install -d -m 755 -o "$svc" "$tmp/run"
as "$svc" env POCL_DEVICES="pthread pthread" "$tmp/bin/voclproxyd" --listen --users "$tmp/etc/users" \
    --address 127.0.0.1 --port 0 --port-file "$tmp/run/gpu.port" >"$tmp/daemon.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do [ -s "$tmp/run/gpu.port" ] && break; sleep 0.1; done
[ -s "$tmp/run/gpu.port" ] || fail "the daemon did not start: $(cat "$tmp/daemon.log")"
port=$(cat "$tmp/run/gpu.port")
dpid=$(pgrep -u "$svc" -f 'voclproxyd --listen' | head -1)

# run LOG USER PROGRAM ARGS...: an application of USER through the daemon.
# Past 120 s it is ended (status 124), its threads' stacks in LOG.hung
# first, which fail prints (watchdog.sh).
run() {
    local log=$1 u=$2 p rc=0
    shift 2
    as "$u" env VOCL_PROXIES="$port" LD_PRELOAD="$tmp/bin/libvocl.so" "$@" >"$log" 2>&1 &
    p=$!
    watchdog "$p" "${VOCL_APP_LIMIT:-120}" "$log.hung" >/dev/null 2>&1 &
    wait "$p" || rc=$?
    [ ! -e "$log.hung" ] || rc=124
    return "$rc"
}

case $what in
any)
    # Both users at once, each served, each logged with its real uid.
    run "$tmp/a-gemm" "$alice" "$tmp/bin/gemm" -n 256 -r 2 & a1=$!
    run "$tmp/b-nbody" "$bob" "$tmp/bin/nbody" -n 2048 -s 5 & b1=$!
    run "$tmp/a-nbody" "$alice" "$tmp/bin/nbody" -n 1024 -s 5 & a2=$!
    run "$tmp/b-gemm" "$bob" "$tmp/bin/gemm" -n 128 -r 2 & b2=$!
    for j in "$a1 a-gemm" "$b1 b-nbody" "$a2 a-nbody" "$b2 b-gemm"; do
        set -- $j
        wait "$1" || fail "$2: exit $?: $(tail -3 "$tmp/$2")"
        grep -q 'verified=yes' "$tmp/$2" || fail "$2 did not verify: $(tail -3 "$tmp/$2")"
        echo "$2: $(grep RESULT "$tmp/$2")"
    done
    for u in $alice $bob; do
        n=$(grep -c "served (user $u, uid $(id -u "$u"), host $(hostname), process " "$tmp/daemon.log" || true)
        [ "$n" -eq 2 ] || fail "the daemon logged $n sessions of $u, not 2: $(grep served "$tmp/daemon.log")"
    done
    echo "served: $(grep -o 'client [0-9]* served .*' "$tmp/daemon.log" | head -1) (and 3 more)"

    # A wrong token: refused, the user told, the log naming user and uid.
    head -c 48 /dev/urandom | base64 >"$tmp/home/$alice/wrong"
    chown "$alice" "$tmp/home/$alice/wrong"
    chmod 600 "$tmp/home/$alice/wrong"
    rc=0
    run "$tmp/wrong" "$alice" env VOCL_TOKEN_FILE="$tmp/home/$alice/wrong" "$tmp/bin/gemm" -n 32 || rc=$?
    [ "$rc" -ne 0 ] || fail "a wrong token was served"
    grep -q "the token in $tmp/home/$alice/wrong is not the proxy's" "$tmp/wrong" ||
        fail "alice was not told her token is wrong: $(cat "$tmp/wrong")"
    grep -q "refused: a wrong token (user $alice, uid $(id -u "$alice")," "$tmp/daemon.log" ||
        fail "no refusal logged for the wrong token: $(tail -3 "$tmp/daemon.log")"
    echo "wrong token: exit $rc: $(grep -m1 libvocl "$tmp/wrong")"
    # No token: the user is told before anything is sent.
    rc=0
    run "$tmp/none" "$bob" env VOCL_TOKEN_FILE="$tmp/home/$bob/none" "$tmp/bin/gemm" -n 32 || rc=$?
    [ "$rc" -ne 0 ] && grep -q 'token file' "$tmp/none" || fail "no token: exit $rc: $(tail -3 "$tmp/none")"
    echo "no token: exit $rc: $(grep -m1 libvocl "$tmp/none")"
    # Alice names herself bob (her own token): the daemon knows her uid.
    rc=0
    run "$tmp/claim" "$alice" env VOCL_TEST_USER="$bob" "$tmp/bin/gemm" -n 32 || rc=$?
    [ "$rc" -ne 0 ] || fail "alice was served as bob"
    grep -q "refused: a user name not its own (user $bob, uid $(id -u "$alice")," "$tmp/daemon.log" ||
        fail "no refusal logged for alice as bob: $(tail -3 "$tmp/daemon.log")"
    echo "alice as bob: exit $rc: $(grep -o 'client [0-9]* refused: a user name.*' "$tmp/daemon.log")"

    # No lock, file or name of the design another user can hold to delay a
    # start: bob takes alice's control directory's name (TMPDIR) and the
    # old connect lock, and holds them; alice's first call is as quick.
    clinfo_ms() {
        local s
        s=$(date +%s%N)
        run "$tmp/clinfo" "$alice" env TMPDIR=/tmp clinfo -l || fail "clinfo as alice: $(cat "$tmp/clinfo")"
        grep -q 'Device #' "$tmp/clinfo" || fail "clinfo as alice: $(cat "$tmp/clinfo")"
        echo $((($(date +%s%N) - s) / 1000000))
    }
    clinfo_ms >/dev/null
    before=$(clinfo_ms)
    ctl=/tmp/vocl-ctl-$(id -u "$alice")
    [ ! -e "$ctl" ] || rm -rf "$ctl"
    as "$bob" mkdir -m 777 "$ctl"
    as "$bob" flock -s /tmp/.vocl-connect.lock sleep 60 >/dev/null 2>&1 &
    sleep 0.5
    after=$(clinfo_ms)
    pkill -u "$bob" 2>/dev/null || true
    rm -rf "$ctl"
    [ "$after" -le $((before + 1000)) ] ||
        fail "alice's first call took $after ms with bob holding her names, $before ms without"
    echo "alice's clinfo -l: $before ms, then $after ms with bob holding her control directory's name and the old connect lock"
    ;;
burst)
    # N applications of the two users in the same instant: all connect
    # (first call to platform listed: libvocl's "in N ms") within
    # VOCL_BURST_CONNECT_MS and verify, none waits for another's
    # connection.  One application first, alone: its connect time is the
    # usual one, and it fills the service user's kernel cache (PoCL 3.1's
    # cache fails builds now and then when many processes fill it at once,
    # natively too: pocl/pocl#1480).
    n=${VOCL_BURST:-16}
    run "$tmp/burst-alone" "$alice" env VOCL_VERBOSE=2 "$tmp/bin/gemm" -n 64 -r 1 ||
        fail "one application alone: $(tail -3 "$tmp/burst-alone")"
    alone=$(sed -n 's/.* devices (in \([0-9]*\) ms)$/\1/p' "$tmp/burst-alone")
    rm -f "$tmp/go"
    js=()
    for ((i = 0; i < n; i++)); do
        u=$alice
        [ $((i % 2)) -eq 0 ] || u=$bob
        (
            while [ ! -e "$tmp/go" ]; do sleep 0.01; done
            run "$tmp/burst$i" "$u" env VOCL_VERBOSE=2 "$tmp/bin/gemm" -n 64 -r 1
        ) & js+=($!)
    done
    sleep 1
    start=$(date +%s%N)
    touch "$tmp/go"
    for ((i = 0; i < n; i++)); do
        wait "${js[$i]}" || fail "application $i: exit $?: $(tail -3 "$tmp/burst$i")"
        grep -q 'verified=yes' "$tmp/burst$i" || fail "application $i did not verify"
    done
    took=$((($(date +%s%N) - start) / 1000000))
    served=$(grep -c ' served (user ' "$tmp/daemon.log" || true)
    [ "$served" -eq $((n + 1)) ] || fail "the daemon served $served sessions, not $((n + 1))"
    for ((i = 0; i < n; i++)); do
        sed -n 's/.* devices (in \([0-9]*\) ms)$/\1/p' "$tmp/burst$i"
    done | sort -n >"$tmp/connect.ms"
    [ "$(wc -l <"$tmp/connect.ms")" -eq "$n" ] || fail "not every application said its connect time"
    median=$(awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}' "$tmp/connect.ms")
    worst=$(tail -1 "$tmp/connect.ms")
    echo "| applications | connect alone | connect median | connect worst | last verified |"
    echo "|---|---|---|---|---|"
    echo "| $n of two users at once | $alone ms | $median ms | $worst ms | $took ms |"
    limit=${VOCL_BURST_CONNECT_MS:-10000}
    [ "$worst" -le "$limit" ] || fail "an application connected after $worst ms (limit $limit)"
    ;;
bw)
    # Same node, another user: the client maps the daemon's memfds (handed
    # over a Unix socket: /proc/PID/fd is closed to it), so a blocking
    # transfer is one copy.  Native and VOCL in turns, ROUNDS times.
    w=$tmp/bin/$(basename "$worker")
    rounds=${VOCL_BW_ROUNDS:-3}
    for ((r = 1; r <= rounds; r++)); do
        as "$alice" env POCL_DEVICES=pthread "$w" --sections bw --sizes 16M,64M --reps 3 \
            >>"$tmp/native.csv" 2>"$tmp/native.err" || fail "native: $(cat "$tmp/native.err")"
        run "$tmp/vocl.out" "$alice" env VOCL_VERBOSE=2 "$w" --sections bw --sizes 16M,64M --reps 3 ||
            fail "through the daemon: $(tail -5 "$tmp/vocl.out")"
        grep '^bw,' "$tmp/vocl.out" >>"$tmp/vocl.csv"
        ! grep -q 'cannot be mapped' "$tmp/vocl.out" ||
            fail "alice's client could not map the daemon's buffers: $(grep -m1 'cannot be mapped' "$tmp/vocl.out")"
    done
    echo "alice's client, same node, the daemon run by $svc (median of $rounds rounds):"
    echo "| transfer | native | VOCL | VOCL/native |"
    echo "|---|---|---|---|"
    for d in write read; do
        for size in 16777216 67108864; do
            n=$(awk -F, -v d=$d -v s=$size '$1 == "bw" && $2 == d && $3 == s {print $4}' "$tmp/native.csv" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
            v=$(awk -F, -v d=$d -v s=$size '$1 == "bw" && $2 == d && $3 == s {print $4}' "$tmp/vocl.csv" | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
            [ -n "$n" ] && [ -n "$v" ] || fail "no $d $size figure: $(cat "$tmp/vocl.csv")"
            awk -v d=$d -v s=$size -v n="$n" -v v="$v" \
                'BEGIN { printf "| %s %d MiB | %.2f GB/s | %.2f GB/s | %.2fx |\n", d, s / 1048576, n / 1e9, v / 1e9, v / n }'
        done
    done
    ;;
*) fail "unknown test $what" ;;
esac
# The daemon ends on SIGTERM within 5 s, with its workers.
kill -TERM "$dpid"
for _ in $(seq 50); do pgrep -u "$svc" >/dev/null || break; sleep 0.1; done
! pgrep -u "$svc" >/dev/null || fail "processes of $svc left 5 s after SIGTERM: $(pgrep -u "$svc" -a)"
echo "SIGTERM: the daemon and its workers ended"
echo PASS
