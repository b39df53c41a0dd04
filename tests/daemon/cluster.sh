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

daemons=(vc1 vc2 vc3 vc4)
devs=$(printf 'pthread %.0s' 1 2 3 4 5 6 7 8)
for h in "${daemons[@]}"; do
    POCL_DEVICES=${devs% } "$cluster" exec "$h" "$proxyd" --listen --name "$h" -v \
        >"$tmp/$h.log" 2>&1 &
    pids+=($!)
done
for h in "${daemons[@]}"; do
    for _ in $(seq 300); do grep -q 'listening on' "$tmp/$h.log" && break; sleep 0.1; done
    grep -q 'listening on' "$tmp/$h.log" || fail "daemon on $h did not start: $(tail -5 "$tmp/$h.log")"
done
echo "daemons: $(printf '%s ' "${daemons[@]}")(8 devices each, port 7010)"
proxies=$(IFS=,; echo "${daemons[*]}")

# check NAME OUTPUT: 32 devices, verified, and every daemon served vc5.
served=0
check() {
    tail -1 "$2"
    [[ $(tail -n 1 "$2") == RESULT\ *devices=32\ *verified=yes ]] ||
        fail "$1: no RESULT line on 32 devices with verified=yes: $(tail -5 "$2")"
    served=$((served + 1))
    for h in "${daemons[@]}"; do
        n=$(grep -c "served (user root, .*host vc5," "$tmp/$h.log" || true)
        [ "$n" -eq "$served" ] || fail "$1: daemon $h served $n clients of vc5, not $served"
    done
}

case $what in
apps)
    # The cluster suite's applications and sizes, each alone on vc5.
    run() {
        local app=$1
        shift
        local start=$SECONDS
        timeout 150 "$cluster" exec vc5 env VOCL_PROXIES="$proxies" LD_PRELOAD="$lib" \
            "$examples/$app" "$@" >"$tmp/$app.out" 2>&1 ||
            fail "$app: exit $?: $(tail -5 "$tmp/$app.out")"
        echo -n "$app ($((SECONDS - start)) s): "
        check "$app" "$tmp/$app.out"
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
    check "the job" "$tmp/job.out"
    for p in "${pids[@]}"; do kill -0 "$p" || fail "a daemon is gone after the job"; done
    echo "the daemons stay after the job: $(grep -c 'session closed' "$tmp/vc1.log") session closed on vc1"
    ;;
*)
    fail "usage: cluster.sh MPI VOCL_CLUSTER LIBVOCL VOCLPROXYD EXAMPLES-DIR apps|slurm"
    ;;
esac
echo PASS
