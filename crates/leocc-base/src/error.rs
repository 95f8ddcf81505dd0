//! The one error for a file a user gave us (a trace, a recording, a plan, an output path): it
//! names the file, the line and what is wrong, so a user can open the file at that line and
//! fix it.

use std::fmt;
use std::path::Path;

/// A malformed, unreadable or unwritable file. `line` is 1-based; 0 means the problem concerns the
/// whole file (it cannot be opened, it is empty, or a cross-section check failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    /// The file (or directory) the problem is in, as the user named it.
    pub file: String,
    /// 1-based line number; 0 when the problem is not tied to one line.
    pub line: usize,
    /// What is wrong, in words a user can act on.
    pub problem: String,
}

impl FileError {
    /// An error at `line` of `file`.
    pub fn new(file: impl AsRef<Path>, line: usize, problem: impl Into<String>) -> Self {
        FileError { file: file.as_ref().display().to_string(), line, problem: problem.into() }
    }

    /// An error about the whole of `file`.
    pub fn whole(file: impl AsRef<Path>, problem: impl Into<String>) -> Self {
        Self::new(file, 0, problem)
    }

    /// An I/O failure on `file`.
    pub fn io(file: impl AsRef<Path>, e: &std::io::Error) -> Self {
        Self::whole(file, e.to_string())
    }
}

impl fmt::Display for FileError {
    /// `FILE:LINE: problem`, or `FILE: problem` when no line applies.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.file, self.line, self.problem)
        } else {
            write!(f, "{}: {}", self.file, self.problem)
        }
    }
}

impl std::error::Error for FileError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_line_and_problem() {
        let e = FileError::new("a/b.txt", 7, "negative time");
        assert_eq!(e.to_string(), "a/b.txt:7: negative time");
        assert_eq!(FileError::whole("x", "empty file").to_string(), "x: empty file");
    }
}
