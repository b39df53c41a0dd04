#!/usr/bin/env bash
# cluster.sh - daemon mode on the cluster harness (vocl-cluster): a daemon
# (voclproxyd --listen, 8 devices, port 7010) on each of 4 hosts, started
# once, outside any job; the applications on a fifth host, under
# LD_PRELOAD alone, name them by host (VOCL_PROXIES=vc1,vc2,...), see 32
# virtual GPUs and verify.
# With slurm, the same daemons serve a batch job that allocates only the
# application's node (sbatch -N 1 -w vc5).  All traffic stays on the
# harness's own subnet (10.213.0.0/24) inside its namespaces.
#   cluster.sh MPI VOCL_CLUSTER LIBVOCL VOCLPROXYD EXAMPLES-DIR apps|slurm
# MPI: the build's (not used: daemon mode runs on UCX).  Exits 77 (skipped)
# where namespaces cannot be made, or (slurm) without Slurm.
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }

if [ "${1:-}" != --inner ]; then
    shift
    cluster=$1 what=$5
    why=$("$cluster" check) || { echo "SKIP: $why"; exit 77; }
    up=(-n 5)
    if [ "$what" = slurm ]; then
        PATH=$PATH:/usr/sbin
        for p in slurmctld slurmd sbatch munged; do
            command -v "$p" >/dev/null ||
                { echo "SKIP: no $p (tools/setup-debian.sh --cluster)"; exit 77; }
        done
        up+=(--slurm)
    fi
    [ "$("$cluster" status | head -1)" = "no namespaces" ] ||
        fail "a vocl-cluster is up already (vocl-cluster down, if it is a leftover)"
    CLUSTER_TMP=$(mktemp -d "${TMPDIR:-/tmp}/daemon-cluster.XXXXXX")
    export CLUSTER_TMP
    trap 'rm -rf "$CLUSTER_TMP"' EXIT
    # (No preload of the harness's UCX fix: that is for MPICH's endpoints.)
    VOCL_CLUSTER_UCX_FIX= "$cluster" run "${up[@]}" -- bash "$0" --inner "$@"
    exit $?
fi

shift
cluster=$1 lib=$2 proxyd=$3 examples=$4 what=$5
tmp=$CLUSTER_TMP
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# UCX on the namespaces' interfaces (they have no other); no hydra, no preload.
unset HYDRA_LAUNCHER HYDRA_LAUNCHER_EXEC HYDRA_HOST_FILE LD_PRELOAD VOCL_PRELOAD
unset VOCL_APP_RANKS VOCL_CONNECT VOCL_PROXIES UCX_NET_DEVICES
export HOME=$tmp/home
# (The daemons' and applications' control sockets: the test's own.)
export VOCL_CTL_DIR=$tmp/ctl
mkdir -p "$HOME"
mkdir -p -m 700 "$VOCL_CTL_DIR"

# apps: the applications run as two users of their own, each with its token
# (--users), where users can be made (root, useradd); else as this one.
users=()
opts=()
if [ "$what" = apps ] && [ "$(id -u)" -eq 0 ] && command -v useradd >/dev/null; then
    users=(vocl-c-alice vocl-c-bob)
    chmod 755 "$tmp"
    mkdir -m 700 "$tmp/users"
    for u in "${users[@]}"; do
        userdel "$u" 2>/dev/null || true
        useradd -M -d "$tmp/home-$u" -s /usr/sbin/nologin "$u"
        install -d -m 700 -o "$u" "$tmp/home-$u" "$tmp/home-$u/.vocl"
        head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/users/$u"
        chmod 600 "$tmp/users/$u"
        install -m 600 -o "$u" "$tmp/users/$u" "$tmp/home-$u/.vocl/token"
    done
    cleanup() {
        for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
        for u in "${users[@]}"; do userdel "$u" 2>/dev/null || true; done
    }
    # (What they run, where they can read it.)
    mkdir "$tmp/bin"
    cp "$lib" "$tmp/bin/libvocl.so"
    for a in gemm nbody transpose smithwaterman; do cp "$examples/$a" "$tmp/bin/"; done
    chmod -R a+rX "$tmp/bin"
    lib=$tmp/bin/libvocl.so examples=$tmp/bin
    opts=(--users "$tmp/users")
