//! perflab's native core, free of Python types so that `cargo test` alone
//! exercises it. The PyO3 bindings live in the sibling crate `perflab-core`.

pub mod clock;
pub mod engine;
pub mod server;
