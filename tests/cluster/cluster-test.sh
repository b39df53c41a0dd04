#!/usr/bin/env bash
# cluster-test.sh - the cluster suite: VOCL on a cluster of network
# namespaces made by vocl-cluster (tools/cluster), over TCP between hosts.
#   cluster-test.sh VOCL_CLUSTER VOCL_RUN app PROGRAM ARGS...
#     PROGRAM on 32 virtual GPUs over 8 hosts (8 proxies x 4 devices, one
#     proxy per host): exits 0, and its last line says verified=yes.
#   cluster-test.sh VOCL_CLUSTER VOCL_RUN clinfo
#     vocl-run -f HOSTFILE: clinfo -l lists 32 devices, and the 8 proxies
#     ran on 8 hosts.
#   cluster-test.sh VOCL_CLUSTER VOCL_RUN kill PEER_DEATH [--stream]
#     kill -9 of the proxy on another host (peer_death.c): the program
#     does not crash, its calls on the dead device fail, the others work,
#     and the job ends with its status (0) within 15 s of the kill.
#   cluster-test.sh VOCL_CLUSTER VOCL_RUN slurm PROGRAM ARGS...
#     Slurm (slurmctld + a slurmd per host): `salloc -N 4 vocl-run -n 4`
#     and an sbatch script both run PROGRAM with one proxy per node.
# Exit 77 (skipped) where the machine cannot make namespaces (not root,
# no CAP_NET_ADMIN), or for slurm where Slurm is not installed.  Every job
# has a time limit below the test's, so that the cluster is always taken
# down by vocl-cluster run itself.
set -uo pipefail
cluster=$1 vocl_run=$2 what=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
why=$("$cluster" check) || { echo "SKIP: $why" >&2; exit 77; }
if [ "$("$cluster" status | head -1)" != "no namespaces" ]; then
    echo "cluster-test: a vocl-cluster is up already (vocl-cluster down, if it is a leftover)" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cluster-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export CLUSTER_TMP=$tmp

# The proxies say where they run: voclproxyd behind a script that writes
# its host's name first (vocl-run takes VOCL_PROXYD).
proxyd=$(VOCL_PROXYD= "$vocl_run" --dry-run -n 1 -- true | grep -o '[^ ]*/voclproxyd' | tail -1)
cat >"$tmp/proxyd" <<EOF
#!/bin/sh
hostname >>"$tmp/proxy-hosts"
exec "$proxyd" "\$@"
EOF
chmod +x "$tmp/proxyd"
export VOCL_PROXYD=$tmp/proxyd

# Distinct hosts the proxies ran on, and how many proxies.
placement() { echo "proxies: $(wc -l <"$tmp/proxy-hosts"), hosts: $(sort -u "$tmp/proxy-hosts" | wc -l)"; }

case "$what" in
app)
    "$cluster" run -n 8 -r 10gbit -- bash -c '
        timeout 150 "$0" -n 8 -d 4 -- "$@" >"$CLUSTER_TMP/out"' "$vocl_run" "$@"
    rc=$?
    cat "$tmp/out"
    placement
    [ "$rc" -eq 0 ] || { echo "cluster-test: exit status $rc" >&2; exit 1; }
    [[ $(tail -n 1 "$tmp/out") == RESULT\ *devices=32\ *verified=yes ]] ||
        { echo "cluster-test: no RESULT line on 32 devices with verified=yes" >&2; exit 1; }
    [ "$(placement)" = "proxies: 8, hosts: 8" ] || { echo "cluster-test: not one proxy per host" >&2; exit 1; }
    ;;
clinfo)
    # With the hostfile named, as on a cluster without the harness's
    # HYDRA_HOST_FILE.
    "$cluster" run -n 8 -- bash -c 'unset HYDRA_HOST_FILE
        timeout 90 "$0" -f "$VOCL_CLUSTER_DIR/hostfile" -n 8 -d 4 -- clinfo -l >"$CLUSTER_TMP/out"' "$vocl_run"
    rc=$?
    cat "$tmp/out"
    placement
    [ "$rc" -eq 0 ] || { echo "cluster-test: exit status $rc" >&2; exit 1; }
    n=$(grep -c 'Device #' "$tmp/out")
    [ "$n" -eq 32 ] || { echo "cluster-test: $n devices listed, not 32" >&2; exit 1; }
    [ "$(placement)" = "proxies: 8, hosts: 8" ] || { echo "cluster-test: not one proxy per host" >&2; exit 1; }
    ;;
kill)
    prog=$1
    shift
    # 3 hosts: the program on vc1, proxy rank 1 on vc2, proxy rank 2 on
    # vc3; rank 2 is killed (by pid: the namespaces share the machine's
    # process table).
    "$cluster" run -n 3 -- bash "$here/kill-proxy.sh" "$vocl_run" "$prog" "$@"
    rc=$?
    placement
    exit "$rc"
    ;;
slurm)
    PATH=$PATH:/usr/sbin
    for p in slurmctld slurmd salloc sbatch munged; do
        command -v "$p" >/dev/null || { echo "SKIP: no $p (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 77; }
    done
    "$cluster" run -n 4 --slurm -- bash "$here/slurm-jobs.sh" "$vocl_run" "$@"
    ;;
*)
    echo "usage: cluster-test.sh VOCL_CLUSTER VOCL_RUN app|clinfo|kill|slurm ..." >&2
    exit 2
    ;;
esac
