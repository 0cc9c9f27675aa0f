//! perflab's native core, free of Python types so that `cargo test` alone
//! exercises it. The PyO3 bindings live in the sibling crate `perflab-core`.
//!
//! Layout: [`changepoints`] (PELT over a benchmark's history), [`clock`]
//! (clock probes, the per-sample bracket, doctor's probe), [`counters`] (per-sample
//! perf and scheduler counters), [`duration`] (the one duration grammar of every option), [`load`] (the
//! HTTP load engine), [`server`] (the `perflab serve` target), [`hdr`]
//! (bounded decoding of untrusted HdrHistograms), [`sys`] (thin OS
//! helpers shared by the engine and the server) and [`trace`] (the span
//! recorder of `perflab.trace`).

pub mod changepoints;
pub mod clock;
pub mod counters;
pub mod duration;
pub mod hdr;
pub mod load;
pub mod server;
pub mod sys;
pub mod trace;

/// Held by the tests that time the machine (timer precision) and by the
/// tests that load both cores flat out, so that `cargo test`'s parallel
/// threads never run one beside the other.
#[cfg(test)]
pub(crate) static CORES_TEST_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Take [`CORES_TEST_LOCK`] (a test that panicked while holding it does not
/// poison the others).
#[cfg(test)]
pub(crate) fn cores_test_lock() -> std::sync::MutexGuard<'static, ()> {
    CORES_TEST_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
