"""How fast Ctrl-C stops a distributed `perflab http --agents` run (issue 18: "the
controller's Ctrl-C stops every agent within a second and saves").

Usage: python benchmarks/cluster_stop.py [--rounds 5] [--agents 2] [--rate 1000]

Writes benchmarks/results/cluster_stop.md. One local Ray instance is started here; each
round runs `perflab http URL --rate R --duration 60s --agents N --cluster <it>` in a
child process against a `perflab serve` in this process (1 ms delay, 127.0.0.1), sends
it SIGINT 2 s into the step and measures, from the signal:

* **agents stopped**: the last request the server received (its request counter read
  every 2 ms: no agent sent anything after it);
* **saved**: the results file marked interrupted on disk (read every 2 ms);
* **exit**: the controller process gone (printing, history and leaving Ray included).

Verdict, by one stated rule: "met" when every round's agents stopped and its results
were saved within 1 s of the signal, else "not met".
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import machine, write_section  # noqa: E402

# benchmarks/http.py would shadow the standard library's http package, which Ray imports
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

LIMIT_S = 1.0


def one_round(
    server: object, address: str, agents: int, rate: float, out: Path
) -> tuple[float, float, float]:
    """(agents stopped, saved, exit) seconds after SIGINT, for one run."""
    out.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "perflab",
            "http",
            f"http://127.0.0.1:{server.port}/",
            "--rate",
            str(rate),
            "--duration",
            "60s",
            "--warmup",
            "0s",
            "--threads",
            "1",
            "--agents",
            str(agents),
            "--cluster",
            address,
            "--json",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr:
        if "ready in" in line:
            break
    time.sleep(2.0)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    served, last, saved = server.stats()["requests"], t0, float("nan")
    while proc.poll() is None and time.monotonic() - t0 < 120:
        now, count = time.monotonic(), server.stats()["requests"]
        if count != served:
            served, last = count, now
        if saved != saved and out.exists():
            try:
                if json.loads(out.read_text()).get("interrupted"):
                    saved = now
            except ValueError:  # caught mid-write
                pass
        time.sleep(0.002)
    proc.communicate(timeout=60)
    return last - t0, saved - t0, time.monotonic() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--agents", type=int, default=2)
    parser.add_argument("--rate", type=float, default=1000)
    opts = parser.parse_args()
    import ray

    from perflab import _core

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    logging.getLogger("ray._private.authentication").setLevel(logging.ERROR)
    ray.init(
        address="local",
        include_dashboard=False,
        object_store_memory=100 * 2**20,
        num_cpus=max(os.cpu_count() or 1, opts.agents),
        logging_level=logging.ERROR,
        log_to_driver=False,
        configure_logging=False,
    )
    rows = []
    try:
        address = ray.get_runtime_context().gcs_address
        with (
            _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1ms"}) as server,
            tempfile.TemporaryDirectory() as tmp,
        ):
            for r in range(opts.rounds):
                rows.append(
                    one_round(server, address, opts.agents, opts.rate, Path(tmp) / "r.json")
                )
                print(
                    f"round {r + 1}: stopped {rows[-1][0]:.3f} s, saved {rows[-1][1]:.3f} s, "
                    f"exit {rows[-1][2]:.3f} s",
                    file=sys.stderr,
                )
    finally:
        ray.shutdown()
    write_section("cluster_stop", report(opts, rows))


def report(opts: argparse.Namespace, rows: list[tuple[float, float, float]]) -> str:
    met = all(stop <= LIMIT_S and saved <= LIMIT_S for stop, saved, _ in rows)
    cols = list(zip(*rows))
    lines = [
        "### Ctrl-C stop time of `perflab http --agents`",
        "",
        f"Machine: {machine()}.",
        "",
        f"Command: `python benchmarks/cluster_stop.py --rounds {opts.rounds} --agents "
        f"{opts.agents} --rate {opts.rate:g}`: SIGINT 2 s into a 60 s step at "
        f"{opts.rate:g} req/s from {opts.agents} agents on a local Ray instance (joined), "
        "against `perflab serve` on 127.0.0.1.",
        "",
        "| from SIGINT to | median | max |",
        "|---|---:|---:|",
    ]
    for name, values in zip(
        ("the last request any agent sent", "results saved (interrupted)", "the controller's exit"),
        cols,
    ):
        lines.append(f"| {name} | {statistics.median(values):.3f} s | {max(values):.3f} s |")
    lines += [
        "",
        f"Target: agents stopped and results saved within {LIMIT_S:g} s of the "
        f"signal in every round: **{'met' if met else 'not met'}**. (Each agent "
        "looks at its stop flag every 100 ms, its engine threads at theirs every "
        "100 ms; the exit also prints the tables, records history and leaves Ray.)",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
