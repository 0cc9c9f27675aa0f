"""A step's load divided among load agents, so that their union is the load asked for.

Each agent has a weight: equal by default, or its measured capacity (``--split
capacity``), or the user's (``--split 3,1``). Weights are turned into whole parts of
:data:`PARTS` (largest remainders; at least one each), so that shares are exact.

* **Open loop, constant arrivals**: the step's schedule is evenly spaced at ``1/R``
  (request ``n`` due at ``n/R``); it is cut into periods of ``P`` requests (the sum of
  the agents' parts, reduced) and agent ``k`` sends the requests whose ``n mod P`` is
  one of its ``p_k`` *slots*, so it offers ``R·p_k/P`` and the merged arrivals are the
  evenly spaced schedule itself, each request sent by exactly one agent — wrk2's
  interleaving of threads, one level up. The slots of each agent are spread over the
  period (each part's slots at the midpoints of its ``p_k`` equal sub-intervals, in
  order: stride scheduling, Waldspurger & Weihl 1995), so no agent sends in bursts.
  With even weights, agent ``k`` of ``N`` holds slot ``k`` of ``N``: its requests are
  due at ``(k + i·N)/R``.
* **Open loop, Poisson arrivals**: each agent runs an independent Poisson process of
  rate ``R·w_k`` (its own seed); the superposition of independent Poisson processes is
  a Poisson process with the summed rate (Kingman, *Poisson Processes*, §2.2).
* **Load shapes** (a ramp or a sine, Poisson arrivals only): agent ``k`` follows the
  shape scaled by ``w_k/Σw`` (its rates at every instant), an inhomogeneous Poisson
  process; their superposition is the whole shape's (the same theorem, for intensity
  functions). Evenly spaced arrivals of a shape are not split: the engine's lanes
  interleave a fixed rate's schedule only.
* **Closed loop**: the ``N`` connections are divided by weight into whole shares
  (largest remainders); an agent whose share is 0 sits the step out.
* **The pool cap** (``--connections`` with ``--rate``) is a total: one connection per
  agent, the rest divided the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perflab.errors import UsageError

#: The engine's default seed of Poisson arrivals (rust/engine/src/load/config.rs).
DEFAULT_SEED = 0x5EED
#: Added per agent to the seed (the 64-bit golden ratio, as SplitMix64 steps its state):
#: agents' seeds are distinct and their generators' streams unrelated.
_SEED_STEP = 0x9E3779B97F4A7C15
#: Whole parts that weights are rounded to (shares are exact to 1/PARTS of the load;
#: more when there are more agents than a tenth of this).
PARTS = 1000


def weighted_shares(total: int, weights: Sequence[float], floor: int = 0) -> list[int]:
    """``total`` divided into whole shares in proportion to ``weights`` (sum exact):
    ``floor`` each first, the rest by largest remainders (Hamilton's method; ties to the
    lower index).

    Args:
        total: what to divide (≥ ``floor × len(weights)``).
        weights: one positive, finite weight per share.
        floor: the least share of each.

    Raises:
        ValueError: no weights, a weight that is not positive and finite, or a total
            below ``floor × len(weights)``.
    """
    if not weights or not all(math.isfinite(w) and w > 0 for w in weights):
        raise ValueError(f"weights must be positive finite numbers, got {list(weights)}")
    rest = total - floor * len(weights)
    if rest < 0:
        raise ValueError(f"{total} cannot give {floor} to each of {len(weights)}")
    exact = [rest * w / sum(weights) for w in weights]
    parts = [math.floor(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda k: (parts[k] - exact[k], k))
    for k in by_remainder[: rest - sum(parts)]:
        parts[k] += 1
    return [floor + p for p in parts]


def shares(total: int, parts: int) -> list[int]:
    """``total`` divided into ``parts`` near-equal whole shares, largest first (sum exact).

    Raises:
        ValueError: ``parts`` < 1.
    """
    if parts < 1:
        raise ValueError("parts must be at least 1")
    return weighted_shares(total, [1.0] * parts)


def lanes(weights: Sequence[float]) -> tuple[int, list[list[int]]]:
    """The slot period and each agent's slots (module docstring: the method).

    Args:
        weights: one positive weight per agent.

    Returns:
        (period P, slots): ``slots[k]`` is agent ``k``'s strictly increasing slot numbers
        in ``[0, P)``; every slot belongs to exactly one agent; agent ``k`` holds about
        ``w_k/Σw`` of them (exactly its whole part of :data:`PARTS`, reduced).

    Raises:
        ValueError: see :func:`weighted_shares`.
    """
    n = len(weights)
    parts = [1] * n if len(set(weights)) == 1 else weighted_shares(max(PARTS, 10 * n), weights)
    if 0 in parts:  # a tiny weight still gets a slot
        parts = weighted_shares(max(PARTS, 10 * n), weights, floor=1)
    common = math.gcd(*parts)
    parts = [p // common for p in parts]
    period = sum(parts)
    # each part's slots at the midpoints of its equal sub-intervals of the period, taken
    # in time order (ties to the lower agent): stride scheduling's even spread
    order = sorted(((2 * i + 1) / (2 * p), k) for k, p in enumerate(parts) for i in range(p))
    slots: list[list[int]] = [[] for _ in range(n)]
    for slot, (_, k) in enumerate(order):
        slots[k].append(slot)
    return period, slots


def agent_seed(seed: int | None, k: int) -> int:
    """The Poisson seed of agent ``k``: the run's seed (or the engine's default) stepped
    ``k`` times, modulo 2^64. Agent 0 keeps the run's seed."""
    return ((DEFAULT_SEED if seed is None else seed) + k * _SEED_STEP) % 2**64


