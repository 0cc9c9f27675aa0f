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
