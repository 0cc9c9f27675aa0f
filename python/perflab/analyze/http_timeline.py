"""Reading a step's timeline: the capacity estimate of a ramp (where the achieved rate
stops tracking the offered one, and what it levels off at).

Method: an interval *tracks* its offered rate when its achieved rate (OK responses
completed in it ÷ its length) is at least a share of the offered rate
(:data:`perflab.analyze.http.ACHIEVED_SHARE`, passed in): the rule that makes a held step
``saturated``, applied per interval. The knee is the first recorded interval that does
not track, nor does the next one (one slow second is not a knee).

The estimate is the quantity a stepped sweep's capacity estimates (the heaviest ok
step): the highest rate the server serves in full, its capacity C. A held step below C
is ok, one above it leaves a backlog and is saturated, so the sweep reads C from below,
to one step of its grid. A ramp crosses C before its knee (an interval offered up to C
÷ the share still tracks), so at the knee the server is already serving all it can:
the capacity estimate is the median achieved rate of the :data:`SUSTAIN` intervals
from the knee on (fewer when the step ends sooner), the rate the server delivered as
it first fell behind. Both estimators take the server's *first* fall, as the sweep's
rule does (once a step is saturated every heavier one is): not the best moment of the
ramp, whose top can be a catch-up burst (a slow interval's responses completing in the
next one) or a lull in the machine's other load. The offered rate of the last tracking
interval (the highest load served in full, a lower bound at the ramp's resolution) and
the median achieved rate of every interval past the knee (the plateau, below the
estimate when the growing backlog, ever more connections and timeouts, dragged the
server down) are given beside it. Without a knee the capacity is at least the highest
offered rate that tracked.
"""

from __future__ import annotations

from dataclasses import dataclass

from perflab.model import HttpStep

#: Intervals from the knee on whose median achieved rate is the capacity estimate.
SUSTAIN = 3


@dataclass
class RampCapacity:
    """The capacity read off one shaped step's timeline.

    Attributes:
        estimate_rate: the capacity estimate, requests/s (the median achieved rate of the
            :data:`SUSTAIN` intervals from the knee on, or the highest tracked offered
            rate when there is no knee).
        tracked_rate: offered rate of the last interval before the knee that tracked,
            requests/s (None when none did).
        plateau_rate: median achieved rate of the intervals after the knee, requests/s
            (None without a knee): below the estimate when the backlog dragged the server
            down.
        knee_t_s: start of the knee interval, s after the step's start (None: no knee).
        at_least: True when no knee was reached: the capacity is higher.
        p99_before_us / p99_after_us: median p99 latency of the intervals before / after
            the knee, µs (None when there are none): the rise the knee brings.
    """

    estimate_rate: float
    tracked_rate: float | None
    plateau_rate: float | None
    knee_t_s: float | None
    at_least: bool
    p99_before_us: float | None
    p99_after_us: float | None


def _median(values: list[float | None]) -> float | None:
    import statistics  # here: a ramp's analysis only, not every run's start-up

    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def ramp_capacity(step: HttpStep, share: float) -> RampCapacity | None:
    """The capacity estimate of a shaped open-loop step from its timeline.

    Args:
        step: a step with a ``timeline`` and an offered rate per interval.
        share: an interval tracks when achieved ≥ share × offered (0 < share ≤ 1).

    Returns:
        The estimate, or None when the step has no timeline, is not a ramp, or has no full
        interval in its recorded window.
    """
    tl = step.timeline
    if tl is None or not step.shape or step.shape.get("kind") != "ramp" or not len(tl):
        return None
    rows = [
        j
        for j in range(len(tl))
        if tl.t_s[j] >= step.warmup_s - 1e-9
        and tl.t_s[j] + tl.interval_s <= step.duration_s + 1e-9
        and tl.offered_rate[j]
    ]
    if not rows:
        return None
    achieved = tl.achieved_rate()
    tracks = [achieved[j] >= share * float(tl.offered_rate[j] or 0) for j in rows]
    knee = next(
        (i for i in range(len(rows)) if not tracks[i] and not all(tracks[i + 1 : i + 2])),
        None,
    )
    before = rows if knee is None else rows[:knee]
    tracked = [float(tl.offered_rate[j] or 0) for j, t in zip(before, tracks) if t]
    tracked_rate = tracked[-1] if tracked else None
    if knee is None:
        return RampCapacity(
            estimate_rate=max(tracked) if tracked else 0.0,
            tracked_rate=tracked_rate,
            plateau_rate=None,
            knee_t_s=None,
            at_least=True,
            p99_before_us=_median([tl.p99_us[j] for j in before]),
            p99_after_us=None,
        )
    after = rows[knee:]
    import statistics

    plateau = statistics.median(achieved[j] for j in after)
    at_knee = statistics.median(achieved[j] for j in after[:SUSTAIN])
    return RampCapacity(
        estimate_rate=at_knee,
        tracked_rate=tracked_rate,
        plateau_rate=plateau,
        knee_t_s=tl.t_s[rows[knee]],
        at_least=False,
        p99_before_us=_median([tl.p99_us[j] for j in before]),
        p99_after_us=_median([tl.p99_us[j] for j in after]),
    )
