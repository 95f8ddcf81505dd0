//! Line-level reading shared by every parser: strict LF lines, valid UTF-8, and numbers that
//! are checked for sign, NaN, range and precision before they become model values.
//!
//! Policy on CRLF: rejected everywhere, with a message that says how to fix it. Accepting it in
//! one parser and not another would make the lossless round trip depend on the parser.

/// Largest time accepted anywhere in a trace: 7 days, in microseconds. Longer traces are
/// almost certainly a unit mistake (ns or µs where ms was expected).
pub const MAX_TIME_US: u64 = 7 * 24 * 3600 * 1_000_000;
/// Largest one-way delay accepted: 10 s (a GEO path is ~0.3 s; 10 s is a unit mistake).
pub const MAX_DELAY_US: u64 = 10_000_000;
/// Largest capacity accepted at any instant: 100 Gbit/s.
pub const MAX_CAPACITY_BPS: f64 = 100e9;

/// One line of input: its 1-based number and its text without the `\n`.
pub struct Line<'a> {
    /// 1-based line number.
    pub no: usize,
    /// The line's text, without the terminating `\n`.
    pub text: &'a str,
}

/// Why `data` is not text at all (an image, an archive, random bytes), if it is not: such a
/// file should be reported as the wrong file, not by the first line-level symptom (a stray
/// carriage return, say) that would send the user to dos2unix.
pub fn not_text(data: &[u8]) -> Option<String> {
    const MAGIC: [(&[u8], &str); 6] = [
        (b"\x89PNG", "a PNG image"),
        (b"%PDF", "a PDF document"),
        (b"\x1f\x8b", "gzip-compressed data (decompress it first)"),
        (b"PK\x03\x04", "a zip archive (extract it first)"),
        (b"\x7fELF", "an executable"),
        (b"\xff\xd8\xff", "a JPEG image"),
    ];
    if let Some((_, what)) = MAGIC.iter().find(|(m, _)| data.starts_with(m)) {
        return Some(format!("not a text trace: this is {what}"));
    }
    // Text traces hold digits, letters, punctuation, spaces, tabs and newlines; CR is left to
    // the CRLF check below. Any other control byte means binary data.
    let bad = data.iter().position(|&b| is_binary_byte(b))?;
    Some(format!("not a text trace: binary data (byte 0x{:02x} at offset {bad})", data[bad]))
}

/// Splits `data` into lines, rejecting binary data (as a whole, line 0), CR line endings and
/// invalid UTF-8. A missing final newline is accepted (writers always add one).
pub fn lines(data: &[u8]) -> impl Iterator<Item = Result<Line<'_>, (usize, String)>> {
    if let Some(why) = not_text(data) {
        let once: Box<dyn Iterator<Item = Result<Line<'_>, (usize, String)>>> = Box::new(std::iter::once(Err((0, why))));
        return once;
    }
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    let parts: Box<dyn Iterator<Item = &[u8]>> =
        if body.is_empty() && data.is_empty() { Box::new(std::iter::empty()) } else { Box::new(body.split(|&b| b == b'\n')) };
    Box::new(parts.enumerate().map(|(i, raw)| {
        let no = i + 1;
        if raw.ends_with(b"\r") || raw.contains(&b'\r') {
            return Err((no, "CRLF line ending (carriage return); convert the file to LF, e.g. with dos2unix".to_string()));
        }
        std::str::from_utf8(raw).map(|text| Line { no, text }).map_err(|_| (no, "invalid UTF-8".to_string()))
    }))
}

/// Bytes at the start of a file that are sniffed for binary content (magic numbers, control
/// bytes) before it is read line by line: every magic number above and a few hundred lines of
/// a text trace, so a binary file is named as such at once, whatever its size.
pub const SNIFF_BYTES: usize = 8192;
/// Longest line [`for_each_line`] accepts, bytes. A line of a mahimahi or delay file is one
/// number (tens of bytes); without a bound, one newline-free file would be read whole.
pub const MAX_LINE_BYTES: usize = 4096;

