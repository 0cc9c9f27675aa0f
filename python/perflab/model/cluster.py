"""The results model of a distributed ``perflab http`` run (``--agents N``): who the load
agents were and how their clocks compared with the controller's (:class:`AgentInfo`, one
per agent in ``Results.agents``), and each agent's own part of every step
(:class:`AgentShare`, in ``HttpStep.agents``) kept beside the merged step.

Raw data only, like :mod:`perflab.model`; the method behind each figure is in
:mod:`perflab.engines.http.cluster`. Times are integer nanoseconds or float seconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

#: doctor's checks about clocks: an agent failing one of them is flagged.
CLOCK_CHECKS = (
    "clocksource",
    "backward_steps",
    "clock_steps",
    "rate_vs_tsc",
    "slewing",
    "suspend",
    "longest_gap",
    "sleep",
)


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


@dataclass
class AgentInfo:
    """One load agent of a distributed run, as the controller saw it at the start.

    Attributes:
        index: the agent's number (0-based), as the table names it ("agent 1").
        host: the agent's host name; address: its node's IP address (Ray's node address).
        node: the Ray node id the agent ran on.
        pid: the agent's process id.
        perflab_version: the agent's perflab (refused at start unless the controller's).
        cores: CPUs the agent's process may run on.
        same_clock: True when the agent shares the controller's kernel (same host and
            boot id), hence its realtime clock: the offset used is then exactly 0.
        offset_ns: the agent's realtime clock minus the controller's, ns: the estimate of
            the round-trip sample with the smallest round trip (NTP's clock filter).
        offset_uncertainty_ns: half that round trip, ns: the true offset lies within
            ``offset_ns ± offset_uncertainty_ns`` whatever the paths' asymmetry.
        round_trip_ns: that smallest round trip, ns.
        clock_checks: doctor's clock checks on the agent that were not ok, by name:
            "fail: …" or "warn: …".
        clock_flagged: why the agent's clocks are not trusted (a failed clock check), or
            None.
        lost_at_step: index of the step the agent died in (None: it lasted the run).
        error: what happened to it, in words, or None.
        weight: its weight in the split of every step: its share of a step is its
            weight ÷ the live agents' total (1 each with ``--split even``; the user's
            with ``--split W1,W2,…``; its capacity with ``--split capacity``).
        capacity_rps: with ``--split capacity``, the requests/s its engine can send by
            CPU (a loopback probe at start-up), else None.
    """

    index: int
    host: str
    address: str = ""
    node: str = ""
    pid: int = 0
    perflab_version: str = ""
    cores: int = 1
    same_clock: bool = False
    offset_ns: int = 0
    offset_uncertainty_ns: int = 0
    round_trip_ns: int = 0
    clock_checks: dict[str, str] = field(default_factory=dict)
    clock_flagged: str | None = None
    lost_at_step: int | None = None
    error: str | None = None
    weight: float = 1.0
    capacity_rps: float | None = None

    @property
    def label(self) -> str:
        """ "agent 1 (host)" (1-based, as printed)."""
        return f"agent {self.index + 1} ({self.host})"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentInfo:
        """Build from the JSON form (unknown keys ignored). Raises TypeError when malformed."""
        return cls(**_known(cls, data))


@dataclass
class AgentShare:
    """One agent's part of one step of a distributed run.

    Attributes:
        agent: the agent's index (see :class:`AgentInfo`).
        offset_ns / offset_uncertainty_ns: its clock offset measured just before this
            step (see :class:`AgentInfo`), used to place the step's shared start instant on
            its clock; None when not measured.
        start_lead_s: how long before the shared start instant the agent was asked to run
            the step, s; negative when it got the request too late and its first requests
            went out late (NaN: unknown).
        process_cpu_s: the agent process's CPU time over the step (user + system, every
            thread: the engine's, Ray's and Python's), s; NaN when unknown.
        lost: the agent died during the step: its data is missing (``step`` is None) and
            the merged step holds the other agents' data only.
        error: what happened, in words, or None.
        step: the agent's own measurements (an :class:`perflab.model.HttpStep`, its
            histograms included), or None when lost.
    """

    agent: int
    offset_ns: int | None = None
    offset_uncertainty_ns: int | None = None
    start_lead_s: float = math.nan
    process_cpu_s: float = math.nan
    lost: bool = False
    error: str | None = None
    step: Any = None

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], step_from_dict: Callable[[dict[str, Any]], Any]
    ) -> AgentShare:
        """Build from the JSON form; ``step_from_dict`` builds the agent's step.

        Raises:
            TypeError, KeyError: malformed data.
        """
        share = cls(**_known(cls, data))
        share.step = step_from_dict(data["step"]) if isinstance(data.get("step"), dict) else None
        for name in ("start_lead_s", "process_cpu_s"):  # NaN is written as null
            if getattr(share, name) is None:
                setattr(share, name, math.nan)
        return share
