#!/usr/bin/env bash
# piglit.sh - runs piglit's OpenCL profile natively and under VOCL, and lists
# the tests that pass natively but not under VOCL.
#
#   piglit.sh [OPTIONS] VOCL_RUN
#
# See --help.  Exit status: 0 no regression, 1 regressions, 2 a usage or
# set-up error (including a VOCL run that did not go through libvocl),
# 77 piglit is not installed (meson's "skip").
set -euo pipefail

usage() {
    cat <<'USAGE'
Usage: piglit.sh [OPTIONS] VOCL_RUN
Run piglit's OpenCL profile ("cl") twice: natively on PoCL, and with every
test process run through VOCL_RUN (its own MPI job: libvocl preloaded and
the proxies), then compare the results.

Prints the counts of each run, then every test that passes natively and does
not under VOCL (with its VOCL result and the command that reproduces it).
Exits 1 iff there is such a test.

  -t, --include REGEX     run only tests matching REGEX (piglit run -t; repeatable)
  -x, --exclude REGEX     skip tests matching REGEX (piglit run -x; repeatable)
  -q, --quick             a quick subset: -t '^api@'
      --vocl-opts "OPTS"  vocl-run options (default "-n 2 --devices-per-proxy 1")
      --native-devices "D"  POCL_DEVICES of the native run (default "pthread pthread")
      --timeout SECONDS   per-test timeout (default: piglit's own, 60 s for CL)
  -o, --out DIR           keep results and logs in DIR (default: a temporary
                          directory, removed at exit)
      --native-results DIR  reuse the results of an earlier native run
                          (a piglit results directory) instead of running it
      --vocl-results DIR  likewise for the VOCL run (compare only)
      --only native|vocl  run one side only and print its counts
      --piglit-dir DIR    the piglit installation
                          (default /usr/lib/x86_64-linux-gnu/piglit)
  -h, --help              this help

Environment: PIGLIT_INCLUDE / PIGLIT_EXCLUDE (a regex each, as -t / -x),
PIGLIT (the piglit command, default "piglit").

How the wrapping works: piglit finds its test binaries in
$PIGLIT_BUILD_DIR/bin.  The VOCL run points PIGLIT_BUILD_DIR at a shadow tree
whose tests/ and generated_tests/ are links to the installation and whose
bin/ holds, for each cl-* binary, a script that execs
"VOCL_RUN OPTS -- /real/bin/cl-X ARGS".  Before the run one wrapper is checked
to report platform "VOCL"; after it, no VOCL result may name PoCL's platform.
USAGE
}

die() { echo "piglit.sh: $*" >&2; exit 2; }
need_arg() { [ $# -ge 2 ] || die "option $1 needs a value"; }

includes=() excludes=()
[ -n "${PIGLIT_INCLUDE:-}" ] && includes+=("$PIGLIT_INCLUDE")
[ -n "${PIGLIT_EXCLUDE:-}" ] && excludes+=("$PIGLIT_EXCLUDE")
vocl_opts="-n 2 --devices-per-proxy 1"
native_devices="pthread pthread"
timeout="" out="" native_results="" vocl_results="" only=""
piglit_dir=/usr/lib/x86_64-linux-gnu/piglit
piglit=${PIGLIT:-piglit}
vocl_run=""
while [ $# -gt 0 ]; do
    case "$1" in
        -t|--include) need_arg "$@"; includes+=("$2"); shift 2 ;;
        -x|--exclude) need_arg "$@"; excludes+=("$2"); shift 2 ;;
        -q|--quick) includes+=('^api@'); shift ;;
        --vocl-opts) need_arg "$@"; vocl_opts=$2; shift 2 ;;
        --native-devices) need_arg "$@"; native_devices=$2; shift 2 ;;
        --timeout) need_arg "$@"; timeout=$2; shift 2 ;;
        -o|--out) need_arg "$@"; out=$2; shift 2 ;;
        --native-results) need_arg "$@"; native_results=$2; shift 2 ;;
        --vocl-results) need_arg "$@"; vocl_results=$2; shift 2 ;;
        --only) need_arg "$@"; only=$2; shift 2 ;;
        --piglit-dir) need_arg "$@"; piglit_dir=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) [ -z "$vocl_run" ] || die "one VOCL_RUN only ('$1')"; vocl_run=$1; shift ;;
    esac
