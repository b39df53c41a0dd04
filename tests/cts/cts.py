#!/usr/bin/env python3
"""cts.py - the Khronos OpenCL conformance suite (OpenCL-CTS), natively and
through VOCL, sub-test by sub-test.

    cts.py VOCL_RUN PROXIES DEVICES [SUITE...]
    cts.py --daemon VOCLPROXYD LIBVOCL [SUITE...]

Takes built CTS binaries from the folder $VOCL_CTS_DIR names (searched to
any depth for test_* executables; without it the test is skipped, exit 77).
Runs each sub-test of each suite in a process of its own with a limit
($VOCL_CTS_LIMIT seconds, 300 by default), natively on PROXIES x DEVICES
PoCL devices and under `VOCL_RUN -n PROXIES -d DEVICES`, and fails when a
sub-test that passes natively does not pass through VOCL, printing each
such difference with the last lines of its log.  SVM's sub-tests that
VOCL skips are allowed (VOCL forwards no SVM: cl_api.def, unsup).  With
--daemon, one daemon (VOCLPROXYD --listen on loopback, one PoCL device,
a worker for each client) serves every sub-test, run under
LD_PRELOAD=LIBVOCL; it must outlive them all.

SUITE names are the CTS's folders (api, buffers, images/clGetInfo, ...);
none: tier A of issue 61; `beyond`: the suites past it, in their quick
modes (BEYOND).  $VOCL_CTS_SUITES overrides them (spaces
between), $VOCL_CTS_ONLY keeps only the sub-tests it names (a regular
expression), and $VOCL_CTS_KEEP names a folder for every log.  Never
builds the CTS: that is the user's (docs/report/cts/).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# Folder -> binary, and the sub-tests left out (too slow here: issue 61).
SUITES = {
    'computeinfo': 'test_computeinfo',
    'api': 'test_api',
    'buffers': 'test_buffers',
    'events': 'test_events',
    'profiling': 'test_profiling',
    'mem_host_flags': 'test_mem_host_flags',
    'compiler': 'test_compiler',
    'multiple_device_context': 'test_multiples',
    'device_partition': 'test_device_partition',
    'printf': 'test_printf',
    'atomics': 'test_atomics',
    'SVM': 'test_svm',
    'images/clGetInfo': 'test_cl_get_info',
    'basic': 'test_basic',
}
TIER_A = list(SUITES)
# Past tier A (the full setup's cts-beyond), in their quick modes: the
# harness's -w (wimpy: fewer values, in every suite that reads it) and the
# image suites' small_images (widths 1-13, heights 1-9).
BEYOND = {
    'allocations': 'test_allocations',
    'thread_dimensions': 'test_thread_dimensions',
    'vectors': 'test_vectors',
    'c11_atomics': 'test_c11_atomics',
    'non_uniform_work_group': 'test_non_uniform_work_group',
    'subgroups': 'test_subgroups',
    'select': 'test_select',
    'relationals': 'test_relationals',
    'commonfns': 'test_commonfns',
    'geometrics': 'test_geometrics',
    'integer_ops': 'test_integer_ops',
    'images/kernel_read_write': 'test_image_streams',
    'images/clCopyImage': 'test_cl_copy_images',
    'images/clFillImage': 'test_cl_fill_images',
    'images/clReadWriteImage': 'test_cl_read_write_images',
    'conversions': 'test_conversions',
    'math_brute_force': 'test_bruteforce',
}
SUITES.update(BEYOND)
ARGS = dict({s: ['-w'] for s in BEYOND},
            **{s: ['-w', 'small_images'] for s in BEYOND if s.startswith('images/')})
# Run as a whole binary: conversions lists one sub-test, its own name, and
# given that name its harness skips every conversion ("Unable to parse
# function name") and passes.
WHOLE = {'conversions'}
LEFT_OUT = {
    'basic': re.compile(r'^(astype|async_.*|prefetch|imagedim_.*|hiloeo|explicit_s2v)$'),
}
# VOCL forwards no SVM: these suites' sub-tests may skip through it.
SKIP_ALLOWED = {'SVM'}


def say(*a):
    print(*a, flush=True)


def find_binaries(root):
    found = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            if f.startswith('test_') and os.access(p, os.X_OK) and f not in found:
                found[f] = p
    return found


def subtests(binary, env):
    """The sub-test names the harness lists (--list, or --help's 'Test
    names:'); [] when none."""
    for opt in ('--list', '--help'):
        try:
            out = subprocess.run([binary, opt], env=env, capture_output=True, text=True,
                                 timeout=60).stdout
        except (subprocess.TimeoutExpired, OSError):
            continue
        names, listing = [], opt == '--list'
        for line in out.splitlines():
            if re.match(r'^\s*Test names', line):
                listing = True
                continue
            if listing:
                m = re.match(r'^\s+(\S+)\s*$', line)
                if m:
                    names.append(m.group(1))
                elif names:
                    break
        if names:
            return names
    return []


def verdict(rc, out, timed_out):
    """pass, fail, skip, crash or hang: the harness's exit, and its line
    for the one sub-test run (PASSED / FAILED / SKIPPED sub-test.)."""
    if timed_out:
        return 'hang'
    if rc < 0 or rc > 128:
        return 'crash'
    if re.search(r'^SKIPPED sub-test', out, re.M) or (
            rc == 0 and re.search(r'^\S+ skipped\s*$', out, re.M) and
            not re.search(r'^PASSED sub-test', out, re.M)):
        return 'skip'
    if rc == 0 and not re.search(r'^FAILED', out, re.M):
        return 'pass'
    return 'fail'


def run_one(cmd, env, limit, log):
    t0 = time.monotonic()
    with open(log, 'w') as f:
        p = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT,
                             start_new_session=True)
        timed_out = False
        try:
            rc = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(p.pid, signal.SIGKILL)  # (its session: mpiexec and the proxies too)
            rc = p.wait()
    with open(log, errors='replace') as f:
        out = f.read()
    return verdict(rc, out, timed_out), time.monotonic() - t0, out


