#!/usr/bin/env bash
# gpu-node.sh - issue 62's rows on a lent GPU node, in one command: builds
# the project there, then runs each measurement natively and through VOCL
# side by side, in rounds that alternate which goes first, and writes a
# markdown table per part (native, VOCL and their ratio) under OUT:
#
#   1-bandwidth.md  same-node write and read bandwidth through one proxy,
#                   16 and 64 MiB, the proxy staging in the driver's pinned
#                   memory (vocl-bench --sections bw)
#   2-latency.md    blocking 4-byte read, empty kernel + clFinish, 10,000
#                   small launches (vocl-bench --sections lat,launch)
#   3-scaling.md    the all-pairs, DAG, HEP and k-mer runtimes and the
#                   example applications on 1, 2, 4, 8 virtual GPUs: (a) N
#                   proxies sharing the node's one device (the GPU), (b) N
#                   PoCL devices of the CPU; efficiency and VOCL/native
#   4-unused.md     migration and failover available but unused: paired
#                   runs of gemm, nbody, transpose, smithwaterman without a
#                   spare and with a spare and --failover, on PoCL
#                   (docs/report/failover/run.sh)
#   5-pyopencl.md   the PyOpenCL scripts of tests/external/pyopencl
#                   (vocl-bench --pyopencl) and PyOpenCL's upstream suite
#                   (tests/external/pyopencl-upstream.sh)
#
#   tools/bench/gpu-node.sh [--smoke] [--build DIR] [OUT]
#
# OUT: default $OUT, else a new folder under /tmp.  Without --build it
# builds into build-gpu-node/ (meson setup, ninja) and runs from there;
# --build DIR runs an existing build as it is.  --smoke (or
# GPU_NODE_SMOKE=1): every part with tiny sizes and one round, for a 2-core
# machine with PoCL in under 2 minutes (the meson test gpu-node-smoke).
# It finds NVIDIA's OpenCL (an ICD naming libnvidia-opencl) and, where it
# lists a device, measures on it; else on PoCL.  DEVICE=pocl forces PoCL.
# Every size, count and round is a variable below (set it in the
# environment); BUDGET (seconds, from the start, build included) and each
# part's P<N>_BUDGET bound the rounds: a round starts only if one more fits.
# Exit status 0 when every part ran and verified; 1 when one failed (a
# "FAIL part N:" line says why); a part that cannot run has a SKIP line in
# its table, never a number.  Tables: gpu-node-tables.py.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
smoke=${GPU_NODE_SMOKE:-0} build=""
while [ $# -gt 0 ]; do
    case $1 in
        --smoke) smoke=1; shift ;;
        --build) [ $# -ge 2 ] || { echo "gpu-node.sh: --build needs a folder" >&2; exit 2; }
                 build=$(cd "$2" && pwd) || exit 2; shift 2 ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "gpu-node.sh: unknown option $1 (--help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
out=${1:-${OUT:-}}
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/gpu-node.XXXXXX")
mkdir -p "$out/raw" || exit 2
out=$(cd "$out" && pwd)
raw=$out/raw
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-node-work.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$src" || exit 2
exec > >(tee "$out/log.txt") 2>&1

# ---- sizes: the GPU node's (16 cores, 8 minutes), or --smoke's ----
if [ "$smoke" = 1 ]; then
    : "${BUDGET:=110}" "${ROUNDS:=1}" "${P3_ROUNDS:=1}" "${P4_PAIRS:=1}" "${P5_ROUNDS:=1}"
    : "${BW_REPS:=1}" "${BW_WINDOW:=4}" "${LAT_REPS:=1}" "${LAUNCHES:=1000}"
    : "${COUNTS:=1 2}" "${THREADS_PER_DEVICE:=1}" "${P3_WARMUP:=0}"
    : "${PRNU_ARGS:=-n 16 --size 64 --jobs 4}" "${DAG_ARGS:=-n 512 -s 2}"
    : "${HEP_EVENTS:=2000}" "${KMER_BASES:=20000}"
    : "${GEMM_ARGS:=-n 64 -r 1}" "${NBODY_ARGS:=-n 256 -s 2}"
    : "${TRANSPOSE_ARGS:=-n 256 -r 1}" "${SW_ARGS:=-n 128 -p 8}"
    : "${P4_APPS:=gemm -n 64 -r 1;nbody -n 256 -s 2;transpose -n 256 -r 1;smithwaterman -n 128 -p 4}"
    : "${UPSTREAM_TESTS:=test_arrays_in_structs.py test_enqueue_copy.py}"
else
    : "${BUDGET:=480}" "${ROUNDS:=3}" "${P3_ROUNDS:=2}" "${P4_PAIRS:=20}" "${P5_ROUNDS:=2}"
    : "${BW_REPS:=5}" "${BW_WINDOW:=32}" "${LAT_REPS:=9}" "${LAUNCHES:=10000}"
    : "${COUNTS:=1 2 4 8}" "${THREADS_PER_DEVICE:=2}" "${P3_WARMUP:=1}"
    : "${PRNU_ARGS:=-n 64 --size 256 --jobs 4}" "${DAG_ARGS:=-n 4096 -s 8}"
    : "${HEP_EVENTS:=100000}" "${KMER_BASES:=2000000}"
    : "${GEMM_ARGS:=-n 768 -r 1}" "${NBODY_ARGS:=-n 4096 -s 2}"
    : "${TRANSPOSE_ARGS:=-n 4096 -r 1}" "${SW_ARGS:=-n 1000 -p 16}"
    : "${P4_APPS:=gemm -n 512 -r 2;nbody -n 4096 -s 4;transpose -n 2048 -r 4;smithwaterman -n 1000 -p 8}"
    : "${UPSTREAM_TESTS:=}" # all of them
fi
# Each part's share of the budget (seconds); the build takes the rest.
# (--smoke runs one round of everything: its parts share the whole.)
[ "$smoke" = 1 ] && : "${P1_BUDGET:=$BUDGET}" "${P2_BUDGET:=$BUDGET}" "${P3_BUDGET:=$BUDGET}" \
    "${P4_BUDGET:=$BUDGET}" "${P5_BUDGET:=$BUDGET}"
: "${P1_BUDGET:=$((BUDGET * 6 / 100))}" "${P2_BUDGET:=$((BUDGET * 6 / 100))}"
: "${P3_BUDGET:=$((BUDGET * 32 / 100))}" "${P4_BUDGET:=$((BUDGET * 25 / 100))}"
: "${P5_BUDGET:=$((BUDGET * 18 / 100))}"
: "${BW_SIZES:=16M,64M}" "${P3_APPS:=prnu dag-nbody hep kmer gemm nbody transpose smithwaterman}"
: "${P4_CONFIGS:=native nospare failover}" "${RUN_TIMEOUT:=120}"
# PyOpenCL's Python: the first that has it (Debian's, ahead of a user's own).
if [ -z "${PYTHON:-}" ]; then
    for PYTHON in /usr/bin/python3 python3 ""; do
        "${PYTHON:-false}" -c 'import pyopencl, numpy' 2>/dev/null && break
    done
    PYTHON=${PYTHON:-python3}
fi
export HWLOC_COMPONENTS=-opencl HYDRA_LAUNCHER=${HYDRA_LAUNCHER:-fork}
export VOCL_DRIVER_STAGING=1 # part 1: pinned staging on (the default, said)
export POCL_CACHE_DIR=${POCL_CACHE_DIR:-$HOME/.cache/pocl}

failed=()
fail() { # PART MESSAGE: a loud line, and the exit status 1 at the end
    echo "FAIL part $1: $2"
    failed+=("$1")
}
skip() { # PART REASON: the part's table says so instead of numbers
    echo "SKIP part $1: $2"
    echo "$2" >"$raw/p$1.skip"
}
left() { ((SECONDS + $1 <= BUDGET)); }
# tmo [SECONDS]: a run's timeout: RUN_TIMEOUT (or SECONDS), but none past
# the budget and half a minute, so that one hung run cannot take the rest.
tmo() {
    local t=${1:-$RUN_TIMEOUT} rest=$((BUDGET + 30 - SECONDS))
    ((t < rest)) || t=$rest
    echo $((t > 5 ? t : 5))
}
# next_round PART R: whether round R may start: the first if the budget is
# not spent, a later one if one more round like the last fits the part's
# share and the whole budget.
next_round() {
    local cap=P$1_BUDGET now=$SECONDS
    if (($2 == 1)); then
        left 5 && return 0
        skip "$1" "budget: $BUDGET s spent before this part began"
        return 1
    fi
    local took=$((now - round_start))
    ((now - part_start + took <= ${!cap})) && left "$took" && return 0
    echo "part $1: $(($2 - 1)) round(s) done; one more ($took s) does not fit its $((${!cap})) s"
    return 1
}
names=(- 1-bandwidth 2-latency 3-scaling 4-unused 5-pyopencl)
tables() { # PART: its table, into OUT and onto the log
    local rc=0
    python3 "$here/gpu-node-tables.py" "$1" "$raw" >"$out/${names[$1]}.md" 2>"$work/table.err" || rc=$?
    echo
    cat "$out/${names[$1]}.md" "$work/table.err"
    ((rc == 0)) || fail "$1" "its table lacks rows it should have (gpu-node-tables.py, above)"
}
step() { echo; echo "== [$SECONDS s] $*"; }

# ---- the node, its devices, the build ----
step "the node"
echo "mode: $([ "$smoke" = 1 ] && echo "smoke (tiny sizes, numbers mean little)" || echo measurement)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown); cores: $(nproc)"
echo "clinfo -l:"
if command -v clinfo >/dev/null; then clinfo -l 2>&1; else echo "  (no clinfo on this node)"; fi
command -v nvidia-smi >/dev/null && nvidia-smi -L 2>&1

# Two ICD folders: the GPU's (NVIDIA) and PoCL's, each the only one listed.
icd_lib() { # PATTERN: the library an installed ICD of that name loads
    local f
    for f in /etc/OpenCL/vendors/*.icd; do
        [[ -r $f && $(basename "$f") == *$1* ]] && { head -n 1 "$f"; return; }
    done
    return 1
}
mkdir -p "$work/vend-gpu" "$work/vend-pocl"
gpu_lib=${GPU_ICD:-$(icd_lib nvidia || ldconfig -p 2>/dev/null | awk '/libnvidia-opencl.so.1 / {print $NF; exit}')}
[ -z "$gpu_lib" ] && [ -e /usr/local/nvidia/lib64/libnvidia-opencl.so.1 ] &&
    gpu_lib=/usr/local/nvidia/lib64/libnvidia-opencl.so.1
pocl_lib=${POCL_ICD:-$(icd_lib pocl || ldconfig -p 2>/dev/null | awk '/libpocl.so.2 / {print $NF; exit}')}
first_device() { # VENDORS: "device (platform)" of its first device, or nothing
    OCL_ICD_VENDORS=$1 clinfo -l 2>/dev/null | awk '
        /^Platform #0:/ { sub(/^Platform #0: */, ""); p = $0 }
        /Device #0:/ && p != "" { sub(/^.*Device #0: */, ""); print $0 " (" p ")"; exit }'
}
gpu_name="" cpu_name=""
if [ -n "$gpu_lib" ] && [ "${DEVICE:-}" != pocl ]; then
    echo "$gpu_lib" >"$work/vend-gpu/gpu.icd"
    gpu_name=$(first_device "$work/vend-gpu")
