"""Classic benchmark programs, written for perflab's agreement benchmarks (1–100 ms a call).

Each workload is a plain function with no arguments, so that the same code runs
under perflab, pyperf and a plain ``perf_counter_ns`` loop:

* ``richards``: Martin Richards' operating-system task scheduler simulation
  (interpreter-heavy: method calls, attribute access, small objects);
* ``nbody``: the n-body simulation of the Jovian planets (float arithmetic);
* ``sudoku``: a constraint solver (constraint propagation + depth-first search
  on the fewest-candidates square) over hard puzzles;
* ``fannkuch``: Fannkuch-redux, pancake flips of every permutation (integer
  lists, slicing);
* ``json_roundtrip``: dump and load a realistic nested document (stdlib C code).

``check()`` verifies each program's known answer (Richards' packet and hold
counts, the fannkuch checksum, a solved sudoku, the n-body energies), so a
speed-up can never come from a broken program.
"""

from __future__ import annotations

import json
import math

# ---------------------------------------------------------------- Richards

I_IDLE, I_WORK, I_HANDLER_A, I_HANDLER_B, I_DEV_A, I_DEV_B = range(1, 7)
K_DEV, K_WORK = 1000, 1001
BUFFER = 4
#: task states are bit sets: a packet is pending, the task waits, the task is held
PENDING, WAITING, HELD = 1, 2, 4


class Packet:
    """A message between tasks: a link in a queue, its destination, kind and payload."""

    __slots__ = ("link", "ident", "kind", "datum", "data")

    def __init__(self, link: Packet | None, ident: int, kind: int) -> None:
        self.link, self.ident, self.kind = link, ident, kind
        self.datum = 0
        self.data = [0] * BUFFER

    def append_to(self, queue: Packet | None) -> Packet:
        """This packet at the end of ``queue``; the queue's head."""
        self.link = None
        if queue is None:
            return self
        tail = queue
        while tail.link is not None:
            tail = tail.link
        tail.link = self
        return queue


class Task:
    """A task control block; subclasses hold the task's body in ``run``."""

    def __init__(
        self, scheduler: Scheduler, ident: int, priority: int, queue: Packet | None, state: int
    ) -> None:
        self.scheduler, self.ident, self.priority = scheduler, ident, priority
        self.queue, self.state = queue, state
        self.link = scheduler.tasks_head
        scheduler.tasks_head = self
        scheduler.table[ident] = self


class IdleTask(Task):
    """Releases the two devices in a pseudo-random order until its count runs out."""

    def __init__(self, scheduler: Scheduler, count: int) -> None:
        super().__init__(scheduler, I_IDLE, 0, None, 0)
        self.control, self.count = 1, count

    def run(self, packet: Packet | None) -> Task | None:
        s = self.scheduler
        self.count -= 1
        if self.count == 0:
            return s.hold()
        if self.control & 1 == 0:
            self.control >>= 1
            return s.release(I_DEV_A)
        self.control = (self.control >> 1) ^ 0xD008
        return s.release(I_DEV_B)


class WorkTask(Task):
    """Fills work packets with letters and sends them to the handlers in turn."""

    def __init__(self, scheduler: Scheduler, queue: Packet) -> None:
        super().__init__(scheduler, I_WORK, 1000, queue, PENDING | WAITING)
        self.destination, self.letter = I_HANDLER_A, 0

    def run(self, packet: Packet | None) -> Task | None:
        s = self.scheduler
        if packet is None:
            return s.wait()
        self.destination = I_HANDLER_A + I_HANDLER_B - self.destination
        packet.ident, packet.datum = self.destination, 0
        for i in range(BUFFER):
            self.letter = self.letter + 1 if self.letter < 26 else 1
            packet.data[i] = self.letter
        return s.queue_packet(packet)


class HandlerTask(Task):
    """Copies the letters of work packets, one per device packet, to its device."""

    def __init__(self, scheduler: Scheduler, ident: int, priority: int, queue: Packet) -> None:
        super().__init__(scheduler, ident, priority, queue, PENDING | WAITING)
        self.work: Packet | None = None
        self.devices: Packet | None = None

    def run(self, packet: Packet | None) -> Task | None:
        s = self.scheduler
        if packet is not None:
            if packet.kind == K_WORK:
                self.work = packet.append_to(self.work)
            else:
                self.devices = packet.append_to(self.devices)
        work = self.work
        if work is not None:
            count = work.datum
            if count >= BUFFER:
                self.work = work.link
                return s.queue_packet(work)
            device = self.devices
            if device is not None:
                self.devices = device.link
                device.datum = work.data[count]
                work.datum = count + 1
                return s.queue_packet(device)
        return s.wait()


