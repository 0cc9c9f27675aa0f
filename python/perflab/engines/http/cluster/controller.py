"""The controller's side of a distributed ``perflab http``: a Ray cluster (started on this
machine, or joined), one load agent per Ray actor placed on the cluster's nodes, and the
checks made before any load is sent.

Placement: by default the agents are spread over the alive nodes as evenly as possible
(one per node when there are at least as many nodes as agents); ``--agents-per-node K``
fills nodes K at a time. Each agent is a threaded actor pinned to its node
(``NodeAffinitySchedulingStrategy``, hard) that asks for no CPU of Ray's scheduler, so
that Ray's bookkeeping never stops an agent from starting on a small machine; the
engine sizes its own threads from the node's cores.

Before the first step: every agent says who it is (a perflab version other than the
controller's is refused), measures its capacity when the split asks for it
(``--split capacity``: :meth:`LoadAgent.capacity`), checks its share of every step with
the engine's own rules,
opens one connection to the target (a node that cannot reach it is named), runs
``perflab doctor``'s clock probes briefly, and has its clock offset measured
(:mod:`perflab.engines.http.cluster.clocks`).
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass
from typing import Any

from perflab.engines.http.cluster import bounds, clocks
from perflab.engines.http.cluster.agent import LoadAgent, boot_id
from perflab.engines.http.cluster.split import split_step
from perflab.errors import UsageError
from perflab.model.cluster import AgentInfo

#: One line on how to get Ray (exit 2 without it).
INSTALL_HINT = (
    "--agents runs load agents on Ray, which is not installed here: "
    "pip install 'perflab[cluster]' (on every node)"
)
#: Longest wait for the agents' start-up answers, s (a worker process starts, imports
#: Ray and perflab, and runs doctor's clock probes: seconds on a loaded 2-core machine).
START_TIMEOUT_S = 120.0
#: Threads of each agent actor: run_step, progress and stop at once, and one spare.
AGENT_THREADS = 4
#: Most agents one run may have.
MAX_AGENTS = 1000
#: Joins through Ray Client (``ray://``) tried when the head's Ray Client server fails to
#: start this driver's own server ("Initialization failure from server"), and the pause
#: before each retry, s. That server is a new process per driver, which the proxy waits
#: for at most 30 s (``RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S``): on a busy head its
#: start-up can take longer; each attempt starts a fresh one.
CLIENT_JOIN_ATTEMPTS, CLIENT_JOIN_PAUSE_S = 3, 1.0


def join_deadline_s(address: str) -> float:
    """How long Ray is given to start (``local``) or join ``address``, s: a local
    instance :data:`START_TIMEOUT_S`, a Ray Client address (``ray://``)
    :data:`perflab.engines.http.cluster.bounds.CLIENT_JOIN_S` (longer than its head's
    proxy waits for this driver's server), a GCS address
    :data:`perflab.engines.http.cluster.bounds.JOIN_S`."""
    if address == "local":
        return START_TIMEOUT_S
    return bounds.CLIENT_JOIN_S if address.startswith("ray://") else bounds.JOIN_S


@dataclass
class ClusterOptions:
    """Where and how many agents.

    Attributes:
        agents: how many load agents (≥ 1).
        address: "local" (start a Ray instance on this machine, stopped at the end),
            "auto" (the running cluster this machine belongs to), ``ray://HOST:10001``
            (Ray Client) or a cluster's ``HOST:PORT`` (its GCS address).
        per_node: agents per node (None: spread evenly, one per node when possible).
        fail_fast: stop the run when an agent dies instead of going on without it.
        split: how the load is divided: "even", "capacity" (by each agent's measured
            capacity) or one weight per agent.
    """

    agents: int
    address: str = "local"
    per_node: int | None = None
    fail_fast: bool = False
    split: str | tuple[float, ...] = "even"


def parse_split(text: str | None, agents: int) -> str | tuple[float, ...]:
    """``--split``: "even" (default), "capacity", or N comma-separated positive weights.

    Raises:
        UsageError: another word, a weight that is not a positive number, or a count of
            weights other than ``agents``.
    """
    text = (text or "even").strip().lower()
    if text in ("even", "capacity"):
        return text
    try:
        weights = tuple(float(w) for w in text.split(","))
    except ValueError:
        weights = ()
    if not weights or not all(math.isfinite(w) and w > 0 for w in weights):
        raise UsageError(
            f"--split {text!r}: use even, capacity, or one positive weight per "
            "agent, comma separated (--split 3,1)"
        )
    if len(weights) != agents:
        raise UsageError(
            f"--split gives {len(weights)} weights for --agents {agents}: give one per agent"
        )
    return weights


def options_from_args(args: Any) -> ClusterOptions:
    """``--agents``, ``--cluster``, ``--agents-per-node``, ``--fail-fast`` checked.

    Raises:
        UsageError: a count below 1 or above :data:`MAX_AGENTS`, an empty address.
    """
    agents, per_node = args.agents, args.agents_per_node
    if not 1 <= agents <= MAX_AGENTS:
        raise UsageError(f"--agents {agents} must be between 1 and {MAX_AGENTS}")
    if per_node is not None and per_node < 1:
        raise UsageError(f"--agents-per-node {per_node} must be at least 1")
    address = (args.cluster or "local").strip()
    if not address:
        raise UsageError("--cluster needs an address: local, auto, ray://HOST:10001 or HOST:PORT")
    if address == "local":
        bounds.check_local(agents)  # before Ray starts: each agent is a process
    return ClusterOptions(
        agents, address, per_node, args.fail_fast, parse_split(args.split, agents)
    )


def import_ray() -> Any:
    """The ``ray`` module. Raises UsageError (:data:`INSTALL_HINT`) when it is missing."""
    try:
        import ray
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return ray


def place(nodes: list[str], agents: int, per_node: int | None) -> list[str]:
    """The node of each agent.

    Args:
        nodes: alive node ids, the controller's own first when it is one of them.
        agents: how many agents.
        per_node: agents per node, or None to spread them evenly (round-robin).

    Raises:
        UsageError: more agents than ``per_node`` × nodes, or no node.
    """
    if not nodes:
        raise UsageError("the Ray cluster has no alive node to run agents on")
    if per_node is None:
        return [nodes[i % len(nodes)] for i in range(agents)]
    if agents > per_node * len(nodes):
        raise UsageError(
            f"--agents {agents} with --agents-per-node {per_node} needs "
            f"{math.ceil(agents / per_node)} nodes; the cluster has "
            f"{len(nodes)}: raise --agents-per-node or add nodes"
        )
    return [nodes[i // per_node] for i in range(agents)]


class Agent:
    """The controller's handle on one agent: its Ray actor and what is known of it.

    Attributes:
        info: the :class:`AgentInfo` saved in the results.
        actor: the Ray actor handle.
        alive: False once the agent died (it is never used again).
    """

    def __init__(self, info: AgentInfo, actor: Any) -> None:
        self.info = info
        self.actor = actor
        self.alive = True
        #: The latest measurement of its clock offset (None before the first).
        self.offset: clocks.Offset | None = None

    @property
    def weight(self) -> float:
        """Its weight in the split of every step (:attr:`AgentInfo.weight`)."""
        return self.info.weight

    @property
    def offset_used_ns(self) -> int:
        """The offset that places instants on this agent's clock: the latest measured
        (so that drift over a long sweep does not add up), 0 on a shared clock."""
        if self.info.same_clock or self.offset is None:
            return 0
        return self.offset.offset_ns

    def lost(self, step: int, why: str) -> None:
        """Record that the agent died during step ``step`` (0-based)."""
        self.alive = False
        self.info.lost_at_step = step
        self.info.error = why


class Cluster:
    """A Ray cluster with the run's agents on it; a context manager.

    Args:
        options: where and how many agents. When this process is already connected to
            Ray (``ray.init`` done by the caller), that connection is used and kept open
            on leaving, whatever ``options.address`` says.
        target: the target's (host, port, connect timeout s), checked from every agent
            (None: not checked, as for HTTP/3, whose QUIC a TCP connect cannot test).
        step_configs: the whole configs of every step (``Plan.step_config``), checked by
            every agent in its share.
        tell: called with a line of start-up news (stderr).

    Attributes:
        agents: the agents, in index order.
        started_s: how long starting (or joining) Ray and the agents' checks took, s.
        stopping: a Ctrl-C told the agents to stop.

    Raises (on entering):
        UsageError: Ray missing, a cluster that cannot be reached or started (a
            ``ray://`` join is tried :data:`CLIENT_JOIN_ATTEMPTS` times), too few nodes,
            an agent that does not start, a perflab version mismatch, a share of a step
            an agent's engine refuses, or a node that cannot reach the target.
    """

    def __init__(
        self,
        options: ClusterOptions,
        target: tuple[str, int, float] | None,
        step_configs: list[dict[str, Any]],
        tell: Any = None,
    ) -> None:
        self.options = options
        self.target = target
        self.step_configs = step_configs
        self.tell = tell or (lambda line: None)
        self.agents: list[Agent] = []
        self.ray: Any = None
        self.started_s = math.nan
        #: Ray was initialised here (and is shut down on leaving), not by the caller.
        self.owns_ray = False
        #: Set by a Ctrl-C: the agents were told to stop.
        self.stopping = False

    @property
    def infos(self) -> list[AgentInfo]:
        """Every agent's :class:`AgentInfo`, in index order."""
        return [a.info for a in self.agents]

    def __enter__(self) -> Cluster:
        self.ray = import_ray()
        t0 = time.monotonic()
        try:
            self._connect()
            self._start_agents()
            self._check_agents()
        except BaseException:
            self.close()
            raise
        self.started_s = time.monotonic() - t0
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self) -> None:
        ray, address = self.ray, self.options.address
        if ray.is_initialized():  # a caller's own connection (a test, a benchmark): kept
            return
        self.owns_ray = True
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report home
        kwargs: dict[str, Any] = {
            "logging_level": logging.ERROR,
            "log_to_driver": False,
            "configure_logging": False,
        }
        if address == "local":
            self.tell("starting a local Ray instance…")
            # Ray's note that it turned token authentication on (it stays on) is not news
            logging.getLogger("ray._private.authentication").setLevel(logging.ERROR)
            kwargs.update(
                include_dashboard=False,
                object_store_memory=100 * 2**20,
                # Ray's raylet gives up on a worker process not registered within this
                # (60 s by default): as long as perflab waits for its agents
                _system_config={"worker_register_timeout_seconds": int(START_TIMEOUT_S)},
                num_cpus=max(os.cpu_count() or 1, self.options.agents),
            )
        else:
            self.tell(f"joining the Ray cluster at {address}…")
            bounds.check_address(address)  # nothing there: refused now, not after minutes
            enable_token_auth_to_join()
        deadline = join_deadline_s(address)
        for attempt in range(1, CLIENT_JOIN_ATTEMPTS + 1):
            try:
                bounds.init_ray(ray, address, kwargs, deadline)
                return
            except ConnectionAbortedError as exc:  # Ray Client: the head refused this driver
                if not address.startswith("ray://"):
                    raise _join_error(address, exc) from None
                why = short_error(exc)
                if attempt == CLIENT_JOIN_ATTEMPTS:
                    raise UsageError(
                        f"cannot join the Ray cluster {address!r}: its Ray Client server "
                        f"failed to start a server for this driver {attempt} times ({why}); "
                        "its logs on the head are ray_client_server*.err; a busy head needs "
                        "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S above 30 set for its `ray "
                        "start --head`, or join by the GCS address (HOST:6379) from a node"
                    ) from None
                self.tell(
                    f"the Ray Client server failed to start a server for this driver "
                    f"({why}); joining again ({attempt + 1} of "
                    f"{CLIENT_JOIN_ATTEMPTS})…"
                )
                time.sleep(CLIENT_JOIN_PAUSE_S)
            except (ConnectionError, ValueError, RuntimeError, TimeoutError) as exc:
                raise _join_error(address, exc) from None

    def _nodes(self) -> list[dict[str, Any]]:
        """Alive nodes, the controller's own first."""
        here = self.ray.get_runtime_context().get_node_id()
        alive = [n for n in self.ray.nodes() if n.get("Alive")]
        return sorted(alive, key=lambda n: n["NodeID"] != here)

    def _start_agents(self) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = self._nodes()
        if self.owns_ray and self.options.address != "local":
            bounds.check_cluster(
                self.options.agents, [float(n.get("Resources", {}).get("CPU", 0)) for n in nodes]
            )
        where = place([n["NodeID"] for n in nodes], self.options.agents, self.options.per_node)
        address = {n["NodeID"]: n.get("NodeManagerAddress", "") for n in nodes}
        remote = self.ray.remote(LoadAgent)

        def spawn(index: int, node: str) -> Any:
            return remote.options(
                num_cpus=0,
                max_concurrency=AGENT_THREADS,
                max_restarts=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
            ).remote(index)

        self._spawn = spawn
        self.tell(f"starting {len(where)} load agent(s) on {len(set(where))} node(s)…")
        for i, node in enumerate(where):
            info = AgentInfo(index=i, host="?", address=address[node], node=node)
            self.agents.append(Agent(info, spawn(i, node)))

    def _hellos(self) -> list[dict[str, Any]]:
        """Every agent's ``hello``, waiting for its start-up as long as it takes, up to
        :data:`START_TIMEOUT_S` in all.

        Ray gives up on a worker process that has not registered with its raylet within
        ``worker_register_timeout_seconds`` (60 s by default; importing Ray and perflab
        on a loaded machine can take that long), and the actor dies "never started"
        (``ActorDiedError`` that is not a failure of its ``__init__``). Such an agent is
        created again on the same node until the deadline; one line says so each time.

        Returns:
            One hello dict per agent, in index order.

        Raises:
            UsageError: an agent not started by the deadline (how often Ray gave up on
                it), or one that failed for another reason (its ``__init__`` raised,
                Ray refused it).
        """
        ray = self.ray
        deadline = time.monotonic() + START_TIMEOUT_S
        pending = {agent.actor.hello.remote(): agent for agent in self.agents}
        hellos: dict[int, dict[str, Any]] = {}
        gave_up: dict[int, int] = {}

        def late() -> UsageError:
            slow = ", ".join(str(a.info.index + 1) for a in pending.values())
            again = sum(gave_up.values())
            return UsageError(
                f"load agent(s) {slow or '?'} did not start within {START_TIMEOUT_S:g} s"
                + (f" (Ray gave up starting their worker {again} time(s))" if again else "")
                + "; the cluster's nodes are overloaded: run again when they are quieter, "
                "or use fewer --agents"
            )

        while pending:
            left = deadline - time.monotonic()
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=max(left, 0.0))
            if not ready:
                raise late()
            agent = pending.pop(ready[0])
            try:
                hellos[agent.info.index] = ray.get(ready[0], timeout=max(left, 0.0))
            except ray.exceptions.ActorDiedError as exc:
                if exc.actor_init_failed:
                    raise _start_error(agent.info.label, "hello", exc) from None
                index = agent.info.index
                gave_up[index] = gave_up.get(index, 0) + 1
                if time.monotonic() >= deadline:
                    pending[ready[0]] = agent
                    raise late() from None
                self.tell(
                    f"{agent.info.label}: Ray gave up starting its worker process (a busy "
                    f"node?); starting it again (attempt {gave_up[index] + 1})…"
                )
                agent.actor = self._spawn(index, agent.info.node)
                pending[agent.actor.hello.remote()] = agent
            except ray.exceptions.RayError as exc:
                raise _start_error(agent.info.label, "hello", exc) from None
        return [hellos[agent.info.index] for agent in self.agents]

    def _gather(self, calls: list[Any], what: str) -> list[Any]:
        """Results of one call per agent; an agent that fails is named. Raises UsageError."""
        ray = self.ray
        try:
            return ray.get(calls, timeout=START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            raise UsageError(
                f"the load agents did not answer within {START_TIMEOUT_S:g} s "
                f"({what}); is the cluster overloaded?"
            ) from None
        except ray.exceptions.RayError as exc:
            first = next((a for a, c in zip(self.agents, calls) if _failed(ray, c)), None)
            raise _start_error(first.info.label if first else "an agent", what, exc) from None

    def _check_agents(self) -> None:
        from perflab import __version__

        hellos = self._hellos()
        here = (os.uname().nodename, boot_id())
        for agent, hello in zip(self.agents, hellos):
            info = agent.info
            info.host, info.pid, info.cores = hello["host"], hello["pid"], hello["cores"]
            info.perflab_version = hello["perflab_version"]
            info.same_clock = bool(hello["boot_id"]) and (hello["host"], hello["boot_id"]) == here
        wrong = [a.info for a in self.agents if a.info.perflab_version != __version__]
        if wrong:
            raise UsageError(
                f"{wrong[0].label} runs perflab {wrong[0].perflab_version}, the "
                f"controller {__version__}: install the same version on every "
                f"node (pip install 'perflab[cluster]=={__version__}')"
            )
        self._weigh()
        weights = [a.weight for a in self.agents]
        shares = [split_step(c, len(self.agents), weights) for c in self.step_configs]
        checks = [
            a.actor.check.remote([s[k] for s in shares if s[k] is not None])
            for k, a in enumerate(self.agents)
        ]
        reach = [a.actor.reachable.remote(*self.target) for a in self.agents if self.target]
        probes = [a.actor.clock_checks.remote() for a in self.agents]
        for agent, problem in zip(self.agents, self._gather(checks, "step checks")):
            if problem:
                raise UsageError(f"{agent.info.label}: {problem}")
        unreachable = [
            f"{a.info.label}: {why}"
            for a, why in zip(self.agents, self._gather(reach, "reaching the target"))
            if why
        ]
        if unreachable:
            raise UsageError(
                f"{len(unreachable)} of {len(self.agents)} agents cannot reach "
                f"the target: {'; '.join(unreachable)}"
            )
        self.tell("checking the agents' clocks…")
        for agent, found in zip(self.agents, self._gather(probes, "clock checks")):
            agent.info.clock_checks = found
            failed = [name for name, text in found.items() if text.startswith("fail")]
            agent.info.clock_flagged = ", ".join(failed) or None
        for agent in self.agents:
            self.measure_offset(agent, clocks.ROUNDS_AT_START)

    def _weigh(self) -> None:
        """Every agent's weight: 1, the user's, or its measured capacity, once for the
        whole sweep: the probe counts requests per CPU-second, which a step's load does
        not change, and repeats on one agent spread by about 16% (docs/distributed.md),
        so a probe per step would move the shares by its noise alone."""
        split = self.options.split
        if split == "capacity":
            self.tell("measuring the agents' capacity…")
            threads = self.step_configs[0].get("threads") if self.step_configs else None
            found = self._gather(
                [a.actor.capacity.remote(threads) for a in self.agents], "capacity probe"
            )
            for agent, capacity in zip(self.agents, found):
                agent.info.capacity_rps = agent.info.weight = capacity
        elif split != "even":
            for agent, weight in zip(self.agents, split):
                agent.info.weight = float(weight)

    def measure_offset(self, agent: Agent, rounds: int) -> clocks.Offset:
        """Measure ``agent``'s clock offset with ``rounds`` round trips and keep it as
        its latest; the start-up measurement (``rounds`` ≥ :data:`clocks.ROUNDS_AT_START`)
        is also the one saved in its :class:`AgentInfo`. Raises the agent's Ray error."""
        ray = self.ray
        offset = clocks.measure(lambda: ray.get(agent.actor.now_ns.remote(), timeout=10), rounds)
        agent.offset = offset
        if rounds >= clocks.ROUNDS_AT_START:
            info = agent.info
            info.offset_ns, info.offset_uncertainty_ns = offset.offset_ns, offset.uncertainty_ns
            info.round_trip_ns = offset.round_trip_ns
        return offset

    def close(self) -> None:
        """Stop every agent (by its actor) and leave Ray (stopping it when it was started
        here), unless the caller had connected to Ray before."""
        ray = self.ray
        if ray is None:
            return
        for agent in self.agents:
            try:
                ray.kill(agent.actor, no_restart=True)
            except Exception:  # already dead, or Ray already gone
                pass
        if self.owns_ray:
            try:
                ray.shutdown()
            except Exception:  # noqa: BLE001 - shutting down must not hide the results
                pass
        self.ray = None


def _join_error(address: str, exc: BaseException) -> UsageError:
    """The one line for a cluster that could not be started or joined."""
    text = str(exc)
    return UsageError(
        f"cannot {'start' if address == 'local' else 'join'} the Ray cluster "
        f"{address!r}: {text.splitlines()[0] if text else type(exc).__name__}; "
        "check the address (ray status on a node prints it), or drop --cluster "
        "to start one here"
    )


def enable_token_auth_to_join() -> None:
    """Turn Ray's token authentication on for joining a running cluster when a token is
    where Ray looks for one and ``RAY_AUTH_MODE`` is unset, with Ray's own function.

    ``ray start --head`` turns token authentication on by itself when it finds a token
    (``~/.ray/auth_token``), but a driver joining it (``ray.init(address=…)``, by GCS
    address or ``ray://``) leaves it off and is refused ("InvalidAuthToken", "no
    authorization header provided"), as the review of ray-project/ray PR 64755 notes.
    A Ray without token authentication has nothing to turn on.
    """
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available as enable,
        )
    except ImportError:
        return
    logging.getLogger("ray._private.authentication").setLevel(logging.ERROR)
    enable()


def _start_error(who: str, what: str, exc: BaseException) -> UsageError:
    """The one line for agent ``who`` failing at start-up (during ``what``) with ``exc``."""
    return UsageError(
        f"{who} failed at start-up ({what}): {short_error(exc)}; is perflab installed "
        "with the same version on every node (pip install 'perflab[cluster]')?"
    )


def _failed(ray: Any, ref: Any) -> bool:
    """True when ``ref`` is ready and holds an error."""
    ready, _ = ray.wait([ref], timeout=0)
    if not ready:
        return False
    try:
        ray.get(ref, timeout=0)
    except ray.exceptions.RayError:
        return True
    return False


def short_error(exc: BaseException) -> str:
    """The first meaningful line of a Ray error (they carry whole tracebacks)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Traceback", "File ", "^"))]
    return (useful[-1] if useful else type(exc).__name__)[:300]