fi

daemons=(vc1 vc2 vc3 vc4)
devs=$(printf 'pthread %.0s' 1 2 3 4 5 6 7 8)
for h in "${daemons[@]}"; do
    POCL_DEVICES=${devs% } "$cluster" exec "$h" "$proxyd" --listen --name "$h" -v "${opts[@]}" \
        >"$tmp/$h.log" 2>&1 &
    pids+=($!)
done
for h in "${daemons[@]}"; do
    for _ in $(seq 300); do grep -q 'listening on' "$tmp/$h.log" && break; sleep 0.1; done
    grep -q 'listening on' "$tmp/$h.log" || fail "daemon on $h did not start: $(tail -5 "$tmp/$h.log")"
done
echo "daemons: $(printf '%s ' "${daemons[@]}")(8 devices each, port 7010)"
proxies=$(IFS=,; echo "${daemons[*]}")

# check NAME OUTPUT USER: 32 devices, verified, and every daemon served
# USER's client on vc5.
declare -A served
check() {
    tail -1 "$2"
    [[ $(tail -n 1 "$2") == RESULT\ *devices=32\ *verified=yes ]] ||
        fail "$1: no RESULT line on 32 devices with verified=yes: $(tail -5 "$2")"
    served[$3]=$((${served[$3]:-0} + 1))
    for h in "${daemons[@]}"; do
        n=$(grep -c "served (user $3, .*host vc5," "$tmp/$h.log" || true)
        [ "$n" -eq "${served[$3]}" ] || fail "$1: daemon $h served $n clients of $3 on vc5, not ${served[$3]}"
    done
}

case $what in
apps)
    # The cluster suite's applications and sizes, each alone on vc5, by
    # turns as the two users (or as this one).
    turn=0
    run() {
        local app=$1 u=root as=()
        shift
        if [ ${#users[@]} -gt 0 ]; then
            u=${users[$((turn % 2))]}
            as=(runuser -u "$u" -- env HOME="$tmp/home-$u")
        fi
        turn=$((turn + 1))
        local start=$SECONDS
        timeout 150 "$cluster" exec vc5 "${as[@]}" env VOCL_PROXIES="$proxies" LD_PRELOAD="$lib" \
            "$examples/$app" "$@" >"$tmp/$app.out" 2>&1 ||
            fail "$app as $u: exit $?: $(tail -5 "$tmp/$app.out")"
        echo -n "$app as $u ($((SECONDS - start)) s): "
        check "$app" "$tmp/$app.out" "$u"
    }
    run gemm -n 384 -r 2
    run nbody -n 4096 -s 3
    run transpose -n 2048 -r 3
    run smithwaterman -n 256 -p 32
    ;;
slurm)
    # A batch job of one node, vc5: the daemons are services, not part of
    # the job.  The job's environment is the submitter's (sbatch exports it).
    cat >"$tmp/job.sh" <<JOB
#!/bin/bash
#SBATCH -N 1
#SBATCH -w vc5
#SBATCH -t 3
#SBATCH -o $tmp/job.out
echo "job on \$(hostname), nodes \$SLURM_JOB_NODELIST"
VOCL_PROXIES=$proxies LD_PRELOAD=$lib $(printf '%q ' "$examples/gemm" -n 384 -r 2)
JOB
    timeout 120 sbatch --wait "$tmp/job.sh" || fail "sbatch: exit $?: $(tail -5 "$tmp/job.out" 2>/dev/null)"
    head -1 "$tmp/job.out"
    grep -qx 'job on vc5, nodes vc5' "$tmp/job.out" || fail "the job did not run on vc5 alone"
    echo -n "gemm in the job: "
    check "the job" "$tmp/job.out" root
    for p in "${pids[@]}"; do kill -0 "$p" || fail "a daemon is gone after the job"; done
    echo "the daemons stay after the job: $(grep -c 'session closed' "$tmp/vc1.log") session closed on vc1"
    ;;
*)
    fail "usage: cluster.sh MPI VOCL_CLUSTER LIBVOCL VOCLPROXYD EXAMPLES-DIR apps|slurm"
    ;;
esac
echo PASS
