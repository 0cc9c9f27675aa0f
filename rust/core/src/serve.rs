//! Bindings of the `perflab serve` target: start it on a background thread
//! and return a handle at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use perflab_engine::server::{self, ServerConfig, ServerHandle};
use pyo3::prelude::*;

use crate::convert::{bad, from_py, to_py};
use crate::http::POLL;

/// A running `perflab serve` target (see `serve`).
#[pyclass(module = "perflab._core")]
pub struct Server {
    address: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Mutex<Option<ServerHandle>>,
}

#[pymethods]
impl Server {
    /// Bound address as "host:port" ("[::1]:port" for IPv6).
    #[getter]
    fn address(&self) -> String {
        self.address.to_string()
    }

    /// Bound IP address.
    #[getter]
    fn host(&self) -> String {
        self.address.ip().to_string()
    }

    /// Bound port (the real one when 0 was asked for).
    #[getter]
    fn port(&self) -> u16 {
        self.address.port()
    }

    /// True until the server has stopped.
    #[getter]
    fn running(&self) -> bool {
        self.lock().as_ref().is_some_and(|h| !h.is_finished())
    }

    /// Counters so far: {connections, requests, errors_injected} ({}
    /// once the server has been joined).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.lock().as_ref() {
            Some(h) => to_py(py, h.stats()),
            None => Ok(pyo3::types::PyDict::new(py).into_any()),
        }
    }

    /// Ask the server to stop; returns at once.
    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Block until the server stops (after `stop()` from another
    /// thread, or Ctrl-C), with the GIL released.
    ///
    /// Raises:
    ///     KeyboardInterrupt: on Ctrl-C, after stopping the server.
    fn join(&self, py: Python<'_>) -> PyResult<()> {
        loop {
            let running = self.running();
            if !running {
                break;
            }
            py.detach(|| std::thread::sleep(POLL));
            if let Err(e) = py.check_signals() {
                self.stop.store(true, Ordering::Relaxed);
                self.finish(py);
                return Err(e);
            }
        }
        self.finish(py);
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(&self, py: Python<'_>, _t: Py<PyAny>, _v: Py<PyAny>, _tb: Py<PyAny>) -> bool {
        self.stop.store(true, Ordering::Relaxed);
        self.finish(py);
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "<perflab serve on {} ({})>",
            self.address,
            if self.running() { "running" } else { "stopped" }
        )
    }
}

impl Server {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<ServerHandle>> {
        self.handle.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn finish(&self, py: Python<'_>) {
        if let Some(mut h) = self.lock().take() {
            h.stop();
            py.detach(move || h.join());
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Start a `perflab serve` target on a background thread and return at
/// once.
///
/// Args:
///     config: dict with the keys of the engine's `ServerConfig`, all
///         optional (None counts as absent); every time is text in the one
///         duration grammar (`parse_duration_s`: "0.5" is half a second):
///         host (str): bind address ("127.0.0.1").
///         port (int): 0 (default) picks a free port; see .port.
///         delay (str): per-request delay: "1ms", "uniform:1ms:5ms",
///             "exp:2ms" (mean).
///         stall (str): "1s/10s" freezes all responses for 1 s at the
///             end of every 10 s period since start.
///         error_rate (float): fraction answered 500 (0).
///         body_size (int): response body bytes (0).
///         fault (str): "none", "close_mid_response" (half a body, then
///             close) or "endless_body" (a chunk every 100 ms, forever).
///         serialize (str): a global lock held this long per request,
///             e.g. "0.2ms": throughput saturates at 1/that.
///         threads (int): server worker threads (1).
///         seed (int): seed of the error draws and delay distribution.
///
/// Returns:
///     Server with .address ("host:port"), .host, .port, .running,
///     .stats(), .stop(), .join(); usable as a context manager.
///
/// Raises:
///     ValueError: "serve config: {key}: {reason}" for a bad value
///         (unknown key, bad or negative duration, ...), or the engine's
///         reason (error_rate outside [0, 1], the address cannot be bound).
#[pyfunction]
#[pyo3(signature = (config=None))]
fn serve(config: Option<&Bound<'_, PyAny>>) -> PyResult<Server> {
    let c: ServerConfig = match config {
        Some(d) => from_py(d, "serve config")?,
        None => ServerConfig::default(),
    };
    let handle = server::start(c).map_err(bad)?;
    Ok(Server {
        address: handle.address(),
        stop: handle.stop_flag(),
        handle: Mutex::new(Some(handle)),
    })
}

/// Add this module's functions and classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_class::<Server>()
}
