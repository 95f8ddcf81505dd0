//! The emulator's error type: every failure says what was being done and why it failed.

use std::fmt;

/// An emulator error: a human-readable context plus the underlying cause.
#[derive(Debug)]
pub struct EmuError {
    msg: String,
}

impl EmuError {
    /// An error with just a message.
    pub fn msg(msg: impl Into<String>) -> EmuError {
        EmuError { msg: msg.into() }
    }

    /// An OS error (errno) while doing `what`.
    pub fn os(what: impl fmt::Display) -> EmuError {
        EmuError { msg: format!("{what}: {}", std::io::Error::last_os_error()) }
    }

    /// An I/O error while doing `what`.
    pub fn io(what: impl fmt::Display, e: std::io::Error) -> EmuError {
        EmuError { msg: format!("{what}: {e}") }
    }
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for EmuError {}

impl From<leocc_base::FileError> for EmuError {
    fn from(e: leocc_base::FileError) -> EmuError {
        EmuError { msg: e.to_string() }
    }
}

/// Result alias used across the crate.
pub type Result<T> = std::result::Result<T, EmuError>;