/// Whether `b` is a control byte no text trace holds (tab, LF and CR are text; CR is left to
/// the CRLF check).
fn is_binary_byte(b: u8) -> bool {
    (b < 0x20 && !matches!(b, b'\n' | b'\t' | b'\r')) || b == 0x7f
}

/// Reads `r` line by line with the rules of [`lines`], in bounded memory: the first
/// [`SNIFF_BYTES`] are checked by [`not_text`] (a whole-file error), and then each line on its
/// own (a control byte further on is reported with its line and offset), none longer than
/// [`MAX_LINE_BYTES`]. `f` gets each line; its error stops the reading. Errors name `file`.
pub fn for_each_line<R: std::io::BufRead>(
    file: &std::path::Path,
    mut r: R,
    mut f: impl FnMut(Line<'_>) -> Result<(), crate::FileError>,
) -> Result<(), crate::FileError> {
    use crate::FileError;
    use std::io::{BufRead as _, Read as _};

    let io = |e: std::io::Error| FileError::io(file, &e);
    let head = r.fill_buf().map_err(io)?;
    if let Some(why) = not_text(&head[..head.len().min(SNIFF_BYTES)]) {
        return Err(FileError::whole(file, why));
    }
    let mut buf = Vec::with_capacity(64);
    let (mut no, mut offset) = (0usize, 0u64);
    loop {
        buf.clear();
        let n = (&mut r).take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut buf).map_err(io)?;
        if n == 0 {
            return Ok(());
        }
        no += 1;
        let raw = match buf.strip_suffix(b"\n") {
            Some(raw) => raw,
            None if n > MAX_LINE_BYTES => {
                return Err(FileError::new(file, no, format!("line longer than {MAX_LINE_BYTES} bytes: not a trace of one value per line")));
            }
            None => &buf[..], // the last line, without a final newline
        };
        if let Some(pos) = raw.iter().position(|&b| is_binary_byte(b)) {
            return Err(FileError::new(
                file,
                no,
                format!("not a text trace: binary data (byte 0x{:02x} at offset {})", raw[pos], offset + pos as u64),
            ));
        }
        if raw.contains(&b'\r') {
            return Err(FileError::new(file, no, "CRLF line ending (carriage return); convert the file to LF, e.g. with dos2unix"));
        }
        let text = std::str::from_utf8(raw).map_err(|_| FileError::new(file, no, "invalid UTF-8"))?;
        f(Line { no, text })?;
        offset += n as u64;
    }
}

/// Splits a line into whitespace-separated columns and checks their number.
pub fn columns<'a>(text: &'a str, want: usize, what: &str) -> Result<Vec<&'a str>, String> {
    let cols: Vec<&str> = text.split_ascii_whitespace().collect();
    if cols.len() != want {
        return Err(format!(
            "expected {want} column{} ({what}), found {}",
            if want == 1 { "" } else { "s" },
            cols.len()
        ));
    }
    Ok(cols)
}

/// Describes why `s` is not a non-negative number, for the common mistakes.
fn not_a_number(s: &str, what: &str) -> String {
    let l = s.to_ascii_lowercase();
    if s.starts_with('-') {
        format!("negative {what}: {s}")
    } else if l.contains("nan") {
        format!("{what} is NaN")
    } else if l.contains("inf") {
        format!("{what} is infinite: {s}")
    } else {
        format!("{what} is not a number: {s:?}")
    }
}

/// Parses a non-negative integer (no sign, no decimals).
pub fn parse_u64(s: &str, what: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        if s.contains('.') && s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(format!("{what} must be a whole number: {s}"));
        }
        return Err(not_a_number(s, what));
    }
    s.parse::<u64>().map_err(|_| format!("{what} is too large: {s}"))
}

