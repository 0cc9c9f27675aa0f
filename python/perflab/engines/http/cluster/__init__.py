"""Distributed ``perflab http`` (``--agents N``): one open-loop run from load agents on
many machines, each a Ray actor running the same Rust engine in its own process.

Modules, one concept each:

* :mod:`.split` — a step's load divided among the agents: rates with interleaved phases
  (constant arrivals) or independent seeds (Poisson), connections, pool caps;
* :mod:`.clocks` — each agent's clock offset to the controller from round trips (the
  minimum-round-trip sample, NTP-style) and the shared start instant on its clock;
* :mod:`.merge` — the agents' steps merged exactly into one (counters summed,
  HdrHistograms merged bucket by bucket by the engine);
* :mod:`.agent` — what runs inside each agent process (plain Python, no Ray);
* :mod:`.controller` — Ray: starting or joining a cluster, placing the agents, the
  start-up checks, running the sweep step by step, faults, Ctrl-C, live progress.

Ray is an optional dependency (``pip install perflab[cluster]``); only the controller
imports it.
"""
