#!/usr/bin/env bash
# slurm-jobs.sh VOCL_RUN PROGRAM ARGS... - run by cluster-test.sh on
# vchead of a 4-host vocl-cluster with Slurm: PROGRAM on one proxy per node
# of an allocation, as users of a cluster start it,
#   salloc -N 4 vocl-run -n 4 -d 2 -- PROGRAM      (interactive)
#   sbatch -N 4 --wait JOB                          (batch; JOB runs the same)
# with hydra's own Slurm support (srun launches its proxies; the nodes come
# from SLURM_JOB_NODELIST): the harness's launcher and hostfile are unset.
# Passes when both verify and the 4 proxies of each ran on 4 nodes.
set -uo pipefail
vocl_run=$1
shift
unset HYDRA_LAUNCHER HYDRA_LAUNCHER_EXEC HYDRA_HOST_FILE
fail=0
hosts=$CLUSTER_TMP/proxy-hosts
check() { # NAME OUTPUT
    local placed
    cat "$2"
    placed="$(wc -l <"$hosts") proxies on $(sort -u "$hosts" | wc -l) nodes: $(sort "$hosts" | tr '\n' ' ')"
    echo "$1: $placed"
    [[ $(tail -n 1 "$2") == RESULT\ *verified=yes ]] || { echo "$1: no RESULT line with verified=yes" >&2; fail=1; }
    [[ "$placed" == "4 proxies on 4 nodes"* ]] || { echo "$1: not one proxy per node" >&2; fail=1; }
    rm -f "$hosts"
}

timeout 75 salloc -N 4 -t 5 "$vocl_run" -n 4 -d 2 -- "$@" >"$CLUSTER_TMP/salloc.out"
echo "salloc: exit status $?"
check salloc "$CLUSTER_TMP/salloc.out"

cat >"$CLUSTER_TMP/job.sh" <<JOB
#!/bin/bash
#SBATCH -N 4
#SBATCH -t 5
#SBATCH -o $CLUSTER_TMP/sbatch.out
#SBATCH -e $CLUSTER_TMP/sbatch.err
$(printf '%q ' "$vocl_run" -n 4 -d 2 -- "$@")
JOB
timeout 75 sbatch --wait "$CLUSTER_TMP/job.sh"
echo "sbatch: exit status $?"
check sbatch "$CLUSTER_TMP/sbatch.out"
exit $fail
