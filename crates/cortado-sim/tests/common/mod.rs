//! Helpers shared by the integration tests: where the shared traces and the reference table
//! are, and scratch directories.

#![allow(dead_code)] // Each test file uses its own subset.

use std::path::{Path, PathBuf};

/// The shared traces: `$CORTADO_TRACES`, or `../shared/traces` from the repository root.
pub fn traces_dir() -> PathBuf {
    match std::env::var_os("CORTADO_TRACES") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces"),
    }
}

/// The reference table: `$CORTADO_REFERENCE`, or `../shared/reference/hit-ratios.csv` from the
/// repository root.
pub fn reference_csv() -> PathBuf {
    match std::env::var_os("CORTADO_REFERENCE") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/reference/hit-ratios.csv"),
    }
}

/// A fresh scratch directory, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A new empty directory named after the test.
    pub fn new(test: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("cortado-sim-test-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// A path inside the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes a file inside the directory and returns its path.
    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, contents).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether `path` exists; prints a skip note naming `what` when it does not.
pub fn present(path: &Path, what: &str) -> bool {
    if path.exists() {
        return true;
    }
    eprintln!(
        "note: {} not found (set CORTADO_TRACES / CORTADO_REFERENCE); {what} skipped",
        path.display()
    );
    false
}
