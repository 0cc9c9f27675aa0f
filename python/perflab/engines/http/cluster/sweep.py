"""A sweep run by load agents, step by step: one shared start instant per step, every
agent's part collected and merged, faults and Ctrl-C handled, live progress merged.

Per step: the controller re-measures each agent's clock offset (a few round trips, so
drift over a long sweep does not matter), picks a start instant :data:`START_LEAD_S`
ahead (plus twice the slowest round trip) on its own clock, and hands every agent its
share with that instant converted to the agent's clock. An agent that dies (its process
killed, its node lost) or does not answer by the step's deadline is marked lost: the
step keeps the other agents' data, merged, and the sweep goes on with the agents left
(or stops, with ``--fail-fast``). A Ctrl-C stops every agent at once (each looks at its
stop flag every 100 ms and returns the step's accounting) and the sweep ends with what
was measured.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

from perflab.engines.http.cluster import clocks
from perflab.engines.http.cluster.controller import Agent, Cluster, options_from_args, short_error
from perflab.engines.http.cluster.merge import merge_snapshots, merge_steps
from perflab.engines.http.cluster.split import split_step
from perflab.engines.http.engine import Plan, ProgressFn, SweepOutcome
from perflab.engines.http.steps import step_from_raw
from perflab.model.cluster import AgentInfo, AgentShare

#: How far ahead of the controller's clock a step's start instant is set, s: the time
#: to hand every agent its share (Ray calls take about a millisecond; a loaded machine
#: can delay one by a tenth of a second).
START_LEAD_S = 0.25
#: After a Ctrl-C, how long to wait for the agents' accounting, s (they stop within
#: about 0.1 s).
STOP_WAIT_S = 2.0
#: Slack past a step's planned end (duration + --timeout) before a silent agent counts
#: as lost, s.
DEADLINE_SLACK_S = 15.0
#: How often live progress is gathered from the agents, s.
PROGRESS_EVERY_S = 0.25


def run_sweep(
    cluster: Cluster,
    plan: Plan,
    progress: ProgressFn | None = None,
    on_step: Callable[[SweepOutcome], None] | None = None,
) -> SweepOutcome:
    """Run every step of ``plan`` on the cluster's agents.

    Args:
        cluster: an entered :class:`Cluster` (agents started and checked).
        plan: what to run; each step's load is split with :func:`split_step`.
        progress: called about every 0.25 s with (step, steps, merged snapshot): the
            merged achieved rate and p99 so far and the slowest agent.
        on_step: called after each step with the outcome so far (to save it).

    Returns:
        The outcome: merged steps, each with its agents' shares; ``agents_lost`` says which
        agents died and whether the sweep stopped for it.
    """
    outcome = SweepOutcome()
    try:
        for index in range(plan.steps):
            live = [a for a in cluster.agents if a.alive]
            if not live:
                break
            if index and (lost := _unreachable(cluster, live)):
                outcome.target_lost = (
                    f"the target stopped accepting connections before step "
                    f"{index + 1} ({lost}); the remaining "
                    f"{plan.steps - index} step(s) were skipped"
                )
                break
            step = _run_step(cluster, plan, index, live, progress)
            if step is not None:
                outcome.steps.append(step)
            outcome.interrupted = cluster.stopping
            outcome.agents_lost = _lost_text(cluster, plan.steps - index - 1)
            if on_step:
                on_step(outcome)
            if outcome.interrupted or (outcome.agents_lost and cluster.options.fail_fast):
                break
    except KeyboardInterrupt:
        outcome.interrupted = True
    outcome.address = f"{len(cluster.agents)} agents"
    return outcome


def _unreachable(cluster: Cluster, live: list[Agent]) -> str | None:
    """Why some agent can no longer reach the target, or None."""
    ray = cluster.ray
    if cluster.target is None:
        return None
    host, port, timeout_s = cluster.target
    refs = [a.actor.reachable.remote(host, port, timeout_s) for a in live]
    for agent, ref in zip(live, refs):
        try:
            why = ray.get(ref, timeout=timeout_s + 10)
        except ray.exceptions.RayError:
            continue  # a dead agent is found out by the step itself
        if why:
            return f"{agent.info.label}: {why.split(';')[0]}"
    return None


def _lost_text(cluster: Cluster, remaining: int) -> str | None:
    """The line saying which agents died, or None."""
    lost = [a.info for a in cluster.agents if not a.alive]
    if not lost:
        return None
    names = ", ".join(f"{i.label} in step {(i.lost_at_step or 0) + 1} ({i.error})" for i in lost)
    left = sum(a.alive for a in cluster.agents)
    if cluster.options.fail_fast and remaining:
        return f"{names} died; --fail-fast stopped the run ({remaining} step(s) not run)"
    return (
        f"{names} died; its steps keep the other agents' data and the run went on with "
        f"{left} agent(s)"
    )


def _run_step(
    cluster: Cluster, plan: Plan, index: int, live: list[Agent], progress: ProgressFn | None
) -> Any:
    """One step on the ``live`` agents; the merged step, or None when no agent ran it."""
    ray = cluster.ray
    configs = split_step(plan.step_config(index), len(live), [a.weight for a in live])
    worst_rtt_s = 0.0
    for agent in live:
        try:
            worst_rtt_s = max(
                worst_rtt_s,
                cluster.measure_offset(agent, clocks.ROUNDS_PER_STEP).round_trip_ns * 1e-9,
            )
        except ray.exceptions.RayError as exc:
            agent.lost(index, f"did not answer a clock read: {short_error(exc)}")
    start_ns = time.time_ns() + int((START_LEAD_S + 2 * worst_rtt_s) * 1e9)
    running: dict[Any, tuple[Agent, AgentShare]] = {}
    shares: list[AgentShare] = []
    for agent, config in zip(live, configs):
        fresh = agent.offset
        share = AgentShare(
            agent.info.index, fresh and fresh.offset_ns, fresh and fresh.uncertainty_ns
        )
        if not agent.alive:
            share.lost, share.error = True, agent.info.error
        elif config is not None:
            config = {
                **config,
                "start_unix_ns": clocks.on_agent_clock(start_ns, agent.offset_used_ns),
            }
            running[agent.actor.run_step.remote(config)] = (agent, share)
        shares.append(share)
    deadline = (
        time.monotonic()
        + START_LEAD_S
        + plan.config["duration_s"]
        + plan.config["read_timeout_s"]
        + DEADLINE_SLACK_S
    )
    _collect(cluster, running, index, deadline, plan.steps, progress)
    parts = [s.step for s in shares if s.step is not None]
    if not parts:
        return None
    merged = merge_steps(parts)
    merged.agents = shares
    return merged


def _collect(
    cluster: Cluster,
    running: dict[Any, tuple[Agent, AgentShare]],
    index: int,
    deadline: float,
    steps: int,
    progress: ProgressFn | None,
) -> None:
    """Wait for every agent's part; fill each share (or mark its agent lost)."""
    ray = cluster.ray
    pending = list(running)
    next_progress = time.monotonic() + PROGRESS_EVERY_S
    live = _LiveMerge(ray)
    while pending:
        try:
            ready, pending = ray.wait(pending, num_returns=len(pending), timeout=PROGRESS_EVERY_S)
            for ref in ready:
                _take(ray, ref, running[ref], index)
            if progress and time.monotonic() >= next_progress and pending:
                next_progress = time.monotonic() + PROGRESS_EVERY_S
                snap = live.poll([running[r][0] for r in pending])
                if snap:
                    progress(index, steps, snap)
            if time.monotonic() > deadline:
                for ref in pending:
                    agent, share = running[ref]
                    _lose(ray, agent, share, index, "did not finish the step in time")
                pending = []
        except KeyboardInterrupt:
            cluster.stopping = True
            _stop_all(cluster)
            end = time.monotonic() + STOP_WAIT_S
            while pending and time.monotonic() < end:
                try:
                    ready, pending = ray.wait(pending, num_returns=len(pending), timeout=0.1)
                except KeyboardInterrupt:
                    break  # a second Ctrl-C: keep what came back
                for ref in ready:
                    _take(ray, ref, running[ref], index)
            for ref in pending:
                _lose(ray, *running[ref], index, "did not stop within 2 s of the Ctrl-C")
            return


