#!/usr/bin/env python3
"""The tables of experiments/tune/README.md from a run's JSON lines (autoeval_tune records).

  experiments/tune/table.py results/tune [more run directories, e.g. of other rank counts]

Per setting (label, ranks), all cases and the held-out third apart (experiments/auto/heldout.txt):
how often tuning's winner is the fastest of the candidates it measured (in the same run's
rounds), the worst winner / fastest, whether the best backend was among the candidates, the
A/A pair's worst ratio, and the solve: tuned / best single backend (<= 1.03 is the goal), with
what tuning spent (measuring exchanges, the candidates' set-ups). Then every case where the
winner is not the fastest candidate, and the per-matrix table of the largest rank count.
"""
import json
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))


def heldout():
    names = set()
    with open(os.path.join(here, '..', 'auto', 'heldout.txt')) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith('#'):
                names.add(line)
    return names


def load(path):
    recs = []
    if not os.path.exists(path):
        return recs
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get('bench') == 'autoeval_tune':
                recs.append(r)
    return recs


def us(s):
    return '%.1f' % (s * 1e6)


def summary(rows, held):
    print('| setting | cases | winner = fastest candidate | worst winner/fastest | best backend among candidates '
          '| winner within 5% of best | worst winner/best | A/A worst | solve <= 1.03 | worst solve '
          '| measuring exchanges (median) | auto\'s set-up + tuning - best\'s set-up, / solve (median, max) |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|')
    keys = sorted({(r['label'], r['ranks']) for r in rows})
    for label, ranks in keys:
        for part, sel in (('all', lambda r: True), ('held out', lambda r: r['matrix'] in held)):
            rs = [r for r in rows if r['label'] == label and r['ranks'] == ranks and sel(r)]
            if not rs:
                continue
            fast = sum(1 for r in rs if r['winner'] and r['winner_to_fastest'] <= 1.0)
            among = sum(1 for r in rs if r['best'] in r.get('tuning_median_s', {}))
            aa = max(max(r['aa_ratio'], 1 / r['aa_ratio']) for r in rs) if all('aa_ratio' in r for r in rs) else None
            solves = [r['solve']['tuned_s'] / r['solve']['best_s'] for r in rs if 'solve' in r]
            # What tuning adds before the winner runs alone: auto's own set-up (the model's choice)
            # and the tuning phase (candidates' builds, measuring exchanges), less the best's set-up.
            cost = [(r['solve']['tuned_setup_s'] + r['solve']['tuning_s'] - r['solve']['best_setup_s'])
                    / r['solve']['tuned_s'] for r in rs if 'solve' in r]
            setup_share = cost
            within5 = sum(1 for r in rs if r['winner'] and r['winner_to_best'] <= 1.05)
            print('| %s %d ranks, %s | %d | %d | %.3f | %d | %d | %.3f | %s | %s | %s | %.0f | %s |' % (
                label, ranks, part, len(rs), fast, max(r['winner_to_fastest'] for r in rs), among, within5,
                max(r['winner_to_best'] for r in rs), '-' if aa is None else '%.4f' % aa,
                '%d of %d' % (sum(1 for q in solves if q <= 1.03), len(solves)) if solves else '-',
                '%.3f' % max(solves) if solves else '-',
                statistics.median(r['measuring_exchanges'] for r in rs),
                '%.1f%%, %.1f%%' % (100 * statistics.median(setup_share), 100 * max(setup_share)) if setup_share else '-'))


def fixed_cost(rows):
    """Where the winner is the best backend, the solve's extra time is tuning's fixed cost (auto's
    set-up, the candidates' builds, the measuring exchanges): in exchanges of the best backend, and
    the solve length at which it would be 3%."""
    print('\nTuning\'s fixed cost where the winner is the best backend (solve tuned - best, in exchanges of the best; '
          'the solve length N at which it is 3% = cost / 0.03):')
    for label, ranks in sorted({(r['label'], r['ranks']) for r in rows}):
        ks = sorted((r['solve']['tuned_s'] - r['solve']['best_s']) / r['measured_s'][r['best']]
                    for r in rows if r['label'] == label and r['ranks'] == ranks and 'solve' in r
                    and r['winner'] == r['best'])
        if ks:
            print('- %s %d ranks, %d cases: median %.0f exchanges (N = %.0f), min %.0f, max %.0f (N = %.0f)' % (
                label, ranks, len(ks), statistics.median(ks), statistics.median(ks) / 0.03, ks[0], ks[-1],
                ks[-1] / 0.03))


