#!/usr/bin/env bash
# cluster.sh - daemon mode on the cluster harness (vocl-cluster): a daemon
# (voclproxyd --listen, 8 devices, port 7010) on each of 4 hosts, started
# once, outside any job; the applications on a fifth host, under
# LD_PRELOAD alone, name them by host (VOCL_PROXIES=vc1,vc2,...), see 32
# virtual GPUs and verify.
# With slurm, the same daemons serve a batch job that allocates only the
# application's node (sbatch -N 1 -w vc5).  With vgpus, Slurm hands out
# the 32 devices as virtual GPUs (vocl-slurm(8): spank_vocl.so, its
# cli_filter.lua, Licenses=vgpu:32): 5 jobs of --vocl-gpus=8, four at once
# on distinct devices, the fifth when one ends; 40 refused at submission;
# scancel frees a job's devices within 10 s.  All traffic stays on the
# harness's own subnet (10.213.0.0/24) inside its namespaces.
#   cluster.sh MPI VOCL_CLUSTER LIBVOCL VOCLPROXYD EXAMPLES-DIR apps|slurm
#   cluster.sh ... vgpus VGPUS-PROGRAM SPANK_VOCL.SO CLI_FILTER.LUA
# MPI: the build's (not used: daemon mode runs on UCX).  Exits 77 (skipped)
# where namespaces cannot be made, or (slurm) without Slurm.
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }

if [ "${1:-}" != --inner ]; then
    shift
    cluster=$1 what=$5
    why=$("$cluster" check) || { echo "SKIP: $why"; exit 77; }
    up=(-n 5)
    [ "$what" != vgpus ] || [ -f "${7:-}" ] ||
        { echo "SKIP: spank_vocl.so was not built: Slurm's spank.h was not found when the build was configured (tools/setup-debian.sh --cluster installs libslurm-dev; then meson setup --wipe)"; exit 77; }
    if [ "$what" = slurm ] || [ "$what" = vgpus ]; then
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
    if [ "$what" = vgpus ]; then
        # Slurm counts the pool (Licenses=), the plugin assigns devices from
        # the pool file and keeps assignments in a directory all hosts see.
        x=$CLUSTER_TMP/slurm-extra
        mkdir -p "$x" "$CLUSTER_TMP/vgpus"
        printf '%s\n' 'Licenses=vgpu:32' 'PlugStackConfig=%STATE%/slurm/plugstack.conf' \
            'CliFilterPlugins=cli_filter/lua' >"$x/slurm.conf"
        echo "required $7 pool=$CLUSTER_TMP/pool state=$CLUSTER_TMP/vgpus" >"$x/plugstack.conf"
        cp "$8" "$x/cli_filter.lua"
        printf 'vc%d 8\n' 1 2 3 4 >"$CLUSTER_TMP/pool"
        up+=(--slurm-extra "$x")
    fi
    # (No preload of the harness's UCX fix: that is for MPICH's endpoints.)
    VOCL_CLUSTER_UCX_FIX= "$cluster" run "${up[@]}" -- bash "$0" --inner "$@"
    exit $?
fi

shift
cluster=$1 lib=$2 proxyd=$3 examples=$4 what=$5 vgpus=${6:-}
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
# A failure shows the daemons' side of it too.
fail() {
    echo "FAIL: $*"
    for h in "${daemons[@]}"; do
        [ -s "$tmp/$h.log" ] && { echo "--- the end of $h's log:"; tail -n 12 "$tmp/$h.log"; }
    done
    exit 1
}
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