def start_cost(vocl, vocl_env, native_env, runs=9):
    """What a process pays to start through VOCL (a job and its proxies,
    or a daemon's connection) above starting natively: the median wall of
    `clinfo -l` through VOCL less its native median, in seconds; None
    without clinfo."""
    clinfo = shutil.which('clinfo')
    if not clinfo:
        return None
    def median(cmd, env):
        t = []
        for _ in range(runs):
            t0 = time.monotonic()
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t.append(time.monotonic() - t0)
        return sorted(t)[runs // 2]
    return max(0.0, median(vocl + [clinfo, '-l'], vocl_env) - median([clinfo, '-l'], native_env))


def tail(text, n=15):
    return '\n'.join('      ' + l for l in text.splitlines()[-n:])


def start_daemon(proxyd, tmp):
    """voclproxyd --listen on loopback with one PoCL device, its token in
    tmp: (the process, the environment its clients need)."""
    port, token = os.path.join(tmp, 'daemon.port'), os.path.join(tmp, 'token')
    log = open(os.path.join(tmp, 'daemon.log'), 'w')
    # Loopback only, the daemon's lanes and its clients' (UCX would add
    # every interface's address).
    env = dict(os.environ, POCL_DEVICES='pthread', VOCL_TOKEN_FILE=token, UCX_NET_DEVICES='lo')
    p = subprocess.Popen([proxyd, '--listen', '--address', '127.0.0.1', '--port', '0',
                          '--port-file', port], env=env, stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)
    for _ in range(600):
        if os.path.exists(port) or p.poll() is not None:
            break
        time.sleep(0.05)
    if not os.path.exists(port):
        sys.exit('cts.py: the daemon did not start: %s' % tail(open(log.name).read()))
    return p, {'VOCL_PROXIES': port, 'VOCL_TOKEN_FILE': token, 'UCX_NET_DEVICES': 'lo'}


def main():
    daemon = len(sys.argv) >= 4 and sys.argv[1] == '--daemon'
    if len(sys.argv) < 4:
        sys.exit('usage: cts.py VOCL_RUN PROXIES DEVICES [SUITE...]\n'
                 '       cts.py --daemon VOCLPROXYD LIBVOCL [SUITE...]')
    if daemon:
        proxyd, lib = os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
        proxies = devices = 1
    else:
        vocl_run, proxies, devices = (os.path.abspath(sys.argv[1]), int(sys.argv[2]),
                                      int(sys.argv[3]))
    root = os.environ.get('VOCL_CTS_DIR', '')
    if not root:
        msg = ('SKIPPED, NOT RUN: VOCL_CTS_DIR names no folder of built OpenCL-CTS binaries '
               '(docs/report/cts/ says how to build them, outside the repository)')
        say(msg)
        print(msg, file=sys.stderr)
        sys.exit(77)
    if not os.path.isdir(root):
        sys.exit('cts.py: VOCL_CTS_DIR=%s is not a folder' % root)
    suites = os.environ.get('VOCL_CTS_SUITES', '').split() or sys.argv[4:] or TIER_A
    if suites == ['beyond']:
        suites = list(BEYOND)
    limit = float(os.environ.get('VOCL_CTS_LIMIT', '300'))
    only = re.compile(os.environ['VOCL_CTS_ONLY']) if os.environ.get('VOCL_CTS_ONLY') else None
    keep = os.environ.get('VOCL_CTS_KEEP')
    root = os.path.abspath(root)
    bins = find_binaries(root)
    tmp = os.path.abspath(keep) if keep else tempfile.mkdtemp(prefix='vocl-cts-')
    os.makedirs(tmp, exist_ok=True)

    ndev = proxies * devices
    native_env = dict(os.environ, POCL_DEVICES=' '.join(['pthread'] * ndev))
    if os.path.exists('/etc/OpenCL/vendors/pocl.icd'):
        native_env['OCL_ICD_VENDORS'] = '/etc/OpenCL/vendors/pocl.icd'
    vocl_env = dict(os.environ)
    if daemon:
        server, reach = start_daemon(proxyd, tmp)
        vocl_env.update(reach, LD_PRELOAD=lib)
        vocl_env.pop('VOCL_APP_RANKS', None)
        vocl, mode = [], 'daemon'
    else:
        vocl, mode = [vocl_run, '-n', str(proxies), '-d', str(devices), '--'], '%dx%d' % (
            proxies, devices)

    diffs, allowed, missing = [], [], []
    rows = []  # suite, counts native, counts vocl, wall native, wall vocl
    start = start_cost(vocl, vocl_env, native_env)
    if start is not None:
        say('starting a process through VOCL (%s) costs %.0f ms above natively (clinfo -l, '
            'medians of 9)' % (mode, start * 1000))
    for suite in suites:
        name = SUITES.get(suite, 'test_' + os.path.basename(suite))
        binary = bins.get(name)
        if not binary:
            missing.append(suite)
            continue
        names = subtests(binary, native_env) if suite not in WHOLE else []
        if not names:
            names = [None]  # the whole binary as one
        cwd = os.path.dirname(binary)  # (some suites read files beside them)
        counts = {'native': {}, 'vocl': {}}
        wall = {'native': 0.0, 'vocl': 0.0, 'n': 0}
        for sub in names:
            if sub and suite in LEFT_OUT and LEFT_OUT[suite].match(sub):
                continue
            if sub and only and not only.search(sub):
                continue
            args = [binary] + ([sub] if sub else []) + ARGS.get(suite, [])
            label = '%s/%s' % (suite, sub or '*')
            base = os.path.join(tmp, re.sub(r'[^A-Za-z0-9_.-]', '_', label))
            os.chdir(cwd)
            nv, nt, _ = run_one(args, native_env, limit, base + '.native.log')
            vv, vt, vout = run_one(vocl + args, vocl_env, limit, base + '.vocl-%s.log' % mode)
            counts['native'][nv] = counts['native'].get(nv, 0) + 1
            counts['vocl'][vv] = counts['vocl'].get(vv, 0) + 1
            if nv != 'hang':  # (as the issue counts: sub-tests that finish natively)
                wall['native'] += nt
                wall['vocl'] += vt
                wall['n'] += 1
            say('%-60s native %-5s %6.1f s   vocl %-5s %6.1f s' % (label, nv, nt, vv, vt))
            if nv == 'pass' and vv != 'pass':
                if vv == 'skip' and suite in SKIP_ALLOWED:
                    allowed.append(label)
                else:
                    diffs.append((label, vv, vout))
        rows.append((suite, counts, wall))

    say('')
    # The last column takes each sub-test's start through VOCL off its
    # wall: what the calls themselves cost, where the sub-tests are short.
    say('%-26s %-34s %-34s %-28s %s' % ('suite (%s)' % mode, 'native', 'vocl', 'wall vocl/native',
                                        'less the starts'))
    for suite, counts, wall in rows:
        fmt = lambda c: ' '.join('%s %d' % (k, c[k]) for k in sorted(c))
        ratio = wall['vocl'] / wall['native'] if wall['native'] else 0
        less = ('%.2fx' % ((wall['vocl'] - wall['n'] * start) / wall['native'])
                if start is not None and wall['native'] else '-')
        say('%-26s %-34s %-34s %-28s %s' % (suite, fmt(counts['native']), fmt(counts['vocl']),
                                            '%.1f/%.1f s = %.2fx' % (wall['vocl'], wall['native'],
                                                                     ratio), less))
    if missing:
        say('not found in %s (not run): %s' % (root, ' '.join(missing)))
    if allowed:
        say('allowed (SVM, which VOCL does not forward, skips): %s' % ' '.join(allowed))
    for label, vv, vout in diffs:
        say('DIFFERENCE %s: passes natively, %s through VOCL; the last lines of its log:' %
            (label, vv))
        say(tail(vout))
    died = False
    if daemon:
        died = server.poll() is not None
        if died:
            say('THE DAEMON DIED (exit %s); the end of its log:' % server.returncode)
            say(tail(open(os.path.join(tmp, 'daemon.log'), errors='replace').read()))
        else:
            server.terminate()
            server.wait()
    if not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    if died:
        sys.exit(1)
    if diffs:
        say('%d sub-test(s) pass natively and not through VOCL (%s)' % (len(diffs), mode))
        sys.exit(1)
    if not rows:
        sys.exit('cts.py: none of the suites was found in %s' % root)
    say('every sub-test that passes natively passes through VOCL (%s)' % mode)


if __name__ == '__main__':
    main()
