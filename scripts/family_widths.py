"""What another split of a table's error over its pairs would buy: each pair's critical value, and the width of
the verdict's intervals, under the Bonferroni split the verdict uses (analysis/sequential.py) against Tukey's
studentized range (exact for every pair of S means with one known variance) and Holm's step-down.

Holm's step-down is a test of hypotheses: its claims here are directions (a above b), so a valid form tests the
2·P one-sided hypotheses 'a is not above b' and 'b is not above a' (P = S(S−1)/2 pairs); after r of them are
rejected, each one left is tested at α/(2P − r) on its side. The two-sided form (a pair at α/(P − r) once r pairs
are ordered) controls the error of its *directions* only under conditions the verdict's pairwise statistics
(dependent: pairs share stacks, and the round factor) are not known to meet, so it is shown for comparison.

    PYTHONPATH=src .venv/bin/python scripts/family_widths.py --stacks 20 --rounds 28 --sd 0.139

Prints, for r = half the pairs, all but S, all but 5 ordered: each procedure's normal critical value per pair and
its ratio to Bonferroni's, then the confidence sequence's and the final look's half-width at `--rounds` rounds.
"""

from __future__ import annotations

import argparse
import math

from scipy.stats import norm, studentized_range

from pgarena.analysis.sequential import DEFAULT_FAMILY_LEVEL, FINAL_SHARE, fixed_half_width, half_width, pair_count


def holm_errors(stacks: int, ordered: int, alpha: float = 1 - DEFAULT_FAMILY_LEVEL) -> tuple[float, float]:
    """The two-sided error a pair left open gets once `ordered` pairs are ordered: (Holm's one-sided form, α/(2P − r)
    on each side; its two-sided form, α/(P − r))."""
    pairs = pair_count(stacks)
    return 2 * alpha / (2 * pairs - ordered), alpha / (pairs - ordered)


def holm_critical(stacks: int, ordered: int, alpha: float = 1 - DEFAULT_FAMILY_LEVEL) -> tuple[float, float]:
    """`holm_errors` as normal critical values."""
    one_sided, two_sided = holm_errors(stacks, ordered, alpha)
    return norm.isf(one_sided / 2), norm.isf(two_sided / 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stacks", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=28)
    parser.add_argument("--sd", type=float, default=0.139, help="per-window log-sd after the probe")
    args = parser.parse_args(argv)
    alpha, pairs = 1 - DEFAULT_FAMILY_LEVEL, pair_count(args.stacks)
    bonferroni = norm.isf(alpha / (2 * pairs))
    tukey = studentized_range.ppf(1 - alpha, args.stacks, 1e4) / math.sqrt(2)
    print(f"{args.stacks} stacks, {pairs} pairs, family level {DEFAULT_FAMILY_LEVEL:.0%}")
    print(f"  Bonferroni (the verdict's): z {bonferroni:.3f}")
    print(f"  Tukey's studentized range:  z {tukey:.3f} ({tukey / bonferroni:.3f} of Bonferroni's)")
    variance = 2 * args.sd ** 2
    for ordered in (pairs // 2, pairs - args.stacks, pairs - 5):
        one_sided, two_sided = holm_critical(args.stacks, ordered, alpha)
        print(f"  Holm with {ordered} pairs ordered: one-sided form z {one_sided:.3f} "
              f"({one_sided / bonferroni:.3f}); two-sided form z {two_sided:.3f} ({two_sided / bonferroni:.3f})")
        holm = holm_errors(args.stacks, ordered, alpha)[0]
        race = [half_width(args.rounds, variance, (1 - FINAL_SHARE) * a) for a in (alpha / pairs, holm)]
        final = [fixed_half_width(args.rounds, variance, FINAL_SHARE * a) for a in (alpha / pairs, holm)]
        print(f"    at {args.rounds} rounds, log-sd {args.sd}: confidence sequence ±{race[0]:.4f} → ±{race[1]:.4f} "
              f"({race[1] / race[0]:.3f}), final look ±{final[0]:.4f} → ±{final[1]:.4f} ({final[1] / final[0]:.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