/// Parses a non-negative decimal millisecond value with at most 3 decimals into microseconds.
pub fn parse_ms_as_us(s: &str, what: &str) -> Result<u64, String> {
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    let digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) || (s.contains('.') && frac.is_empty()) {
        return Err(not_a_number(s, what));
    }
    if frac.len() > 3 {
        return Err(format!("{what} has more than 3 decimals (the resolution is 1 µs): {s}"));
    }
    let ms: u64 = int.parse().map_err(|_| format!("{what} is too large: {s}"))?;
    let mut us_frac: u64 = if frac.is_empty() { 0 } else { frac.parse().map_err(|_| not_a_number(s, what))? };
    for _ in frac.len()..3 {
        us_frac *= 10;
    }
    ms.checked_mul(1000)
        .and_then(|v| v.checked_add(us_frac))
        .ok_or_else(|| format!("{what} is too large: {s}"))
}

/// Parses a probability in [0, 1].
pub fn parse_prob(s: &str, what: &str) -> Result<f64, String> {
    let ok_chars = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'));
    let v: f64 = if ok_chars { s.parse().map_err(|_| not_a_number(s, what))? } else { return Err(not_a_number(s, what)) };
    if !v.is_finite() {
        return Err(not_a_number(s, what));
    }
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{what} must be within [0, 1]: {s}"));
    }
    Ok(v)
}

/// Formats microseconds as milliseconds with the fewest decimals that are exact.
pub fn us_as_ms(us: u64) -> String {
    let (ms, frac) = (us / 1000, us % 1000);
    if frac == 0 {
        return ms.to_string();
    }
    let f = format!("{frac:03}");
    format!("{ms}.{}", f.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_values_round_trip_exactly() {
        for us in [0, 1, 10, 999, 1000, 12_500, 12_345, 7_000_001] {
            assert_eq!(parse_ms_as_us(&us_as_ms(us), "x").unwrap(), us);
        }
        assert_eq!(us_as_ms(12_500), "12.5");
    }

    #[test]
    fn bad_numbers_say_why() {
        assert!(parse_ms_as_us("-3", "delay").unwrap_err().contains("negative"));
        assert!(parse_ms_as_us("NaN", "delay").unwrap_err().contains("NaN"));
        assert!(parse_ms_as_us("1.2345", "delay").unwrap_err().contains("decimals"));
        assert!(parse_ms_as_us("1.", "delay").is_err());
        assert!(parse_u64("2.5", "time").unwrap_err().contains("whole"));
        assert!(parse_prob("1.5", "loss").unwrap_err().contains("[0, 1]"));
        assert!(parse_prob("nan", "loss").unwrap_err().contains("NaN"));
    }

    #[test]
    fn lines_reject_crlf_and_accept_missing_final_newline() {
        let v: Vec<_> = lines(b"1\n2").map(|l| l.map(|l| l.text.to_string())).collect::<Result<_, _>>().unwrap();
        assert_eq!(v, vec!["1", "2"]);
        let e = lines(b"1\r\n2\r\n").find_map(|l| l.err()).unwrap();
        assert_eq!(e.0, 1);
        assert!(e.1.contains("CRLF"));
        assert_eq!(lines(b"").count(), 0);
    }

    #[test]
    fn binary_input_is_not_text_rather_than_crlf() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        let e = lines(png).find_map(|l| l.err()).unwrap();
        assert_eq!(e.0, 0);
        assert!(e.1.contains("not a text trace") && e.1.contains("PNG"), "{}", e.1);
        // Pseudo-random bytes (a fixed LCG, so the test is deterministic).
        let mut x = 12345u32;
        let noise: Vec<u8> = (0..4096).map(|_| { x = x.wrapping_mul(1_103_515_245).wrapping_add(12345); (x >> 16) as u8 }).collect();
        let e = lines(&noise).find_map(|l| l.err()).unwrap();
        assert!(e.1.contains("not a text trace") && !e.1.contains("CRLF"), "{}", e.1);
        // Text with tabs is still text.
        assert!(lines(b"1\t\n2\n").all(|l| l.is_ok()));
    }
}
