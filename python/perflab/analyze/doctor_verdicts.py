"""``perflab doctor``'s verdicts: ok / warn / fail / n/a checks over a :class:`DoctorReport`.

Each check is one small function of the report returning a
:class:`~perflab.model.doctor.Check` with one sentence of evidence and one of
what to do. Thresholds are named constants with the reason for each; the
sources are the kernel's NTP limits (adjtimex(2): at most 500 ppm of
frequency correction), pyperf's ``system tune`` advice (governor, turbo, CPU
isolation) and the 0.1% timer-error rule of perflab's calibration.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from perflab.analyze.timer import TimerInfo
from perflab.model.doctor import Check, DoctorReport, Step
from perflab.units import format_time

#: Clocksources without a vDSO fast path, or coarse: every read is slow or steps by ms.
SLOW_CLOCKSOURCES = {"hpet", "acpi_pm", "jiffies", "refined-jiffies", "pit"}
#: A native MONOTONIC read above this means no vDSO fast path (a vDSO read is ~20-50 ns).
SLOW_READ_NS = 500.0
#: A MONOTONIC resolution coarser than this can't time short code.
COARSE_RESOLUTION_NS = 1_000.0
#: ntpd slews at most 500 ppm; beyond that something else distorts the clock.
SLEW_WARN_PPM = 500.0
#: OS clocks may differ from the TSC by NTP's correction plus calibration error.
RATE_WARN_PPM = 1_000.0
#: A 1% rate error is never NTP: the clock is faked or broken.
RATE_FAIL_PPM = 10_000.0
SUSPEND_FAIL_NS = 1_000_000
GAP_WARN_NS = 1_000_000
GAP_FAIL_NS = 1_000_000_000
SLEEP_WARN_OVERSHOOT_NS = 1_000_000
SLEEP_FAIL_OVERSHOOT_NS = 10_000_000
STEAL_WARN, STEAL_FAIL = 0.01, 0.10
#: Involuntary context switches per second of a busy loop on a quiet machine: a few.
PREEMPTIONS_WARN_PER_S = 50.0
MEMORY_PRESSURE_WARN = 10.0


def _t(ns: float | None) -> str:
    return format_time(ns * 1e-9) if ns is not None else "–"


def _signed(ns: float) -> str:
    """A signed duration: "+1.000 s" from 10 ms up (the size of a step), else "+250 µs"."""
    if abs(ns) >= 10_000_000:
        return f"{ns / 1e9:+.3f} s"
    return ("+" if ns >= 0 else "−") + format_time(abs(ns) * 1e-9)


def _clock_time(iso: str) -> str:
    return dt.datetime.fromisoformat(iso).strftime("%H:%M:%S")


def _na(name: str, what: str) -> Check:
    return Check(name, "n/a", f"not available: {what}")


def clocksource(r: DoctorReport) -> Check:
    """The kernel's clocksource: slow or coarse ones make every read expensive."""
    current, available = r.clocksource.get("current"), r.clocksource.get("available")
    if current is None:
        return _na("clocksource", "/sys/devices/system/clocksource is not readable (a container?)")
    detail = f"clocksource is {current} (available: {' '.join(available or []) or '–'})"
    if current in SLOW_CLOCKSOURCES:
        return Check(
            "clocksource",
            "warn",
            f"{detail}: every clock read is a slow hardware access or steps by a whole tick",
            "if 'tsc' is available and reliable: echo tsc | sudo tee "
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
    return Check("clocksource", "ok", detail)


def tsc(r: DoctorReport) -> Check:
    """Whether there is an invariant TSC to check the OS clocks against."""
    flags = r.clocksource.get("tsc_flags")
    if not r.clocksource.get("has_tsc"):
        return _na("tsc", "no rdtsc on this CPU, so clock rates can't be checked against it")
    if not flags:
        return _na("tsc", "the TSC flags (/proc/cpuinfo) are not readable")
    ghz = r.clocksource.get("tsc_ghz")
    rate = f" at {ghz:.3f} GHz" if ghz else ""
    if not (flags.get("constant_tsc") and flags.get("nonstop_tsc")):
        return Check(
            "tsc",
            "warn",
            f"the TSC{rate} is not invariant (constant_tsc and "
            "nonstop_tsc are not both set): its rate follows the CPU frequency",
            "treat the rate-vs-TSC check with care; prefer a CPU with an invariant TSC",
        )
    have = ", ".join(f for f, on in flags.items() if on)
    return Check("tsc", "ok", f"invariant TSC{rate} ({have})")


def hypervisor(r: DoctorReport) -> Check:
    """Virtual machines steal CPU time and their clocks can jump."""
    virt = r.clocksource.get("virtualization")
    if virt is None:
        return _na("hypervisor", "neither CPUID, /sys nor DMI says")
    if virt == "none":
        return Check("hypervisor", "ok", "bare metal: no hypervisor found")
    return Check(
        "hypervisor",
        "warn",
        f"running under {virt}: the hypervisor can steal CPU time "
        "and guest clocks can jump (one Xen guest's clock leapt 50 s every few seconds)",
        "compare only results from the same kind of VM, and re-run perflab doctor "
        "before trusting them",
    )


def read_cost(r: DoctorReport) -> Check:
    """The cost of reading MONOTONIC, the clock every sample is timed with."""
    mono = r.clocks.get("monotonic")
    if mono is None or mono.read_cost_ns is None:
        return _na("read_cost", "MONOTONIC can't be read")
    detail = (
        f"reading MONOTONIC costs {_t(mono.read_cost_ns)} natively and "
        f"{_t(mono.python_read_cost_ns)} from Python"
    )
    if mono.read_cost_ns > SLOW_READ_NS:
        return Check(
            "read_cost",
            "warn",
            f"{detail}: there is no vDSO fast path",
            "switch to a vDSO-capable clocksource (tsc, kvm-clock) if one is available",
        )
    return Check("read_cost", "ok", detail)


def resolution(r: DoctorReport) -> Check:
    """Which timings MONOTONIC can resolve to perflab's 0.1% timer-error rule."""
    mono = r.clocks.get("monotonic")
    if mono is None or mono.resolution_ns is None or mono.python_read_cost_ns is None:
        return _na("resolution", "MONOTONIC never stepped during the resolution probe")
    timer = TimerInfo("monotonic", mono.read_cost_ns, mono.python_read_cost_ns, mono.resolution_ns)
    floor = _t(timer.min_sample_ns)
    if mono.resolution_ns > COARSE_RESOLUTION_NS:
        return Check(
            "resolution",
            "warn",
            f"MONOTONIC only resolves {_t(mono.resolution_ns)}: "
            f"timings below {floor} are not resolvable with this clock to 0.1%",
            f"time batches of calls lasting at least {floor} (perflab run does)",
        )
    return Check(
        "resolution",
        "ok",
        f"MONOTONIC resolves {_t(mono.resolution_ns)} steps: "
        f"timings below {floor} are not resolvable with this clock to 0.1%, so "
        "perflab run times batches of calls at least that long",
    )


def backward_steps(r: DoctorReport) -> Check:
    """Clocks that went backwards (REALTIME may be set back; the others never should)."""
    back = {
        name: c.backward_steps
        for name, c in r.clocks.items()
        if c.backward_steps and name != "process_cputime"
    }
    if not back:
        return Check(
            "backward_steps",
            "ok",
            f"no clock went backwards in {r.cross_checks.reads:,} probe reads",
        )
    text = ", ".join(f"{name.upper()} {n}×" for name, n in back.items())
    status = "warn" if set(back) <= {"realtime", "realtime_coarse"} else "fail"
    return Check(
        "backward_steps",
        status,
        f"clocks went backwards: {text}",
        "a monotonic clock running backwards is a kernel or hypervisor bug; don't "
        "trust timings from this machine"
        if status == "fail"
        else "REALTIME was set back (NTP step or a manual change); time with MONOTONIC",
    )


def _step_text(step: Step) -> str:
    size = max(step.sizes_ns.values(), key=abs)
    clocks = ", ".join(c.upper() for c in step.sizes_ns)
    return (
        f"clock stepped {_signed(size)} at {_clock_time(step.at)} ({step.offset_s:.1f} s "
        f"into the probe; {clocks} against the {step.against.upper()})"
    )


def clock_steps(r: DoctorReport) -> Check:
    """Steps of REALTIME against MONOTONIC, or of every OS clock against the TSC."""
    x = r.cross_checks
    if not x.steps:
        return Check(
            "clock_steps",
            "ok",
            f"no clock stepped during the {x.duration_s:.1f} s "
            f"probe ({x.reads:,} reads compared against the {x.reference.upper()})",
        )
    biggest = max(x.steps, key=lambda s: max(abs(v) for v in s.sizes_ns.values()))
    more = f" (and {len(x.steps) - 1} more steps)" if len(x.steps) > 1 else ""
    dropped = (
        f"; {x.events_dropped} more divergent reads were not analysed" if x.events_dropped else ""
    )
    detail = _step_text(biggest) + more + dropped
    if all(set(s.sizes_ns) <= {"realtime"} for s in x.steps):
        return Check(
            "clock_steps",
            "warn",
            detail + ": timestamps and time.time() durations "
            "spanning that moment are wrong; MONOTONIC timings are not",
            "let NTP slew rather than step the clock; perflab times with MONOTONIC",
        )
    return Check(
        "clock_steps",
        "fail",
        detail + ": results spanning that moment are unusable",
        "find what steps or fakes the clock (NTP step, VM pause or migration, "
        "LD_PRELOAD=libfaketime); perflab run flags and excludes samples spanning a step",
    )


def rate_vs_tsc(r: DoctorReport) -> Check:
    """The OS clocks' rate against the TSC, which no library can fake."""
    x = r.cross_checks
    if x.reference != "tsc":
        return _na("rate_vs_tsc", "no calibrated TSC to compare the OS clocks against")
    # Ties (every clock faked alike) name MONOTONIC, the clock samples are timed with.
    worst = max(x.rates, key=lambda c: (round(abs(x.rates[c] - 1), 4), c == "monotonic"))
    ppm = (x.rates[worst] - 1) * 1e6
    all_rates = ", ".join(f"{c.upper()} {v:.3f}×" for c, v in x.rates.items())
    if abs(ppm) > RATE_FAIL_PPM:
        return Check(
            "rate_vs_tsc",
            "fail",
            f"{worst.upper()} runs at {x.rates[worst]:.3f}× the "
            f"TSC ({all_rates}): every timing is off by that factor",
            "something fakes or distorts this process's clocks (LD_PRELOAD=libfaketime? "
            "a broken hypervisor clock); remove it before measuring",
        )
    detail = f"the OS clocks run at the TSC's rate within {abs(ppm):,.0f} ppm ({worst.upper()})"
    if abs(ppm) > RATE_WARN_PPM:
        return Check(
            "rate_vs_tsc",
            "warn",
            detail + ", more than NTP's correction explains",
            "check the hypervisor's clock and NTP (chronyc tracking)",
        )
    return Check("rate_vs_tsc", "ok", detail)


def slewing(r: DoctorReport) -> Check:
    """NTP slewing: MONOTONIC's rate against MONOTONIC_RAW."""
    ppm = r.cross_checks.slew_ppm
    if ppm is None:
        return _na("slewing", "MONOTONIC_RAW could not be compared")
    detail = f"MONOTONIC runs {ppm:+,.1f} ppm against MONOTONIC_RAW"
    if abs(ppm) > RATE_FAIL_PPM:
        return Check(
            "slewing",
            "fail",
            detail + ": far beyond any NTP correction",
            "something distorts MONOTONIC; don't trust timings from this machine",
        )
    if abs(ppm) > SLEW_WARN_PPM:
        return Check(
            "slewing",
            "warn",
            detail + ": NTP is slewing hard, so durations are off by that much while it lasts",
            "wait for NTP to settle (chronyc tracking)",
        )
    return Check("slewing", "ok", detail + " (NTP's frequency correction)")


def suspend(r: DoctorReport) -> Check:
    """A suspend during the probe (BOOTTIME − MONOTONIC grew)."""
    x = r.cross_checks
    if x.suspend_ns > SUSPEND_FAIL_NS:
        return Check(
            "suspend",
            "fail",
            f"the machine was suspended for {_t(x.suspend_ns)} "
            "during the probe (BOOTTIME − MONOTONIC grew)",
            "keep the machine awake while measuring (systemd-inhibit)",
        )
    since = (
        f"suspended for {format_time(x.suspended_since_boot_s)} in total since boot"
        if x.suspended_since_boot_s >= 1e-3
        else "never suspended since boot"
    )
    return Check("suspend", "ok", f"no suspend during the probe ({since})")


def ntp(r: DoctorReport) -> Check:
    """The kernel's NTP state (adjtimex)."""
    state = r.cross_checks.ntp
    if state is None:
        return _na("ntp", "adjtimex was refused")
    figures = (
        f"frequency offset {state['freq_ppm']:+.1f} ppm, estimated error "
        f"{_t(state['esterror_us'] * 1e3)}"
    )
    if state["synchronised"]:
        return Check("ntp", "ok", f"the kernel clock is NTP-synchronised; {figures}")
    return Check(
        "ntp",
        "warn",
        f"the kernel clock is not NTP-synchronised (adjtimex state "
        f"{state['state']}); {figures}: REALTIME may be stepped when it syncs",
        "run a time daemon (chrony, systemd-timesyncd); MONOTONIC durations are unaffected",
    )


def longest_gap(r: DoctorReport) -> Check:
    """The longest pause of a tight loop (preemption, steal)."""
    x = r.cross_checks
    detail = (
        f"the tight loop's longest pause was {_t(x.longest_gap_ns)} at "
        f"{_clock_time(x.longest_gap_at)} ({x.longest_gap_offset_s:.1f} s into the probe)"
    )
    if x.longest_gap_ns >= GAP_FAIL_NS:
        return Check(
            "longest_gap",
            "fail",
            detail + ": the machine froze",
            "find what froze it (VM pause, swap storm) before measuring",
        )
    if x.longest_gap_ns >= GAP_WARN_NS:
        return Check(
            "longest_gap",
            "warn",
            detail + " (preempted, or the hypervisor stole the "
            "CPU): a sample can be inflated by that much",
            "close other programs, or pin the benchmark to a quiet CPU (taskset -c N)",
        )
    return Check("longest_gap", "ok", detail)


def sleep(r: DoctorReport) -> Check:
    """Sleep accuracy: how much longer than asked sleeps take."""
    if not r.sleep:
        return _na("sleep", "no sleeps were measured")
    parts = ", ".join(
        f"{_t(s.request_ns)} → p50 {_t(s.p50_ns)} p99 {_t(s.p99_ns)}" for s in r.sleep
    )
    detail = f"sleeps took {parts} (timer slack {_t(r.timer_slack_ns)})"
    p50_over = max(s.p50_ns - s.request_ns for s in r.sleep)
    p99_over = max(s.p99_ns - s.request_ns for s in r.sleep)
    if p50_over > SLEEP_FAIL_OVERSHOOT_NS:
        return Check(
            "sleep",
            "fail",
            detail + f": typical sleeps overshoot by {_t(p50_over)}",
            "timer interrupts are coarse here (a tickless "
            "or virtualised timer?); don't benchmark code that sleeps or waits",
        )
    if p50_over > SLEEP_WARN_OVERSHOOT_NS or p99_over > 5 * SLEEP_WARN_OVERSHOOT_NS:
        return Check(
            "sleep",
            "warn",
            detail + f": sleeps overshoot by up to {_t(p99_over)}",
            "timed waits in the code under test run long; lower the timer slack "
            "(prctl PR_SET_TIMERSLACK) or keep sleeps out of benchmarks",
        )
    return Check("sleep", "ok", detail)


def governor(r: DoctorReport) -> Check:
    """The CPU frequency governor (pyperf system tune sets 'performance')."""
    gov = r.cpu.governor
    if gov is None:
        return _na("governor", "cpufreq is not exposed (usual in VMs and containers)")
    if gov == "performance":
        return Check("governor", "ok", "frequency governor is 'performance'")
    return Check(
        "governor",
        "warn",
        f"frequency governor is {gov!r}: the CPU clock follows the load, so timings drift",
        "sudo cpupower frequency-set -g performance",
    )


def _on_off(
    name: str, value: bool | None, missing: str, off: str, on: tuple[str, str, str]
) -> Check:
    """A check of a switch: n/a when unknown, ok when off, ``on`` = (status, detail, action)."""
    if value is None:
        return _na(name, missing)
    return Check(name, *on) if value else Check(name, "ok", off)


def boost(r: DoctorReport) -> Check:
    """Turbo/boost: the clock rate then depends on temperature and the other cores."""
    return _on_off(
        "boost",
        r.cpu.boost,
        "no cpufreq boost or intel_pstate no_turbo file",
        "turbo boost is off",
        (
            "warn",
            "turbo boost is on: the clock rate depends on temperature and on the other cores' load",
            "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/"
            "boost (intel_pstate: echo 1 | sudo tee .../intel_pstate/no_turbo)",
        ),
    )


def smt(r: DoctorReport) -> Check:
    """Simultaneous multithreading: a busy sibling thread shares the core."""
    return _on_off(
        "smt",
        r.cpu.smt,
        "/sys/devices/system/cpu/smt is not readable",
        "SMT (hyper-threading) is off",
        (
            "ok",
            "SMT (hyper-threading) is on: a busy sibling thread slows code on the same core",
            "if numbers wobble, pin benchmarks to a core whose sibling is idle (taskset)",
        ),
    )


def isolated_cpus(r: DoctorReport) -> Check:
    """CPUs shielded from the scheduler (isolcpus=), where benchmarks run undisturbed."""
    iso = r.cpu.isolated_cpus
    if iso is None:
        return _na("isolated_cpus", "/sys/devices/system/cpu/isolated is not readable")
    if not iso:
        return Check(
            "isolated_cpus",
            "ok",
            "no CPUs are isolated (isolcpus= would shield benchmark CPUs from other tasks)",
        )
    return Check(
        "isolated_cpus",
        "ok",
        f"CPUs {iso} are isolated",
        f"run benchmarks there: taskset -c {iso} perflab run …",
    )


def steal(r: DoctorReport) -> Check:
    """CPU time the hypervisor gave to other guests during the probe."""
    frac = r.cpu.steal_fraction
    if frac is None:
        return _na("steal", "/proc/stat has no steal column")
    detail = f"the hypervisor stole {frac:.1%} of CPU time during the probe ({_t(r.cpu.steal_ns)})"
    if frac > STEAL_FAIL:
        return Check(
            "steal",
            "fail",
            detail,
            "this VM's neighbours take its CPU; measure on a dedicated machine",
        )
    if frac > STEAL_WARN:
        return Check(
            "steal",
            "warn",
            detail,
            "results vary with the neighbours' load; use a dedicated or quieter VM",
        )
    return Check("steal", "ok", detail)


def context_switches(r: DoctorReport) -> Check:
    """How often the probe was preempted (involuntary context switches)."""
    seconds = max(r.cross_checks.duration_s, 1e-9)
    per_s = r.cpu.involuntary_switches / seconds
    machine = (
        f"; the machine made {r.cpu.context_switches / seconds:,.0f} context switches/s"
        if r.cpu.context_switches is not None
        else ""
    )
    detail = (
        f"the probe was preempted {r.cpu.involuntary_switches:,} times in {seconds:.1f} s{machine}"
    )
    if per_s > PREEMPTIONS_WARN_PER_S:
        return Check(
            "context_switches",
            "warn",
            detail + ": other programs compete for the CPU",
            "close them, or pin the benchmark to a quiet CPU (taskset -c N)",
        )
    return Check("context_switches", "ok", detail)


def load(r: DoctorReport) -> Check:
    """Load average against the CPUs this process may use (it includes the probe itself)."""
    avg, cpus = r.cpu.load_average, r.cpu.usable_cpus or r.cpu.cpu_count
    if not avg or not cpus:
        return _na("load", "no load average")
    detail = f"load average {avg[0]:.2f} (1 min) on {cpus} CPUs"
    if avg[0] > cpus:
        return Check(
            "load",
            "warn",
            detail + ": more runnable tasks than CPUs",
            "close other programs, or expect noisy numbers",
        )
    return Check("load", "ok", detail)


def memory_pressure(r: DoctorReport) -> Check:
    """Memory pressure (PSI): tasks stalled waiting for memory."""
    psi = r.cpu.memory_pressure
    if not psi or "some_avg10" not in psi:
        return _na("memory_pressure", "/proc/pressure/memory is not readable")
    detail = f"tasks stalled on memory {psi['some_avg10']:.1f}% of the last 10 s"
    if psi["some_avg10"] > MEMORY_PRESSURE_WARN:
        return Check(
            "memory_pressure",
            "warn",
            detail,
            "free memory: reclaim and page faults add noise to every timing",
        )
    return Check("memory_pressure", "ok", detail)


def speed_states(r: DoctorReport) -> Check:
    """The machine's speed states: whether separately measured runs can be compared
    (:func:`perflab.analyze.speed_states.check`)."""
    from perflab.analyze.speed_states import check

    return check(r.speed_states, r.speed_states_note)


#: Every check, in report order.
CHECKS: tuple[Callable[[DoctorReport], Check], ...] = (
    clocksource,
    tsc,
    hypervisor,
    read_cost,
    resolution,
    backward_steps,
    clock_steps,
    rate_vs_tsc,
    slewing,
    suspend,
    ntp,
    longest_gap,
    sleep,
    governor,
    boost,
    smt,
    isolated_cpus,
    steal,
    context_switches,
    load,
    memory_pressure,
    speed_states,
)


def verdicts(report: DoctorReport) -> list[Check]:
    """Run every check on ``report``, in report order. O(steps + clocks)."""
    return [check(report) for check in CHECKS]