#: The rate fields of each load shape: scaled by an agent's share, summed by a merge.
SHAPE_RATES = {"ramp": ("from", "to"), "sine": ("mean", "amplitude")}


def scale_shape(shape: dict[str, Any], share: float) -> dict[str, Any]:
    """``shape`` (a ramp or a sine, ``perflab.engines.http.shapes``) with its rates
    multiplied by ``share`` (0 < share ≤ 1); its times are kept."""
    return {
        **shape,
        **{key: float(shape[key]) * share for key in SHAPE_RATES.get(shape.get("kind"), ())},
    }


def split_step(
    config: dict[str, Any], agents: int, weights: Sequence[float] | None = None
) -> list[dict[str, Any] | None]:
    """The engine configs of one step for ``agents`` agents (positions 0 … agents−1).

    Args:
        config: the step's whole config (``Plan.step_config``): ``mode`` "open" with
            ``rate`` or ``shape`` (and ``arrival``, ``connections`` as the pool cap,
            ``seed``), or "closed" with ``connections``.
        agents: how many agents share the step (≥ 1).
        weights: one positive weight per agent (None: even).

    Returns:
        One config per agent, or None for an agent with nothing to do (closed loop with
        fewer connections than agents). Open-loop configs carry ``rate`` (req/s), or
        their share of the ``shape`` (:func:`scale_shape`), and ``seed``; with constant arrivals also ``slots`` and ``slot_period`` (the engine's
        lanes of the shared schedule).

    Raises:
        UsageError: a pool cap smaller than the number of agents, or a shape with
            evenly spaced arrivals.
        ValueError: weights not one positive number per agent.
    """
    weights = list(weights) if weights is not None else [1.0] * agents
    if len(weights) != agents:
        raise ValueError(f"{len(weights)} weights for {agents} agents")
    if config["mode"] == "closed":
        return [
            {**config, "connections": n} if n else None
            for n in weighted_shares(int(config["connections"]), weights)
        ]
    cap = config.get("connections")
    if cap is not None and cap < agents:
        raise UsageError(
            f"--connections {cap} with --rate caps the pool of all {agents} agents "
            f"together: give at least one connection per agent (--connections "
            f"{agents} or more)"
        )
    caps = weighted_shares(cap, weights, floor=1) if cap is not None else [None] * agents
    seeds = [agent_seed(config.get("seed"), k) for k in range(agents)]
    if config.get("shape"):
        if config.get("arrival", "constant") == "constant":
            raise UsageError(
                "a load shape on --agents needs --poisson: evenly spaced arrivals of a "
                "shape are not split across agents"
            )
        return [
            {
                **config,
                "shape": scale_shape(config["shape"], w / sum(weights)),
                "connections": caps[k],
                "seed": seeds[k],
            }
            for k, w in enumerate(weights)
        ]
    rate = float(config["rate"])
    if config.get("arrival", "constant") != "constant":
        return [
            {**config, "rate": rate * w / sum(weights), "connections": caps[k], "seed": seeds[k]}
            for k, w in enumerate(weights)
        ]
    period, slots = lanes(weights)
    return [
        {
            **config,
            "rate": rate * len(slots[k]) / period,
            "connections": caps[k],
            "slots": slots[k],
            "slot_period": period,
            "seed": seeds[k],
        }
        for k in range(agents)
    ]