# expand VOCL_PROXIES: its devices, "HOST DEVICE" a line (HOST@0-3+6).
expand() {
    local e host r a b i
    for e in ${1//,/ }; do
        host=${e%@*}
        r=${e#*@}
        for r in ${r//+/ }; do
            a=${r%-*} b=${r#*-}
            for ((i = a; i <= b; i++)); do echo "$host $i"; done
        done
    done
}

# lic: licences of vgpu in use (scontrol show licenses).
lic() { scontrol show licenses vgpu | grep -o 'Used=[0-9]*' | cut -d= -f2; }

# wait_for SECONDS CMD...: until CMD succeeds; 1 if it never did.
wait_for() {
    local end=$((SECONDS + $1))
    shift
    until "$@"; do
        [ $SECONDS -lt $end ] || return 1
        sleep 0.2
    done
}
# started ID: the job's program runs on its devices (fails the test if the
# job is over without).
started() {
    grep -q '^roundtrip ok' "$tmp/job-$1.out" 2>/dev/null && return 0
    ! gone "$1" || fail "job $1 ended: $(tail -3 "$tmp/job-$1.out" 2>/dev/null)"
    return 1
}
gone() { ! squeue -h -j "$1" 2>/dev/null | grep -q .; }
freed() { [ ! -e "$tmp/vgpus/job.$1" ] && [ "$(lic)" -eq "$2" ]; }

vgpus_test() {
    # (On failure, what the plugin said in the slurmd logs.)
    fail() {
        echo "FAIL: $*"
        grep -h 'vocl' "$VOCL_CLUSTER_DIR"/slurm/log/slurmd-*.log | tail -n 12
        exit 1
    }
    # libvocl alone: HOST@DEVICES lists only those, and a bad list is refused.
    "$cluster" exec vc5 env VOCL_PROXIES=vc1@2-4,vc2@7 LD_PRELOAD="$lib" "$vgpus" \
        >"$tmp/only.out" 2>&1 || fail "vc1@2-4,vc2@7: exit $?: $(tail -3 "$tmp/only.out")"
    [ "$(grep -c '^device .* vc1$' "$tmp/only.out")" -eq 3 ] &&
        [ "$(grep -c '^device .* vc2$' "$tmp/only.out")" -eq 1 ] &&
        grep -qx 'devices 4' "$tmp/only.out" ||
        fail "VOCL_PROXIES=vc1@2-4,vc2@7 did not give 3 devices of vc1 and 1 of vc2: $(cat "$tmp/only.out")"
    echo "VOCL_PROXIES=vc1@2-4,vc2@7: 4 devices (3 on vc1, 1 on vc2)"
    "$cluster" exec vc5 env VOCL_PROXIES=vc1@4-2 LD_PRELOAD="$lib" "$vgpus" >"$tmp/bad.out" 2>&1 &&
        fail "VOCL_PROXIES=vc1@4-2 was taken"
    grep -q "'4-2' is not a device list" "$tmp/bad.out" ||
        fail "no clear error for vc1@4-2: $(tail -3 "$tmp/bad.out")"
    "$cluster" exec vc5 env VOCL_PROXIES=vc1@6-9 LD_PRELOAD="$lib" "$vgpus" >"$tmp/past.out" 2>&1 ||
        fail "vc1@6-9: exit $?: $(tail -3 "$tmp/past.out")"
    grep -qx 'devices 2' "$tmp/past.out" &&
        grep -q 'proxy vc1 has 8 devices (0-7): device 8, named in VOCL_PROXIES, is not there' "$tmp/past.out" ||
        fail "vc1@6-9: not devices 6 and 7 with a message for 8: $(cat "$tmp/past.out")"
    echo "VOCL_PROXIES=vc1@6-9: 2 devices, and: $(grep -o 'proxy vc1 has.*' "$tmp/past.out")"

    cat >"$tmp/job.sh" <<JOB
#!/bin/bash
echo "start \$(date +%s.%N)"
echo "node \$(hostname) gpus \${VOCL_GPUS:-none} proxies \${VOCL_PROXIES:-none}"
exec env LD_PRELOAD=$lib $vgpus $tmp/release.\$SLURM_JOB_ID
JOB
    # More than the pool: refused at submission, saying how many there are.
    if sbatch -N 1 --vocl-gpus=40 "$tmp/job.sh" >"$tmp/sb40.out" 2>&1; then
        fail "sbatch --vocl-gpus=40 was accepted: $(cat "$tmp/sb40.out")"
    fi
    grep -q 'the pool has 32 virtual GPUs' "$tmp/sb40.out" ||
        fail "sbatch --vocl-gpus=40: no clear message: $(cat "$tmp/sb40.out")"
    echo "sbatch --vocl-gpus=40 refused: $(grep -m1 'pool has' "$tmp/sb40.out")"
    sbatch -N 1 --vocl-gpus=eight "$tmp/job.sh" >"$tmp/sbx.out" 2>&1 && fail "--vocl-gpus=eight was accepted"
    grep -q 'give a number of virtual GPUs' "$tmp/sbx.out" || fail "--vocl-gpus=eight: $(cat "$tmp/sbx.out")"

    # Five jobs of 8: four run, the fifth waits for licences.
    local ids=() t0=() i id
    for i in 1 2 3 4 5; do
        t0+=("$(date +%s.%N)")
        id=$(sbatch --parsable -N 1 -t 3 --vocl-gpus=8 -o "$tmp/job-%j.out" "$tmp/job.sh") ||
            fail "sbatch of job $i: $id"
        ids+=("$id")
    done
    for i in 0 1 2 3; do
        wait_for 60 started "${ids[$i]}" ||
            fail "job ${ids[$i]} did not run: $(squeue -h -j "${ids[$i]}" -o '%T %r'): $(tail -3 "$tmp/job-${ids[$i]}.out" 2>/dev/null)"
    done
    local why
    why=$(squeue -h -j "${ids[4]}" -o '%T %r')
    [ "$why" = "PENDING Licenses" ] || fail "the fifth job is '$why', not 'PENDING Licenses'"
    [ "$(lic)" -eq 32 ] || fail "$(lic) licences in use with four jobs, not 32"
    echo "four jobs run (vgpu licences in use: 32), the fifth: $why"
    # Each sees its 8, on the daemons it was given; no device twice.
    : >"$tmp/assigned"
    for i in 0 1 2 3; do
        local out=$tmp/job-${ids[$i]}.out p
        p=$(sed -n 's/^node .* proxies //p' "$out")
        grep -qx 'devices 8' "$out" || fail "job ${ids[$i]} does not see 8 devices: $(cat "$out")"
        [ "$(expand "$p" | wc -l)" -eq 8 ] || fail "job ${ids[$i]} was given '$p', not 8 devices"
        [ "$(expand "$p" | awk '{print $1}' | sort | uniq -c)" = \
          "$(sed -n 's/^device [0-9]* //p' "$out" | sort | uniq -c)" ] ||
            fail "job ${ids[$i]}: its devices' nodes are not those of '$p': $(grep '^device' "$out")"
        expand "$p" >>"$tmp/assigned"
        echo "job ${ids[$i]} on $(sed -n 's/^node \([^ ]*\) .*/\1/p' "$out"): VOCL_PROXIES=$p, 8 devices"
    done
    [ "$(sort -u "$tmp/assigned" | wc -l)" -eq 32 ] ||
        fail "the four jobs share devices: $(sort "$tmp/assigned" | uniq -d | tr '\n' ' ')"

    # One ends: the fifth runs, on its devices.
    local t
    t=$(date +%s.%N)
    touch "$tmp/release.${ids[0]}"
    wait_for 30 started "${ids[4]}" || fail "the fifth job did not start after one ended: $(squeue -h -j "${ids[4]}" -o '%T %r')"
    [ "$(sed -n 's/^node .* proxies //p' "$tmp/job-${ids[4]}.out")" = \
      "$(sed -n 's/^node .* proxies //p' "$tmp/job-${ids[0]}.out")" ] ||
        fail "the fifth job was not given the devices that the first freed"
    grep -qx 'devices 8' "$tmp/job-${ids[4]}.out" || fail "the fifth job does not see 8 devices"
    echo "job ${ids[0]} ended: job ${ids[4]} ran on its devices" \
        "$(echo "$(date +%s.%N) $t" | awk '{printf "%.2f", $1 - $2}') s later"

    # scancel: the job's devices free within 10 s, its sessions closed.
    local p2 host before
    p2=$(sed -n 's/^node .* proxies //p' "$tmp/job-${ids[1]}.out")
    host=${p2%%@*}
    before=$(grep -c 'session closed' "$tmp/$host.log")
    local c0 freed_s
    c0=$(date +%s.%N)
    scancel "${ids[1]}"
    wait_for 10 freed "${ids[1]}" 24 ||
        fail "scancel: job ${ids[1]}'s devices not free after 10 s (licences in use $(lic), $(ls "$tmp/vgpus"))"
    freed_s=$(echo "$(date +%s.%N) $c0" | awk '{printf "%.2f", $1 - $2}')
    closed() { [ "$(grep -c 'session closed' "$tmp/$host.log")" -gt "$before" ]; }
    wait_for 10 closed || fail "scancel: daemon $host did not close job ${ids[1]}'s session"
    echo "scancel ${ids[1]}: its devices free in $freed_s s, its session on $host closed in" \
        "$(echo "$(date +%s.%N) $c0" | awk '{printf "%.2f", $1 - $2}') s"

    for id in "${ids[@]}"; do touch "$tmp/release.$id"; done
    for id in "${ids[@]}"; do wait_for 30 gone "$id" || fail "job $id did not end"; done
    wait_for 10 sh -c "[ -z \"\$(ls '$tmp/vgpus' | grep '^job')\" ]" ||
        fail "devices left assigned after every job ended: $(ls "$tmp/vgpus")"
    [ "$(lic)" -eq 0 ] || fail "$(lic) licences in use after every job ended"
    echo "every job over: no device assigned, no licence in use"

    # sbatch to the job's first OpenCL call with its devices (and to the
    # start of its script, Slurm's part).
    for i in 0 1 2 3 4; do
        local first start
        first=$(sed -n 's/^first-call \([0-9.]*\) (devices listed \([0-9.]*\))/\1 \2/p' "$tmp/job-${ids[$i]}.out")
        start=$(sed -n 's/^start //p' "$tmp/job-${ids[$i]}.out")
        [ -n "$first" ] && [ -n "$start" ] || fail "job ${ids[$i]}: no start or first-call line"
        echo "${t0[$i]} $start $first" | awk -v j="${ids[$i]}" \
            '{printf "sbatch to first OpenCL call, job %s: %.2f s (its devices listed %.2f s; the script started at %.2f s)\n", j, $3 - $1, $4 - $1, $2 - $1}'
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
            fail "$app as $u: exit $?: $(grep -m 8 'libvocl' "$tmp/$app.out"; tail -5 "$tmp/$app.out")"
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
vgpus)
    vgpus_test
    ;;
*)
    fail "usage: cluster.sh MPI VOCL_CLUSTER LIBVOCL VOCLPROXYD EXAMPLES-DIR apps|slurm|vgpus ..."
    ;;
esac
echo PASS
