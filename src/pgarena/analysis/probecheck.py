"""Does the speed probe read the machine, or the stack beside it? The test the speed correction must pass.

The verdict corrects each window's ln(2xx/s) by β·z, z = ln(the probe's unit time in that window)
(`sequential.fit_table`). That correction moves a stack's paired estimate by −β·(its mean z − the others'), so
it is unbiased only if the probe reads the same, on average, beside every stack: a covariate must not depend
on the treatment (the analysis of covariance's condition). The probe shares the server CPU with the measured
stack — its caches, and the interrupts that land while its unit runs and are charged to it (this kernel has
no separate IRQ time accounting) — so a stack could shift the probe's readings by itself, and the correction
would then carry that shift into the stack's ratio. Copies of one stack (an A/A run) cannot show such a bias;
this test can.

The test: the F test of the stack effects in the same two-way layout the verdict fits, z[s,r] = κ_s + ρ_r + e
against z[s,r] = ρ_r + e (the stack effects' extra sum of squares over S − 1 degrees of freedom, against the
two-way residual mean square). When it rejects at `PROBE_DEPENDENCE_LEVEL`, the table is judged without the
correction (wider intervals, no bias) and the report says why. With an independent probe the test rejects by
chance in that share of tables, which costs only their correction.

Its limit: it sees a dependence as large as the probe's own scatter over the rounds, not a smaller one, which could
still move a corrected ratio by about as much. So the verdict estimates the shifts' variance from the same test
(`shift_variance`) and charges each pair's interval for it (`shift_estimates`). Measured on real tables of
different stacks (`scripts/noise_budget.py results/<run-id>` prints the test per table; docs/methodology.md "The
probe must read the machine, not the stack"):
kappa-1, six stacks from 431 to 6,191 2xx/s, F 1.02 on 5 and 19 degrees of freedom, p 0.43.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from pgarena.analysis.additive import PerRound

PROBE_DEPENDENCE_LEVEL = 0.01
"""A table whose probe readings differ by stack at this significance level gets no speed correction."""


@dataclass(frozen=True)
class ProbeCheck:
    """The F test of the stack effects on the probe's log readings (module docstring)."""

    f: float
    df_stacks: int
    df_residual: int
    p: float
    apart: tuple[tuple[str, float], ...] = ()
    """The stacks beside which the probe read fastest and slowest: (stack, its effect on ln reading, relative to
    the stacks' mean effect), lowest first — where a dependence comes from."""

    @property
    def dependent(self) -> bool:
        """The probe's readings depend on the stack at `PROBE_DEPENDENCE_LEVEL`."""
        return self.p < PROBE_DEPENDENCE_LEVEL

    def sentence(self) -> str:
        """'F 1.16 on 5 and 19 df, p 0.36'."""
        return f"F {self.f:.2f} on {self.df_stacks} and {self.df_residual} df, p {self.p:.2g}"

    def where(self) -> str:
        """'fastest beside a (−8.5 %), slowest beside b (+8.6 %)': the extremes of `apart`, as the probe's unit
        time relative to its mean over the stacks ('' without them)."""
        if len(self.apart) < 2:
            return ""
        (low, low_effect), (high, high_effect) = self.apart[0], self.apart[-1]
        return (f"fastest beside {low} ({math.expm1(low_effect):+.1%}), "
                f"slowest beside {high} ({math.expm1(high_effect):+.1%})")


def round_only_rss(z: PerRound) -> float:
    """Residual sum of squares of z[s,r] = ρ_r + e: each value minus the mean of its round."""
    rounds = max((len(v) for v in z.values()), default=0)
    rss = 0.0
    for r in range(rounds):
        column = [v[r] for v in z.values() if r < len(v) and v[r] is not None]
        if column:
            mean = math.fsum(column) / len(column)  # type: ignore[arg-type]
            rss += math.fsum((x - mean) ** 2 for x in column)  # type: ignore[operator]
    return rss


def stack_dependence(z: PerRound, two_way_rss: float, two_way_df: int,
                     stack_effects: Mapping[str, float]) -> ProbeCheck | None:
    """The F test of the stack effects on `z` (stack → the probe's log reading per round, None: no window),
    given the two-way fit's stack effects, residual sum of squares and degrees of freedom. None: fewer than two
    stacks, no residual degrees of freedom, or no residual variance to test against."""
    stacks = sum(1 for v in z.values() if any(x is not None for x in v))
    if stacks < 2 or two_way_df < 1 or two_way_rss <= 0:
        return None
    df_stacks = stacks - 1
    extra = max(0.0, round_only_rss(z) - two_way_rss)
    f = (extra / df_stacks) / (two_way_rss / two_way_df)
    from scipy.stats import f as f_distribution  # NOTE: here, not at the top: scipy.stats is slow to import

    effects = {st: e for st, e in stack_effects.items() if any(x is not None for x in z.get(st, ()))}
    centre = math.fsum(effects.values()) / len(effects)
    ranked = sorted(effects.items(), key=lambda item: item[1])
    apart = tuple((stack, effect - centre) for stack, effect in (ranked[0], ranked[-1]))
    return ProbeCheck(f=f, df_stacks=df_stacks, df_residual=two_way_df, p=float(f_distribution.sf(f, df_stacks, two_way_df)),
                      apart=apart)