class DeviceTask(Task):
    """Holds one packet until the idle task releases it, then sends it back."""

    def __init__(self, scheduler: Scheduler, ident: int, priority: int) -> None:
        super().__init__(scheduler, ident, priority, None, WAITING)
        self.pending: Packet | None = None

    def run(self, packet: Packet | None) -> Task | None:
        s = self.scheduler
        if packet is None:
            if self.pending is None:
                return s.wait()
            packet, self.pending = self.pending, None
            return s.queue_packet(packet)
        self.pending = packet
        return s.hold()


class Scheduler:
    """Runs the highest-priority runnable task until every task is held or waiting."""

    def __init__(self) -> None:
        self.tasks_head: Task | None = None
        self.table: list[Task | None] = [None] * 7
        self.current: Task | None = None
        self.queued = self.holds = 0

    def hold(self) -> Task | None:
        self.holds += 1
        self.current.state |= HELD
        return self.current.link

    def wait(self) -> Task:
        self.current.state |= WAITING
        return self.current

    def release(self, ident: int) -> Task:
        task = self.table[ident]
        task.state &= ~HELD
        return task if task.priority > self.current.priority else self.current

    def queue_packet(self, packet: Packet) -> Task:
        task = self.table[packet.ident]
        self.queued += 1
        packet.link, packet.ident = None, self.current.ident
        if task.queue is None:
            task.queue = packet
            task.state |= PENDING
            return task if task.priority > self.current.priority else self.current
        task.queue = packet.append_to(task.queue)
        return self.current

    def schedule(self) -> None:
        task = self.tasks_head
        while task is not None:
            state = task.state
            if state & HELD or state == WAITING:
                task = task.link
                continue
            packet = None
            if state == PENDING | WAITING:
                packet = task.queue
                task.queue = packet.link
                task.state = PENDING if task.queue is not None else 0
            self.current = task
            task = task.run(packet)


def richards(count: int = 4000) -> tuple[int, int]:
    """One Richards run; returns (packets queued, holds). O(count)."""
    s = Scheduler()
    IdleTask(s, count)
    work = Packet(Packet(None, 0, K_WORK), 0, K_WORK)
    WorkTask(s, work)
    for handler, device, priority in ((I_HANDLER_A, I_DEV_A, 2000), (I_HANDLER_B, I_DEV_B, 3000)):
        queue = None
        for _ in range(3):
            queue = Packet(queue, device, K_DEV)
        HandlerTask(s, handler, priority, queue)
    DeviceTask(s, I_DEV_A, 4000)
    DeviceTask(s, I_DEV_B, 5000)
    s.schedule()
    return s.queued, s.holds


# ---------------------------------------------------------------- n-body

SOLAR_MASS = 4 * math.pi * math.pi
DAYS_PER_YEAR = 365.24
_PLANETS = [  # x, y, z (AU), vx, vy, vz (AU/day), mass (solar masses)
    (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0),
    (
        4.84143144246472090,
        -1.16032004402742839,
        -0.103622044471123109,
        1.66007664274403694e-03,
        7.69901118419740425e-03,
        -6.90460016972063023e-05,
        9.54791938424326609e-04,
    ),
    (
        8.34336671824457987,
        4.12479856412430479,
        -0.403523417114321381,
        -2.76742510726862411e-03,
        4.99852801234917238e-03,
        2.30417297573763929e-05,
        2.85885980666130812e-04,
    ),
    (
        12.8943695621391310,
        -15.1111514016986312,
        -0.223307578892655734,
        2.96460137564761618e-03,
        2.37847173959480950e-03,
        -2.96589568540237556e-05,
        4.36624404335156298e-05,
    ),
    (
        15.3796971148509165,
        -25.9193146099879641,
        0.179258772950371181,
        2.68067772490389322e-03,
        1.62824170038242295e-03,
        -9.51592254519715870e-05,
        5.15138902046611451e-05,
    ),
]


