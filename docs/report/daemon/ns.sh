# ns.sh - sourced by this folder's scripts: from build-ompi, a name server
# (ompi-server) on loopback in a temporary HOME, and daemon NAME [OPTION...],
# which starts voclproxyd --listen with one PoCL device and waits until it
# listens.  Everything started goes at exit.
cd "$(dirname "${BASH_SOURCE[0]}")/../../../build-ompi" || exit 1
tmp=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do pkill -9 -P $p; kill -9 $p; done 2>/dev/null; rm -rf $tmp' EXIT
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_btl=self,vader,tcp OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HOME=$tmp/home VOCL_NAME_SERVER=$tmp/ns.uri TMPDIR=$tmp; mkdir -p $HOME
ompi-server --no-daemonize -r $VOCL_NAME_SERVER >/dev/null & pids+=($!)
for _ in $(seq 100); do [ -s $VOCL_NAME_SERVER ] && break; sleep 0.1; done

daemon() {
    local n=$1
    shift
    POCL_DEVICES=pthread proxyd/voclproxyd --listen --name "$n" "$@" -v > $tmp/$n.log 2>&1 & pids+=($!)
    for _ in $(seq 100); do grep -q 'listening on' $tmp/$n.log && return; sleep 0.1; done
    echo "daemon $n did not start: $(tail -3 $tmp/$n.log)" >&2
    exit 1
}