fi
if [ -n "$pocl_lib" ]; then
    echo "$pocl_lib" >"$work/vend-pocl/pocl.icd"
    cpu_name=$(POCL_DEVICES=pthread first_device "$work/vend-pocl")
    [ -n "$cpu_name" ] || cpu_name="PoCL pthread ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
fi
if [ -n "$gpu_name" ]; then
    main_vendors=$work/vend-gpu main_name=$gpu_name
else
    main_vendors=$work/vend-pocl main_name=${cpu_name:-none}
fi
[ -n "$pocl_lib" ] || { cpu_name=""; [ -z "$gpu_name" ] && main_vendors=""; }
cores=$(nproc)
{
    echo "device=$main_name"
    echo "kind=$([ -n "$gpu_name" ] && echo gpu || echo pocl)"
    echo "cpu_device=${cpu_name:+$cpu_name, $cores cores, $THREADS_PER_DEVICE PoCL threads a device}"
    echo "smoke=$smoke"
} >"$raw/node.txt"
echo "measuring on: $main_name$([ -n "$gpu_name" ] && echo " (the GPU's ICD: $gpu_lib)")"
echo "CPU devices: ${cpu_name:-none (no PoCL ICD)}"
# The environments that list the node's measured device alone, and PoCL alone.
main=(env)
[ -n "$main_vendors" ] && main+=(OCL_ICD_VENDORS="$main_vendors")
cpu=(env OCL_ICD_VENDORS="$work/vend-pocl")

step "build"
if [ -z "$build" ]; then
    build=$src/${BUILD_DIR:-build-gpu-node}
    if ! command -v meson >/dev/null || ! command -v ninja >/dev/null; then
        fail build "no meson or ninja on this node: build elsewhere and pass --build DIR"
    elif { [ -e "$build/build.ninja" ] || meson setup "$build" >"$raw/build.log" 2>&1; } &&
        ninja -C "$build" >>"$raw/build.log" 2>&1; then
        echo "built in $build ($SECONDS s)"
    else
        tail -n 30 "$raw/build.log"
        fail build "the build failed (raw/build.log)"
    fi
fi
[ -x "$build/tools/vocl-run" ] || fail build "no $build/tools/vocl-run"
if [[ " ${failed[*]} " == *" build "* ]]; then
    echo "gpu-node: FAILED: nothing measured (the build)"
    exit 1
fi
echo "build: $build"
bench=$build/tools/bench/vocl-bench vocl_run=$build/tools/vocl-run ex=$build/examples
command -v mpiexec >/dev/null || echo "WARNING: no mpiexec in PATH: every VOCL run will fail"

# ---- 1. bandwidth ----
step "1. same-node bandwidth through one proxy, pinned staging on"
part_start=$SECONDS
for ((r = 1; ; r++)); do
    next_round 1 $r || break
    round_start=$SECONDS
    "${main[@]}" timeout "$(tmo $((RUN_TIMEOUT * 2)))" "$bench" --sections bw --sizes "$BW_SIZES" --reps "$BW_REPS" \
        --window "$BW_WINDOW" --no-pipeline-run --timeout "$RUN_TIMEOUT" --csv "$raw/bw-$r.csv" \
        >"$raw/bw-$r.txt" 2>&1
    rc=$?
    grep -E "^(write|read) |FAIL" "$raw/bw-$r.txt"
    ((rc == 0)) || { tail -n 20 "$raw/bw-$r.txt"; fail 1 "vocl-bench exited $rc in round $r (a run failed or did not verify)"; break; }
    ((r < ROUNDS)) || break
done
tables 1

# ---- 2. round trips and launches ----
step "2. blocking 4-byte read, empty kernel + clFinish, $LAUNCHES launches"
part_start=$SECONDS
for ((r = 1; ; r++)); do
    next_round 2 $r || break
    round_start=$SECONDS
    "${main[@]}" timeout "$(tmo $((RUN_TIMEOUT * 2)))" "$bench" --sections lat,launch --reps "$LAT_REPS" \
        --launches "$LAUNCHES" --no-pipeline-run --timeout "$RUN_TIMEOUT" --csv "$raw/lat-$r.csv" \
        >"$raw/lat-$r.txt" 2>&1
    rc=$?
    grep -E "^(write|read|1-item|[0-9]+ launches)|FAIL" "$raw/lat-$r.txt"
    ((rc == 0)) || { tail -n 20 "$raw/lat-$r.txt"; fail 2 "vocl-bench exited $rc in round $r (a run failed or did not verify)"; break; }
    ((r < ROUNDS)) || break
done
tables 2

# ---- 3. the runtimes and the applications on 1..8 virtual GPUs ----
step "3. runtimes and applications on $COUNTS virtual GPUs"
part_start=$SECONDS
: >"$raw/scaling.txt"
"$ex/kmer/kmer-gen" -n "$KMER_BASES" -s 1 -o "$work/K" >/dev/null 2>&1 || fail 3 "kmer-gen failed"
"$ex/hep/hep-tth" -n "$HEP_EVENTS" --seed 1 --generate "$work/e.h5" >/dev/null 2>&1 ||
    fail 3 "hep-tth --generate failed"
mkdir -p "$work/hep-out"
declare -A cmd=(
    [prnu]="$ex/allpairs/allpairs-prnu $PRNU_ARGS --no-progress"
    [dag-nbody]="$ex/dag/dag-nbody $DAG_ARGS"
    [hep]="$ex/hep/hep-tth --input $work/e.h5 --seed 1 --no-progress --out $work/hep-out"
    [kmer]="$ex/kmer/kmer-assemble $work/K.txt"
    [gemm]="$ex/gemm $GEMM_ARGS" [nbody]="$ex/nbody $NBODY_ARGS"
    [transpose]="$ex/transpose $TRANSPOSE_ARGS" [smithwaterman]="$ex/smithwaterman $SW_ARGS")
pthreads() { local d=pthread i; for ((i = 1; i < $1; i++)); do d+=" pthread"; done; echo "$d"; }
# one TABLE APP N WAY ROUND: one run; its seconds= into raw/scaling.txt.
# TABLE shared: natively the node's one device, through VOCL N proxies of
# it; cpu: N PoCL devices natively, N proxies of one PoCL device each.
one() {
    local table=$1 app=$2 n=$3 way=$4 r=$5 pre line want=$3 threads=$THREADS_PER_DEVICE
    if ! left 5 || ((SECONDS - part_start + 3 > P3_BUDGET)); then
        echo "table=$table app=$app n=$n way=$way round=$r seconds=SKIP" >>"$raw/scaling.txt"
        return
    fi
    [ "$table" = shared ] && pre=("${main[@]}") || pre=("${cpu[@]}")
    if [ "$way" = native ]; then
        [ "$table" = shared ] && want=1
        pre+=(POCL_DEVICES="$(pthreads "$want")" POCL_MAX_PTHREAD_COUNT=$((threads * want)))
    else
        pre+=(POCL_MAX_PTHREAD_COUNT="$threads" "$vocl_run" -n "$n" -d 1 --)
    fi
    # shellcheck disable=SC2086  # the command's words
    line=$(timeout "$(tmo)" "${pre[@]}" ${cmd[$app]} 2>"$work/run.err" | grep '^RESULT ' | tail -n 1)
    if [[ $line != *" verified=yes"* || $line != *" devices=$want "* ]]; then
        tail -n 15 "$work/run.err"
        fail 3 "$app, $way, $table, $n device(s): no verified RESULT on $want device(s): '${line:-none}'"
        line="seconds=FAILED"
    fi
    echo "table=$table app=$app n=$n way=$way round=$r seconds=$(grep -oE 'seconds=[^ ]+' <<<"$line" | head -n 1 | cut -d= -f2)" |
        tee -a "$raw/scaling.txt"
}
if [ -z "$main_vendors" ]; then
    skip 3 "no OpenCL device found on this node"
else
    [ -n "$cpu_name" ] || echo "no PoCL: part 3(b) has a SKIP line"
    [ -n "$cpu_name" ] || echo "PoCL's ICD is not installed on this node" >"$raw/p3cpu.skip"
    if [ "$P3_WARMUP" = 1 ]; then
        echo "-- warm-up: each kernel compiled once, into the drivers' caches"
        for app in $P3_APPS; do
            # shellcheck disable=SC2086
            "${main[@]}" timeout "$(tmo)" ${cmd[$app]} >/dev/null 2>&1
            # (the group sizes PoCL compiles for differ with the count)
            read -ra c <<<"$COUNTS"
            for n in "${c[0]}" "${c[-1]}"; do
                [ -n "$cpu_name" ] || break
                # shellcheck disable=SC2086
                "${cpu[@]}" POCL_DEVICES="$(pthreads "$n")" POCL_MAX_PTHREAD_COUNT=$((THREADS_PER_DEVICE * n)) \
                    timeout "$(tmo)" ${cmd[$app]} >/dev/null 2>&1
            done
        done
    fi
    for ((r = 1; ; r++)); do
        next_round 3 $r || break
        round_start=$SECONDS
        ways=(native vocl)
        ((r % 2 == 0)) && ways=(vocl native)
        for app in $P3_APPS; do
            [ -n "${cmd[$app]:-}" ] || { fail 3 "unknown application '$app' in P3_APPS"; continue; }
            for w in "${ways[@]}"; do
                if [ "$w" = native ]; then one shared "$app" 1 native $r; continue; fi
                for n in $COUNTS; do one shared "$app" "$n" vocl $r; done
            done
            if [ -n "$cpu_name" ]; then
                for n in $COUNTS; do
                    for w in "${ways[@]}"; do one cpu "$app" "$n" "$w" $r; done
                done
            fi
        done
        ((r < P3_ROUNDS)) || break
    done
fi
tables 3

# ---- 4. migration and failover available but unused ----
step "4. migration and failover available but unused, paired ($P4_CONFIGS)"
part_start=$SECONDS
: >"$raw/unused.txt"
if [ -z "$cpu_name" ]; then
    skip 4 "PoCL's ICD is not installed on this node (part 4 runs on the CPU's cores)"
else
    read -ra p4ways <<<"$P4_CONFIGS"
    for ((r = 1; ; r++)); do
        next_round 4 $r || break
        round_start=$SECONDS
        order=("${p4ways[@]}")
        if ((r % 2 == 0)); then
            order=()
            for ((i = ${#p4ways[@]} - 1; i >= 0; i--)); do order+=("${p4ways[i]}"); done
        fi
        "${cpu[@]}" POCL_MAX_PTHREAD_COUNT="$THREADS_PER_DEVICE" ROUNDS=1 BUILD="$build" APPS="$P4_APPS" \
            CONFIGS="${order[*]}" timeout "$(tmo $((RUN_TIMEOUT * 8)))" "$src/docs/report/failover/run.sh" \
            2>"$work/p4.err" | sed "s/ round=1\$/ round=$r/" | tee -a "$raw/unused.txt"
        rc=${PIPESTATUS[0]}
        bad=$(grep -cvE ' rc=0 .* verified=yes ' "$raw/unused.txt")
        if ((rc != 0 || bad > 0)); then
            tail -n 15 "$work/p4.err"
            fail 4 "failover/run.sh exited $rc; $bad run(s) failed or did not verify (raw/unused.txt)"
            break
        fi
        ((r < P4_PAIRS)) || break
    done
fi
tables 4

# ---- 5. PyOpenCL ----
step "5. PyOpenCL: the scripts of tests/external/pyopencl, and the upstream suite"
part_start=$SECONDS
if ! "$PYTHON" -c 'import pyopencl, numpy' 2>/dev/null; then
    skip 5 "$PYTHON cannot import pyopencl and numpy (Debian: python3-pyopencl)"
elif [ -z "$main_vendors" ]; then
    skip 5 "no OpenCL device found on this node"
elif next_round 5 1; then
    "${main[@]}" timeout "$(tmo $((P5_BUDGET + 60)))" "$bench" --pyopencl tests/external/pyopencl --rounds "$P5_ROUNDS" \
        --python "$(command -v "$PYTHON")" --timeout "$RUN_TIMEOUT" --csv "$raw/pyopencl.csv" \
        >"$raw/pyopencl.txt" 2>&1
    rc=$?
    grep -E "all [0-9]+ scripts|FAIL" "$raw/pyopencl.txt"
    ((rc == 0)) || { tail -n 20 "$raw/pyopencl.txt"; fail 5 "vocl-bench --pyopencl exited $rc (a script failed)"; }
    # The upstream suite: natively and through one proxy, once each, if
    # half the part's share is left (the whole suite takes minutes).
    tests=/usr/share/doc/python-pyopencl-doc/examples
    if ! compgen -G "$tests/test_*.py" >/dev/null; then
        echo "no test_*.py in $tests (Debian: python-pyopencl-doc)" >"$raw/upstream.skip"
    elif ((SECONDS - part_start > P5_BUDGET / 2)) || ! left 30; then
        echo "budget: the scripts took $((SECONDS - part_start)) s of the part's $P5_BUDGET" >"$raw/upstream.skip"
    else
        cp -r "$tests" "$work/upstream"
        if [ -n "$UPSTREAM_TESTS" ]; then
            for f in "$work"/upstream/test_*.py; do
                [[ " $UPSTREAM_TESTS " == *" $(basename "$f") "* ]] || rm -f "$f"
            done
        fi
        "${main[@]}" PYOPENCL_TESTS="$work/upstream" VOCL_PYTHON="$(command -v "$PYTHON")" \
            timeout "$(tmo 600)" \
            bash tests/external/pyopencl-upstream.sh "$vocl_run" 1 1 >"$raw/upstream.txt" 2>&1
        rc=$?
        tail -n 12 "$raw/upstream.txt"
        case $rc in
            0) ;;
            77) grep -m1 SKIPPED "$raw/upstream.txt" >"$raw/upstream.skip" ;;
            *) fail 5 "the upstream suite exited $rc: a test that passes natively did not through VOCL, or it timed out" ;;
        esac
    fi
fi
tables 5

# ---- the whole ----
{
    echo "# gpu-node.sh on $(hostname) at $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null)"
    echo
    echo "Measured on: $main_name; CPU devices: ${cpu_name:-none}; $cores cores."
    [ "$smoke" = 1 ] && echo "**--smoke: tiny sizes, one round: the numbers mean little.**"
    for f in 1-bandwidth 2-latency 3-scaling 4-unused 5-pyopencl; do echo; cat "$out/$f.md"; done
} >"$out/README.md"
step "done: tables in $out"
if [ ${#failed[@]} -gt 0 ]; then
    echo "gpu-node: FAILED parts: $(printf '%s\n' "${failed[@]}" | sort -u | tr '\n' ' ')(see the FAIL lines above)"
    exit 1
fi
echo "gpu-node: every part ran and verified in $SECONDS s"