def _bodies() -> list[list[float]]:
    bodies = [
        [x, y, z, vx * DAYS_PER_YEAR, vy * DAYS_PER_YEAR, vz * DAYS_PER_YEAR, m * SOLAR_MASS]
        for x, y, z, vx, vy, vz, m in _PLANETS
    ]
    px = sum(b[3] * b[6] for b in bodies)
    py = sum(b[4] * b[6] for b in bodies)
    pz = sum(b[5] * b[6] for b in bodies)
    sun = bodies[0]
    sun[3], sun[4], sun[5] = -px / SOLAR_MASS, -py / SOLAR_MASS, -pz / SOLAR_MASS
    return bodies


def energy(bodies: list[list[float]]) -> float:
    """Kinetic plus potential energy of the system."""
    e = 0.0
    for i, (x, y, z, vx, vy, vz, m) in enumerate(bodies):
        e += 0.5 * m * (vx * vx + vy * vy + vz * vz)
        for x2, y2, z2, _, _, _, m2 in bodies[i + 1 :]:
            e -= m * m2 / math.sqrt((x - x2) ** 2 + (y - y2) ** 2 + (z - z2) ** 2)
    return e


def advance(bodies: list[list[float]], steps: int, dt: float = 0.01) -> None:
    """Move the bodies ``steps`` times by ``dt`` (symplectic Euler)."""
    pairs = [(bodies[i], bodies[j]) for i in range(len(bodies)) for j in range(i + 1, len(bodies))]
    for _ in range(steps):
        for b1, b2 in pairs:
            dx, dy, dz = b1[0] - b2[0], b1[1] - b2[1], b1[2] - b2[2]
            mag = dt / ((dx * dx + dy * dy + dz * dz) ** 1.5)
            m1, m2 = b1[6] * mag, b2[6] * mag
            b1[3] -= dx * m2
            b1[4] -= dy * m2
            b1[5] -= dz * m2
            b2[3] += dx * m1
            b2[4] += dy * m1
            b2[5] += dz * m1
        for b in bodies:
            b[0] += dt * b[3]
            b[1] += dt * b[4]
            b[2] += dt * b[5]


def nbody(steps: int = 2000) -> float:
    """Simulate ``steps`` steps from the start; returns the final energy. O(steps)."""
    bodies = _bodies()
    advance(bodies, steps)
    return energy(bodies)


# ---------------------------------------------------------------- sudoku

_DIGITS = "123456789"
_SQUARES = [r * 9 + c for r in range(9) for c in range(9)]
_UNITS = (
    [[r * 9 + c for c in range(9)] for r in range(9)]
    + [[r * 9 + c for r in range(9)] for c in range(9)]
    + [
        [r * 9 + c for r in range(br, br + 3) for c in range(bc, bc + 3)]
        for br in (0, 3, 6)
        for bc in (0, 3, 6)
    ]
)
_UNITS_OF = [[u for u in _UNITS if s in u] for s in _SQUARES]
_PEERS = [sorted(set().union(*_UNITS_OF[s]) - {s}) for s in _SQUARES]
#: hard puzzles (each has one solution); "." is an empty square
PUZZLES = [
    "4.....8.5.3..........7......2.....6.....8.4......1.......6.3.7.5..2.....1.4......",
    "52...6.........7.13...........4..8..6......5...........418.........3..2...87.....",
    "6.....8.3.4.7.................5.4.7.3..2.....1.6.......2.....5.....8.6......1....",
]


def _assign(cands: list[str], square: int, digit: str) -> list[str] | None:
    """Eliminate every other digit from ``square``; None on a contradiction."""
    for other in cands[square].replace(digit, ""):
        if _eliminate(cands, square, other) is None:
            return None
    return cands


def _eliminate(cands: list[str], square: int, digit: str) -> list[str] | None:
    """Remove ``digit`` from ``square`` and propagate (single candidate, single place)."""
    if digit not in cands[square]:
        return cands
    left = cands[square] = cands[square].replace(digit, "")
    if not left:
        return None
    if len(left) == 1:
        for peer in _PEERS[square]:
            if _eliminate(cands, peer, left) is None:
                return None
    for unit in _UNITS_OF[square]:
        places = [s for s in unit if digit in cands[s]]
        if not places:
            return None
        if len(places) == 1 and _assign(cands, places[0], digit) is None:
            return None
    return cands


