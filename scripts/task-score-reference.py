#!/usr/bin/env python3
"""Reference values for the task scores (src/eval/task_score.h), written independently
of the C++ code from the definitions sacrebleu 2.x uses by default:

  BLEU-4: corpus BLEU on the '13a' tokenization (mteval-v13a), brevity penalty
          exp(1 - r/c) when c < r, 'exp' smoothing of zero-count n-gram orders
          (the k-th zero order counts 1 / (2^k * total)), 0 when no n-gram matches.
  chrF:   character n-grams of order 1..6 with whitespace removed, statistics summed
          over the corpus, precision and recall averaged over the orders both sides
          have, F-beta with beta 2; both scores on a 0-100 scale.
  exact match: the share of pairs equal after stripping surrounding whitespace.

Usage: scripts/task-score-reference.py tests/data/task_score/pairs.jsonl > tests/data/task_score/expected.json
Each pairs line is {"corpus", "hypothesis", "reference"}; the output has one entry per
corpus and one for "all" (every pair in file order).
"""
import json
import math
import re
import sys
from collections import Counter

PUNCT = re.compile(r'([\{-\~\[-\` -\&\(-\+\:-\@\/])')
PERIOD_COMMA_AFTER_NON_DIGIT = re.compile(r'([^0-9])([\.,])')
PERIOD_COMMA_BEFORE_NON_DIGIT = re.compile(r'([\.,])([^0-9])')
DASH_AFTER_DIGIT = re.compile(r'([0-9])(-)')


def tokenize_13a(line):
    line = line.replace('<skipped>', '').replace('-\n', '').replace('\n', ' ')
    if '&' in line:
        line = line.replace('&quot;', '"').replace('&amp;', '&').replace('&lt;', '<').replace('&gt;', '>')
    line = ' ' + line + ' '
    line = PUNCT.sub(r' \1 ', line)
    line = PERIOD_COMMA_AFTER_NON_DIGIT.sub(r'\1 \2 ', line)
    line = PERIOD_COMMA_BEFORE_NON_DIGIT.sub(r' \1 \2', line)
    line = DASH_AFTER_DIGIT.sub(r'\1 \2 ', line)
    return line.split()


def ngrams(tokens, n):
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def corpus_bleu(pairs):
    sys_len = ref_len = 0
    correct = [0] * 4
    total = [0] * 4
    for hyp, ref in pairs:
        h = tokenize_13a(hyp.rstrip())
        r = tokenize_13a(ref.rstrip())
        sys_len += len(h)
        ref_len += len(r)
        for n in range(1, 5):
            hn, rn = ngrams(h, n), ngrams(r, n)
            total[n - 1] += sum(hn.values())
            correct[n - 1] += sum(min(c, rn[g]) for g, c in hn.items())
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    else:
        bp = 1.0
    precisions = [0.0] * 4
    if not any(correct):
        return dict(bleu=0.0, bp=bp, sys_len=sys_len, ref_len=ref_len, precisions=precisions)
    smooth = 1.0
    for n in range(4):
        if total[n] == 0:
            break
        if correct[n] == 0:
            smooth *= 2
            precisions[n] = 100.0 / (smooth * total[n])
        else:
            precisions[n] = 100.0 * correct[n] / total[n]
    log_sum = sum(math.log(p) if p > 0 else -9999999999 for p in precisions)
    return dict(bleu=bp * math.exp(log_sum / 4), bp=bp, sys_len=sys_len, ref_len=ref_len, precisions=precisions)


def char_ngrams(text, n):
    s = ''.join(text.split())
    return Counter(s[i:i + n] for i in range(len(s) - n + 1))


def corpus_chrf(pairs, order=6, beta=2.0):
    stats = [[0, 0, 0] for _ in range(order)]
    for hyp, ref in pairs:
        for n in range(1, order + 1):
            hn, rn = char_ngrams(hyp, n), char_ngrams(ref, n)
            stats[n - 1][0] += sum(hn.values())
            stats[n - 1][1] += sum(rn.values())
            stats[n - 1][2] += sum(min(c, rn[g]) for g, c in hn.items())
    prec = rec = 0.0
    effective = 0
    for n_hyp, n_ref, n_match in stats:
        if n_hyp > 0 and n_ref > 0:
            prec += n_match / n_hyp
            rec += n_match / n_ref
            effective += 1
    if effective == 0:
        return 0.0
    prec /= effective
    rec /= effective
    if prec + rec == 0:
        return 0.0
    f = beta * beta
    return 100.0 * (1 + f) * prec * rec / (f * prec + rec)


def exact_match(pairs):
    return sum(1 for h, r in pairs if h.strip() == r.strip()) / len(pairs)


def main():
    corpora = {}
    everything = []
    with open(sys.argv[1], encoding='utf-8') as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                pair = (row['hypothesis'], row['reference'])
                corpora.setdefault(row['corpus'], []).append(pair)
                everything.append(pair)
    corpora['all'] = everything
    out = {}
    for name, pairs in corpora.items():
        entry = corpus_bleu(pairs)
        entry['chrf'] = corpus_chrf(pairs)
        entry['exact_match'] = exact_match(pairs)
        entry['pairs'] = len(pairs)
        out[name] = entry
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
