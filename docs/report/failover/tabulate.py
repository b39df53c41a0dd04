#!/usr/bin/env python3
"""tabulate.py RUNS: the medians of run.sh's lines, per application and
configuration, and their ratios to the run without failover."""
import statistics
import sys

runs = {}
for line in open(sys.argv[1]):
    f = dict(kv.split('=', 1) for kv in line.split() if '=' in kv)
    if f.get('rc') != '0' or f.get('verified') != 'yes':
        print('not counted (failed):', line.strip())
        continue
    runs.setdefault((f['app'], f['config']), []).append(f)

apps = sorted({a for a, _ in runs})
print('| application | no failover | no failover, VOCL_SHM=0 | --failover | ratio | '
      '--failover, a proxy killed | ratio | entries replayed |')
print('|---|---|---|---|---|---|---|---|')
for a in apps:
    med = {c: statistics.median(float(r['seconds']) for r in runs.get((a, c), []))
           for c in ('plain', 'shm0', 'failover', 'killed') if runs.get((a, c))}
    rep = [int(r['replayed']) for r in runs.get((a, 'killed'), []) if r['replayed'] != '-']
    n = len(runs.get((a, 'plain'), []))
    cell = lambda c: '%.2f s' % med[c] if c in med else '-'
    ratio = lambda c: '%.2fx' % (med[c] / med['plain']) if c in med and 'plain' in med else '-'
    print('| %s (%d runs) | %s | %s | %s | %s | %s | %s | %s |' % (
        a, n, cell('plain'), cell('shm0'), cell('failover'), ratio('failover'),
        cell('killed'), ratio('killed'),
        '%d-%d' % (min(rep), max(rep)) if rep else '-'))