done
case "$only" in ""|native|vocl) ;; *) die "--only takes native or vocl" ;; esac
read -ra vocl_argv <<<"$vocl_opts"
if [ "$only" != native ] && [ -z "$vocl_results" ]; then
    [ -n "$vocl_run" ] || { usage >&2; die "no VOCL_RUN given"; }
    [ -x "$vocl_run" ] || die "$vocl_run is not executable"
fi
[ -z "$vocl_run" ] || vocl_run=$(realpath "$vocl_run")
[ -z "$timeout" ] || [[ "$timeout" =~ ^[0-9]+$ ]] || die "--timeout needs seconds"
if ! command -v "$piglit" >/dev/null || [ ! -d "$piglit_dir/bin" ]; then
    echo "piglit.sh: piglit is not installed (apt-get install piglit): skipped"; exit 77
fi
command -v python3 >/dev/null || die "python3 is needed to read the results"

if [ -n "$out" ]; then
    mkdir -p "$out"; work=$(realpath "$out")
else
    work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fi

# MPICH on one node, as in the integration tests; hwloc's OpenCL plugin
# stays out of MPI_Init.
export HYDRA_LAUNCHER=${HYDRA_LAUNCHER:-fork}
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS:--opencl}

run_args=(-o -l dummy)
for r in "${includes[@]}"; do run_args+=(-t "$r"); done
for r in "${excludes[@]}"; do run_args+=(-x "$r"); done
[ -n "$timeout" ] && run_args+=(--timeout "$timeout")

# Runs piglit's cl profile into $1 (a results directory) with the build dir
# $2; the remaining arguments are environment assignments.
run_piglit() {
    local res=$1 root=$2 start end
    shift 2
    start=$(date +%s)
    env "$@" PIGLIT_BUILD_DIR="$root" \
        "$piglit" run "${run_args[@]}" cl "$res" >"$res.log" 2>&1 ||
        { echo "piglit run failed, see $res.log:"; tail -20 "$res.log"; exit 2; }
    end=$(date +%s)
    echo "$((end - start))" >"$res.seconds"
}

# The pids (sorted) of test binaries and of this vocl-run's voclproxyd still
# running.
stray_pids() {
    local proxyd
    proxyd=$("$vocl_run" --dry-run "${vocl_argv[@]}" -- true |
        awk '{ for (i = 1; i <= NF; i++) if ($i ~ /voclproxyd$/) print $i }')
    { pgrep -f -- "$piglit_dir/bin/cl-" || true; pgrep -f -- "^$proxyd" || true; } | sort
}