def _take(ray: Any, ref: Any, owner: tuple[Agent, AgentShare], index: int) -> None:
    """Fill a share from its agent's finished call, or mark the agent lost."""
    agent, share = owner
    try:
        answer = ray.get(ref, timeout=0)
    except ray.exceptions.RayError as exc:
        _lose(ray, agent, share, index, f"died during the step ({short_error(exc)})")
        return
    raw = answer["raw"]
    step = step_from_raw(raw["steps"][0]) if raw.get("steps") else None
    if step is None:
        _lose(ray, agent, share, index, "returned no step")
        return
    step.clock_skew_ns, step.flagged = answer["clock_skew_ns"], answer["flagged"]
    share.step = step
    share.start_lead_s = float(raw["steps"][0].get("start_lead_s", float("nan")))
    share.process_cpu_s = float(answer.get("process_cpu_s", float("nan")))


def _lose(ray: Any, agent: Agent, share: AgentShare, index: int, why: str) -> None:
    agent.lost(index, why)
    share.lost, share.error, share.step = True, why, None
    try:
        ray.kill(agent.actor, no_restart=True)
    except Exception:  # already gone
        pass


def _stop_all(cluster: Cluster) -> None:
    """Tell every agent to stop (fire and forget: each stops within about 0.1 s)."""
    for agent in cluster.agents:
        if agent.alive:
            try:
                agent.actor.stop.remote()
            except Exception:  # a dead agent has nothing to stop
                pass


