"""The callgrind output reader on real files (trimmed), the Valgrind command line, and the Rust core's client requests outside Valgrind (no-ops)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from perflab import _core
from perflab.analyze.counts import CACHE_EVENTS
from perflab.engines import callgrind

DATA = Path(__file__).parent / "data" / "callgrind"


def test_reads_a_client_request_dump_with_cache_events() -> None:
    with (DATA / "callgrind.out.4916.1").open() as handle:
        dump = callgrind.parse_dump(handle)
    assert (dump.pid, dump.part, dump.thread) == (4916, 1, None)
    assert dump.trigger == "Client Request: perflab:sample:0"
    assert dump.reason == "sample:0"
    assert dump.events["Ir"] == 257106  # the summary line, not totals (257114)
    assert dump.events["DLmw"] == 119
    assert list(dump.events) == list(CACHE_EVENTS)
    assert "cgt.py" in dump.command


def test_wrapped_summary_falls_back_to_totals() -> None:
    # Callgrind's final dump after instrumentation stopped underflows its summary
    with (DATA / "callgrind.out.4916").open() as handle:
        dump = callgrind.parse_dump(handle)
    assert dump.trigger == "Program termination" and dump.reason is None
    assert dump.events["Ir"] == 1114 and dump.events["Dr"] == 338


def test_missing_trailing_values_are_zero_and_junk_is_refused() -> None:
    text = "events: Ir Dr Dw\nsummary: 10 4\n"
    assert callgrind.parse_dump(io.StringIO(text)).events == {"Ir": 10, "Dr": 4, "Dw": 0}
    with pytest.raises(ValueError, match="events"):
        callgrind.parse_dump(io.StringIO("summary: 10\n"))
    with pytest.raises(ValueError, match="summary"):
        callgrind.parse_dump(io.StringIO("events: Ir\nfn=x\n0 5\n"))
    with pytest.raises(ValueError):
        callgrind.parse_dump(io.StringIO("events: Ir\nsummary: lots\n"))


def test_read_dumps_orders_parts_and_filters_by_pid(tmp_path: Path) -> None:
    for name in ("callgrind.out.4916.1", "callgrind.out.4916", "callgrind.out.29098.2"):
        shutil.copy(DATA / name, tmp_path / name)
    (tmp_path / "callgrind.out.77.1").write_text("half a fi")  # killed while writing
    (tmp_path / "notes.txt").write_text("events: Ir\nsummary: 1\n")
    dumps = callgrind.read_dumps(tmp_path)
    assert [(d.pid, d.part) for d in dumps] == [(4916, 1), (4916, 3), (29098, 2)]
    own = callgrind.read_dumps(tmp_path, pid=29098)
    assert callgrind.dumps_by_reason(own)["empty:0"].events == {"Ir": 1571}


def test_valgrind_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: f"/bin/{name}")
    argv = callgrind.valgrind_command(tmp_path, cache_sim=True, trace_children=True)
    assert argv[:3] == ["/bin/setarch", callgrind.os.uname().machine, "-R"]
    assert argv[3] == "/bin/valgrind"
    assert "--instr-atstart=no" in argv and "--cache-sim=yes" in argv
    assert "--trace-children=yes" in argv
    assert f"--callgrind-out-file={tmp_path}/callgrind.out.%p" in argv
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert callgrind.no_aslr_prefix() == []
    with pytest.raises(callgrind.ValgrindMissing, match="apt-get install valgrind"):
        callgrind.valgrind_command(tmp_path)


def test_client_requests_are_no_ops_outside_valgrind() -> None:
    assert _core.valgrind_running() == 0
    _core.callgrind_start_instrumentation()
    _core.callgrind_zero_stats()
    _core.callgrind_toggle_collect()
    _core.callgrind_toggle_collect()
    _core.callgrind_dump_stats()
    _core.callgrind_dump_stats("perflab:sample:0")
    _core.callgrind_stop_instrumentation()
    with pytest.raises(ValueError, match="200 characters"):
        _core.callgrind_dump_stats("x" * 201)
    with pytest.raises(ValueError, match="NUL"):
        _core.callgrind_dump_stats("a\0b")