# The shadow tree of the VOCL run.
make_shadow() {
    local shadow=$work/shadow b name
    rm -rf "$shadow"; mkdir -p "$shadow/bin"
    ln -s "$piglit_dir/tests" "$shadow/tests"
    ln -s "$piglit_dir/generated_tests" "$shadow/generated_tests"
    for b in "$piglit_dir"/bin/cl-*; do
        [ -x "$b" ] || continue
        name=${b##*/}
        {
            echo '#!/bin/sh'
            echo "# piglit.sh: $name through vocl-run"
            printf 'exec %q' "$vocl_run"; printf ' %q' "${vocl_argv[@]}"
            printf ' -- %q "$@"\n' "$b"
        } >"$shadow/bin/$name"
        chmod +x "$shadow/bin/$name"
    done
    echo "$shadow"
}

native_res=$work/native vocl_res=$work/vocl
if [ -n "$native_results" ]; then
    native_res=$(realpath "$native_results")
elif [ "$only" != vocl ]; then
    echo "== native run (POCL_DEVICES=\"$native_devices\") -> $native_res"
    run_piglit "$native_res" "$piglit_dir" POCL_DEVICES="$native_devices"
    echo "   $(cat "$native_res.seconds") s"
fi
if [ -n "$vocl_results" ]; then
    vocl_res=$(realpath "$vocl_results")
elif [ "$only" != native ]; then
    shadow=$(make_shadow)
    # Honesty check: a wrapper must reach libvocl.
    probe=$("$shadow/bin/cl-api-get-platform-info" 2>&1) || true
    grep -q '^CL_PLATFORM_NAME: VOCL$' <<<"$probe" || {
        echo "piglit.sh: the wrapper does not run under libvocl:"; echo "$probe"; exit 2; }
    echo "== VOCL run ($vocl_run $vocl_opts) -> $vocl_res"
    before=$(stray_pids)
    run_piglit "$vocl_res" "$shadow"
    echo "   $(cat "$vocl_res.seconds") s"
    # A test killed at its timeout must not leave its MPI job behind.
    left=$(comm -13 <(echo "$before") <(stray_pids) | tr '\n' ' ')
    [ -z "${left// }" ] || echo "piglit.sh: warning: processes left over by the VOCL run: $left"
fi

sides=()
[ "$only" = vocl ] || sides+=("$native_res")
[ "$only" = native ] || sides+=("$vocl_res")
set +e
PIGLIT_SIDE=${only:-both} python3 - "$piglit_dir" "$work" "$vocl_run" "$vocl_opts" "$native_devices" "${sides[@]}" <<'PY'
import bz2, gzip, json, lzma, os, re, sys

piglit_dir, work, vocl_run, vocl_opts, native_devices = sys.argv[1:6]
paths = sys.argv[6:]
labels = ['native', 'VOCL'] if len(paths) == 2 else [os.environ['PIGLIT_SIDE']]

def load(d):
    for name, opener in (('results.json', open), ('results.json.bz2', bz2.open),
                         ('results.json.gz', gzip.open), ('results.json.xz', lzma.open)):
        p = os.path.join(d, name)
        if os.path.exists(p):
            with opener(p, 'rt') as f:
                return json.load(f)['tests']
    sys.exit('piglit.sh: no results.json* in %s' % d)

ORDER = ['pass', 'warn', 'fail', 'crash', 'timeout', 'skip', 'incomplete', 'notrun',
         'dmesg-warn', 'dmesg-fail']

def counts(tests):
    c = {}
    for t in tests.values():
        c[t['result']] = c.get(t['result'], 0) + 1
    keys = [k for k in ORDER if k in c] + sorted(k for k in c if k not in ORDER)
    return '%d tests: ' % len(tests) + ', '.join('%s %d' % (k, c[k]) for k in keys)

def real_command(cmd):
    """The test's command with the shadow tree replaced by the installation."""
    return ' '.join(re.sub(r'^/.*/shadow/(bin|tests|generated_tests)/', piglit_dir + r'/\1/', c)
                    for c in cmd)

def first_error(t):
    """The first line of a result that says what went wrong, if any."""
    lines = t.get('err', '').splitlines() + t.get('out', '').splitlines()
    for marks in (('libvocl:', 'voclproxyd:'), ('Unexpected CL error', 'Failed', 'failed',
                                                 'rror', 'Segmentation', 'Abort')):
        for l in lines:
            if any(m in l for m in marks):
                return l.strip()[:200]
    if t['result'] in ('crash', 'timeout'):
        return 'returncode %s%s' % (t.get('returncode'), ', ' + t['exception'].strip()
                                    if t.get('exception') else '')
    return ''

runs = [(p, load(p)) for p in paths]
for label, (p, tests) in zip(labels, runs):
    print('%-7s %s' % (label + ':', counts(tests)))

if len(runs) == 1:
    sys.exit(0)
(_, native), (_, vocl) = runs

# Honesty: a VOCL result that names PoCL's platform did not go through libvocl.
leaks = [n for n, t in vocl.items() if 'Platform: Portable Computing Language' in t.get('out', '')]
seen = sum('Platform: VOCL' in t.get('out', '') for t in vocl.values())
print('VOCL results naming platform VOCL: %d, naming PoCL: %d' % (seen, len(leaks)))
if leaks:
    print('piglit.sh: these VOCL results ran natively:', *leaks[:10], sep='\n  ')
    sys.exit(2)

lost = sorted(n for n, t in native.items()
              if t['result'] == 'pass' and vocl.get(n, {}).get('result') != 'pass')
gained = sorted(n for n, t in vocl.items()
                if t['result'] == 'pass' and native.get(n, {}).get('result') != 'pass')
with open(os.path.join(work, 'regressions.txt'), 'w') as f:
    for n in lost:
        t = vocl.get(n)
        f.write('%s\t%s\t%s\n' % (n, t['result'] if t else 'missing',
                                  real_command(t['command'].split()) if t else ''))
print('passing natively, not under VOCL: %d' % len(lost))
for n in lost:
    t = vocl.get(n)
    if t is None:
        print('  %-10s %s' % ('missing', n))
        continue
    print('  %-10s %s' % (t['result'], n))
    print('             %s %s -- %s' % (vocl_run, vocl_opts, real_command(t['command'].split())))
    why = first_error(t)
    if why:
        print('             %s' % why)
if gained:
    print('passing under VOCL, not natively: %d' % len(gained))
    for n in gained:
        print('  %-10s %s' % (native.get(n, {}).get('result', 'missing'), n))
sys.exit(1 if lost else 0)
PY
rc=$?
set -e
[ -z "$out" ] || echo "results kept in $work"
exit "$rc"