def shift_variance(check: ProbeCheck | None, residual_variance: float, z: PerRound) -> float:
    """τ̂²: the variance of the probe's true shifts by stack, beyond what its readings' own noise makes its stack
    effects scatter (the moment estimate of a random stack effect: (F − 1) · σ̂² / the windows per stack, 0 when
    F ≤ 1). A shift below what the check can see still moves a corrected ratio by β times the two stacks'
    shifts (`shift_estimates`; tests/unit/test_verdict_simulation.py)."""
    if check is None:
        return 0.0
    stacks = sum(1 for v in z.values() if any(x is not None for x in v))
    windows = sum(1 for v in z.values() for x in v if x is not None)
    return max(0.0, check.f - 1.0) * residual_variance / (windows / stacks)


def charge_relative_se(check: ProbeCheck | None) -> float:
    """The standard error of τ̂² (`shift_variance`) over τ̂² itself. The moment estimate's numerator, the mean square
    of the probe's stack effects, has `df_stacks` degrees of freedom, so its relative error is √(2 / df_stacks); τ̂²,
    its excess over the noise's share, carries that error as √(2 / df_stacks) · F / (F − 1): about 2 for four
    identical copies at a chance F of 2. Infinite where F ≤ 1 (τ̂² is 0) or there is no check."""
    if check is None or check.f <= 1 or check.df_stacks < 1:
        return math.inf
    return math.sqrt(2 / check.df_stacks) * check.f / (check.f - 1)


SHIFT_ESTIMATE = "charge"
"""How `shift_estimates` guesses each stack's shift: one of `SHIFT_ESTIMATES` (read at each call, so a script can
compare them: scripts/probe_shift_sim.py --shifts)."""
SHIFT_ESTIMATES = ("charge", "shrink", "james-stein", "morris")


def shift_estimates(tau2: float, residual_variance: float, z: PerRound,
                    effects: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """stack → (its guessed shift, the guess's error variance): what the correction leaves out of each stack's probe
    effect as the stack's own shift, and the variance of the shift it still carries (a corrected estimate is off by
    β times that error). The probe's effect beside stack s, relative to the stacks' mean, is its shift plus the
    machine's mean speed over its n_s windows (variance v_s = σ̂²/n_s). `SHIFT_ESTIMATE` chooses:

    - "charge": no guess; the whole effect is corrected and the error is the shift itself, variance τ̂²;
    - "shrink": the empirical-Bayes guess, the share τ̂²/(τ̂² + v_s) of the effect, error variance that share × v_s
      (τ̂² taken as known);
    - "james-stein": the share 1 − (k − 3)/((k − 1)·F_s), F_s = (τ̂² + v_s)/v_s, of the effect for k stacks (none
      below four), error variance that share × v_s: James and Stein's shrinkage, which allows for τ̂² being
      estimated from k − 1 degrees of freedom;
    - "morris": that share with B = (k − 3)/(k − 1) · v_s/(v_s + τ̂²) shrunk, and Morris's variance of the guess,
      v_s(1 − (k − 1)/k · B) + 2/(k − 3) · B²(y_s − ȳ)², y_s − ȳ the stack's effect ("Parametric empirical Bayes
      inference: theory and applications", JASA 78(381), 1983).

    Simulated in docs/methodology.md ("The probe must read the machine, not the stack"): "shrink" claims false
    orders in up to 5.9 % of tables of 4–6 stacks; "james-stein" and "morris" keep the level but order no more than
    "charge"."""
    counts = {s: sum(1 for x in z.get(s, ()) if x is not None) for s in effects}
    counts = {s: n for s, n in counts.items() if n}
    if not counts:
        return {}
    if SHIFT_ESTIMATE == "charge":
        return {s: (0.0, tau2) for s in counts}
    k = len(counts)
    centre = math.fsum(effects[s] for s in counts) / k
    out = {}
    for stack, n in counts.items():
        v, apart = residual_variance / n, effects[stack] - centre
        if SHIFT_ESTIMATE == "morris":
            b = (k - 3) / (k - 1) * v / (v + tau2) if k > 3 else 0.0
            spread = 2 / (k - 3) * (b * apart) ** 2 if k > 3 else 0.0
            out[stack] = ((1 - b) * apart, v * (1 - (k - 1) / k * b) + spread)
            continue
        if SHIFT_ESTIMATE == "shrink":
            share = tau2 / (tau2 + v)
        else:
            share = max(0.0, 1 - (k - 3) / ((k - 1) * (tau2 + v) / v)) if k > 3 else 1.0
        out[stack] = (share * apart, share * v)
    return out