class _LiveMerge:
    """Live progress of one step from its agents: each running agent is asked for its
    engine snapshot once per progress period (one question outstanding per agent), and
    the latest answer of every agent of the step that is alive is merged
    (:func:`merge_snapshots`), so that an agent slow to answer, or done already, still
    counts with its last snapshot instead of dropping out of the merged rate."""

    def __init__(self, ray: Any) -> None:
        self.ray = ray
        self.asked: dict[int, tuple[Agent, Any]] = {}
        self.latest: dict[int, tuple[Agent, dict[str, Any]]] = {}

    def poll(self, running: list[Agent]) -> dict[str, Any] | None:
        """Ask the ``running`` agents that have no question outstanding, wait at most
        half a progress period for the answers, and merge the latest of each agent;
        None before any answer."""
        ray = self.ray
        for agent in running:
            if agent.info.index not in self.asked:
                self.asked[agent.info.index] = (agent, agent.actor.progress.remote())
        refs = [ref for _, ref in self.asked.values()]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=PROGRESS_EVERY_S / 2)
        for index, (agent, ref) in list(self.asked.items()):
            if ref not in ready:
                continue
            del self.asked[index]
            try:
                snap = ray.get(ref, timeout=0)
            except ray.exceptions.RayError:
                continue
            if snap:
                self.latest[index] = (agent, snap)
        return merge_snapshots(
            [(a.info.label, snap) for a, snap in self.latest.values() if a.alive]
        )


@contextlib.contextmanager
def distributed(
    args: Any, plan: Plan, tell: Callable[[str], None] | None = None
) -> Iterator[tuple[Callable[..., SweepOutcome], list[AgentInfo]]]:
    """``perflab http --agents``: the cluster started (or joined) and checked, as a context
    yielding (run_sweep, agents) in the form ``perflab http`` uses for one machine; Ray and
    every agent are stopped on leaving.

    Args:
        args: the parsed options (``--agents``, ``--cluster``, ``--agents-per-node``,
            ``--fail-fast``).
        plan: what to run (checked by every agent for its share).
        tell: called with lines of start-up news.

    Raises:
        UsageError: see :class:`Cluster`.
    """
    options = options_from_args(args)
    target = (plan.target.host, plan.target.port, plan.connect_timeout_s)
    if plan.config.get("protocol") == "http3":  # QUIC is UDP: a TCP check tells nothing
        target = None
    configs = [plan.step_config(i) for i in range(plan.steps)]
    weights = options.split if isinstance(options.split, tuple) else None
    for config in configs:  # a share that cannot exist is refused before Ray starts
        split_step(config, options.agents, weights)
    with Cluster(options, target, configs, tell) as cluster:
        if tell:
            tell(
                f"{len(cluster.agents)} agent(s) ready in {cluster.started_s:.1f} s: "
                + "; ".join(f"{i.label} offset {_offset_text(i)}" for i in cluster.infos)
            )
        yield functools.partial(run_sweep, cluster), cluster.infos


def _offset_text(info: AgentInfo) -> str:
    if info.same_clock:
        return "0 (same clock)"
    return f"{info.offset_ns / 1e6:+,.3f} ± {info.offset_uncertainty_ns / 1e6:,.3f} ms"