def floor(rows):
    """Tuning's floor: the smallest median it measured in a setting; against it, how much the
    candidates' timing adds to their time in the rounds (tuning median - rounds), for every
    candidate measured, split by a rounds time under and over 20 us."""
    print('\nTuning\'s timing against the rounds (its medians: each round\'s slowest rank, one exchange per sample):')
    for label, ranks in sorted({(r['label'], r['ranks']) for r in rows}):
        rs = [r for r in rows if r['label'] == label and r['ranks'] == ranks]
        meds = [(b, t, r['measured_s'][b]) for r in rs for b, t in r.get('tuning_median_s', {}).items()]
        if not meds:
            continue
        small = [t - m for b, t, m in meds if m < 20e-6]
        large = [t - m for b, t, m in meds if m >= 20e-6]
        print('- %s %d ranks: smallest tuning median %s us; tuning - rounds, candidates under 20 us: median %s us '
              '(%d), from 20 us: median %s us (%d)' % (
                  label, ranks, us(min(t for b, t, m in meds)), us(statistics.median(small)) if small else '-',
                  len(small), us(statistics.median(large)) if large else '-', len(large)))


def misses(rows):
    out = [r for r in rows if not r['winner'] or r['winner_to_fastest'] > 1.0]
    print('\nCases where the winner is not the fastest candidate in the rounds: %d' % len(out))
    for r in out:
        med = r.get('tuning_median_s', {})
        print('- %s %d ranks %s: winner %s (tuning median %s us, rounds %s us) against %s (tuning %s us, rounds %s us): %.3f' % (
            r['label'], r['ranks'], r['matrix'], r['winner'], us(med.get(r['winner'], 0)),
            us(r['measured_s'][r['winner']]), r['fastest_candidate'], us(med.get(r['fastest_candidate'], 0)),
            us(r['measured_s'][r['fastest_candidate']]), r['winner_to_fastest']))


def detail(rows, held, label, ranks):
    rs = sorted((r for r in rows if r['label'] == label and r['ranks'] == ranks), key=lambda r: r['matrix'].lower())
    if not rs:
        return
    backends = sorted({b for r in rs for b in r['measured_s']})
    print('\n%s, %d ranks: every backend\'s exchange (us, rounds); * = a candidate tuning measured; '
          'solve = %d exchanges from set-up; solve, set-ups and tuning in ms' % (label, ranks, rs[0].get('solve', {}).get('exchanges', 0)))
    print('| matrix | ' + ' | '.join(backends) + ' | winner | w/fastest | w/best | A/A | solve tuned / best | ratio '
          '| set-up auto / best | tuning (measuring) | losers\' set-ups |')
    print('|---|' + '---|' * (len(backends) + 8))
    for r in rs:
        cells = []
        for b in backends:
            t = r['measured_s'].get(b)
            cells.append('-' if t is None else us(t) + ('*' if b in r.get('tuning_median_s', {}) else ''))
        sv = r.get('solve')
        print('| %s%s | %s | %s | %.3f | %.3f | %s | %s | %s | %s | %s | %.2f |' % (
            r['matrix'].replace('.mtx', ''), ' (h)' if r['matrix'] in held else '', ' | '.join(cells), r['winner'],
            r['winner_to_fastest'], r['winner_to_best'], '%.4f' % r['aa_ratio'] if 'aa_ratio' in r else '-',
            '%.2f / %.2f' % (sv['tuned_s'] * 1e3, sv['best_s'] * 1e3) if sv else '-',
            '%.3f' % (sv['tuned_s'] / sv['best_s']) if sv else '-',
            '%.2f / %.2f' % (sv['tuned_setup_s'] * 1e3, sv['best_setup_s'] * 1e3) if sv else '-',
            '%.2f (%.0f)' % (sv['tuning_s'] * 1e3, r['measuring_exchanges']) if sv else '-',
            r['extra_setup_s'] * 1e3))


def main():
    if any(a in ('-h', '--help') for a in sys.argv[1:]):
        print(__doc__)
        return
    dirs = sys.argv[1:] or ['results/tune']
    held = heldout()
    rows = [r for d in dirs for r in load(os.path.join(d, 'tune.jsonl'))]
    percore = [r for d in dirs for r in load(os.path.join(d, 'percore.jsonl'))]
    if not rows and not percore:
        sys.exit('table.py: no autoeval_tune records in %s' % ' '.join(dirs))
    summary(rows + percore, held)
    if not percore:
        print('| percore 2 ranks (Open MPI, one per core) | not yet measured | | | | | | | | | | |')
    fixed_cost(rows + percore)
    floor(rows + percore)
    misses(rows + percore)
    for label, ranks in sorted({(r['label'], r['ranks']) for r in rows + percore}):
        detail(rows + percore, held, label, ranks)


if __name__ == '__main__':
    main()
