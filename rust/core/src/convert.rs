//! The one converter across the seam: engine values that derive serde's
//! `Serialize` / `Deserialize` become Python objects and back through
//! pythonize (structs ↔ dicts keyed by field name, tuples ↔ tuples,
//! sequences ↔ lists, `Option` ↔ None), so no key is spelled twice.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A ValueError with `msg`: how every bad argument is reported.
pub fn bad(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// `value` as a Python object (a dict for a struct).
///
/// # Errors
/// The converter's, for a value Python cannot hold (none of the engine's).
pub fn to_py<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}

/// A config dict read into `T`: a key whose value is None counts as absent.
///
/// # Errors
/// ValueError `"{what}: {key}: {reason}"`, e.g. an unknown key (naming the
/// known ones), a value of the wrong type, or `T`'s own check.
pub fn from_py<T: DeserializeOwned>(config: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let py = config.py();
    let present = PyDict::new(py);
    let dict = config
        .cast::<PyDict>()
        .map_err(|_| bad(format!("{what} must be a dict")))?;
    for (key, value) in dict.iter() {
        if !value.is_none() {
            present.set_item(key, value)?;
        }
    }
    let any = present.into_any();
    let mut de = pythonize::Depythonizer::from_object(&any);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        match path.as_str() {
            "." => bad(format!("{what}: {}", e.inner())),
            _ => bad(format!("{what}: {path}: {}", e.inner())),
        }
    })
}