def _search(cands: list[str] | None) -> list[str] | None:
    """Depth-first search, branching on the square with the fewest candidates."""
    if cands is None:
        return None
    if all(len(c) == 1 for c in cands):
        return cands
    square = min((s for s in _SQUARES if len(cands[s]) > 1), key=lambda s: len(cands[s]))
    for digit in cands[square]:
        found = _search(_assign(list(cands), square, digit))
        if found is not None:
            return found
    return None


def solve(puzzle: str) -> str | None:
    """The solution of ``puzzle`` (81 characters) as 81 digits, or None."""
    cands: list[str] | None = [_DIGITS] * 81
    for square, ch in enumerate(puzzle):
        if ch in _DIGITS and cands is not None:
            cands = _assign(cands, square, ch)
    found = _search(cands)
    return "".join(found) if found else None


def sudoku() -> list[str | None]:
    """Solve every puzzle of :data:`PUZZLES`."""
    return [solve(p) for p in PUZZLES]


def _valid(solution: str) -> bool:
    return all(sorted(solution[s] for s in unit) == list(_DIGITS) for unit in _UNITS)


# ---------------------------------------------------------------- fannkuch-redux


def fannkuch(n: int = 7) -> tuple[int, int]:
    """Fannkuch-redux of size ``n``: (checksum, most flips). O(n! · n)."""
    perm1 = list(range(n))
    count = [0] * n
    checksum = max_flips = 0
    permutations, r = 0, n
    while True:
        while r != 1:
            count[r - 1] = r
            r -= 1
        perm = perm1[:]
        flips = 0
        k = perm[0]
        while k:
            perm[: k + 1] = perm[k::-1]
            flips += 1
            k = perm[0]
        max_flips = max(max_flips, flips)
        checksum += flips if permutations % 2 == 0 else -flips
        while True:
            if r == n:
                return checksum, max_flips
            perm0 = perm1[0]
            perm1[:r] = perm1[1 : r + 1]
            perm1[r] = perm0
            count[r] -= 1
            if count[r] > 0:
                break
            r += 1
        permutations += 1


# ---------------------------------------------------------------- json


def _document() -> dict:
    """A realistic nested document: 400 orders with customers, lines and text."""
    return {
        "orders": [
            {
                "id": i,
                "customer": {
                    "name": f"customer {i % 97}",
                    "city": ["Lyon", "Oslo", "Kyoto"][i % 3],
                    "vip": i % 7 == 0,
                },
                "lines": [
                    {
                        "sku": f"SKU-{(i * 31 + j) % 1000:04d}",
                        "qty": j + 1,
                        "price": round(1.5 + (i * j) % 40 * 0.75, 2),
                    }
                    for j in range(i % 5 + 1)
                ],
                "note": "deliver before noon" * (i % 3),
            }
            for i in range(400)
        ]
    }


_DOCUMENT = _document()


def json_roundtrip() -> int:
    """Serialize and parse the document; returns the text's length."""
    text = json.dumps(_DOCUMENT)
    json.loads(text)
    return len(text)


# ---------------------------------------------------------------- registry

WORKLOADS = {
    "richards": richards,
    "nbody": nbody,
    "sudoku": sudoku,
    "fannkuch": fannkuch,
    "json_roundtrip": json_roundtrip,
}


def check() -> None:
    """Verify every workload's known answer. Raises AssertionError on a broken program."""
    assert richards(10_000) == (23_246, 9_297), richards(10_000)  # the published counts
    assert fannkuch(7) == (228, 16), fannkuch(7)  # the Benchmarks Game reference output
    assert all(s is not None and _valid(s) for s in sudoku())
    bodies = _bodies()  # the Benchmarks Game reference output for 1,000 steps
    assert f"{energy(bodies):.9f}" == "-0.169075164", energy(bodies)
    advance(bodies, 1000)
    assert f"{energy(bodies):.9f}" == "-0.169087605", energy(bodies)
    assert json.loads(json.dumps(_DOCUMENT)) == _DOCUMENT


if __name__ == "__main__":
    import time

    check()
    for name, fn in WORKLOADS.items():
        t0 = time.perf_counter()
        fn()
        print(f"{name}: {(time.perf_counter() - t0) * 1e3:.1f} ms")
