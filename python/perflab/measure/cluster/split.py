"""A step's load divided among load agents, so that their union is the load asked for.

* **Open loop, constant arrivals**: each of ``n`` agents offers ``R/n`` and agent ``k``
  starts its schedule ``k/R`` after the shared start instant (``phase_s``): agent ``k``'s
  intended times are ``(k + i·n)/R``, so the merged arrivals are evenly spaced at
  ``1/R`` — wrk2's interleaving of threads, one level up. (The engine splits each agent's
  share over its threads the same way.)
* **Open loop, Poisson arrivals**: each agent runs an independent Poisson process of
  rate ``R/n`` (its own seed); the superposition of independent Poisson processes is a
  Poisson process with the summed rate (Kingman, *Poisson Processes*, §2.2).
* **Closed loop**: the ``N`` connections are divided as evenly as possible; an agent
  whose share is 0 sits the step out.
* **The pool cap** (``--connections`` with ``--rate``) is a total: divided the same way.
"""

from __future__ import annotations

from typing import Any

from perflab.errors import UsageError

#: The engine's default seed of Poisson arrivals (rust/engine/src/load/config.rs).
DEFAULT_SEED = 0x5EED
#: Added per agent to the seed (the 64-bit golden ratio, as SplitMix64 steps its state):
#: agents' seeds are distinct and their generators' streams unrelated.
_SEED_STEP = 0x9E3779B97F4A7C15


def shares(total: int, parts: int) -> list[int]:
    """``total`` divided into ``parts`` near-equal whole shares, largest first (sum exact).

    Raises:
        ValueError: ``parts`` < 1.
    """
    if parts < 1:
        raise ValueError("parts must be at least 1")
    return [total // parts + (k < total % parts) for k in range(parts)]


def agent_seed(seed: int | None, k: int) -> int:
    """The Poisson seed of agent ``k``: the run's seed (or the engine's default) stepped
    ``k`` times, modulo 2^64. Agent 0 keeps the run's seed."""
    return ((DEFAULT_SEED if seed is None else seed) + k * _SEED_STEP) % 2**64


def split_step(config: dict[str, Any], agents: int) -> list[dict[str, Any] | None]:
    """The engine configs of one step for ``agents`` agents (positions 0 … agents−1).

    Args:
        config: the step's whole config (``Plan.step_config``): ``mode`` "open" with
            ``rate`` (and ``arrival``, ``connections`` as the pool cap, ``seed``), or
            "closed" with ``connections``.
        agents: how many agents share the step (≥ 1).

    Returns:
        One config per agent, or None for an agent with nothing to do (closed loop with
        fewer connections than agents). Open-loop configs carry ``rate`` (req/s),
        ``phase_s`` and ``seed``.

    Raises:
        UsageError: a pool cap smaller than the number of agents.
    """
    if config["mode"] == "closed":
        return [{**config, "connections": n} if n else None
                for n in shares(int(config["connections"]), agents)]
    rate = float(config["rate"])
    cap = config.get("connections")
    if cap is not None and cap < agents:
        raise UsageError(f"--connections {cap} with --rate caps the pool of all {agents} agents "
                         f"together: give at least one connection per agent (--connections "
                         f"{agents} or more)")
    caps = shares(cap, agents) if cap is not None else [None] * agents
    constant = config.get("arrival", "constant") == "constant"
    return [{**config, "rate": rate / agents, "connections": caps[k],
             "phase_s": k / rate if constant else 0.0, "seed": agent_seed(config.get("seed"), k)}
            for k in range(agents)]
