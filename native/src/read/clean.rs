//! Cleaning checks over a whole input's bytes, before it is framed (bootlens/lines.py
//! `clean_text`, `read_path`): control bytes, UTF-8, and whether the bytes need no cleaning.

use pyo3::prelude::*;

use super::text::buf_of;

/// has_control(data) -> True if data holds a byte of lines.py _CTRL_BYTES (C0 controls but
/// tab, LF and CR, and DEL).
#[pyfunction]
pub(crate) fn has_control(data: &[u8]) -> bool {
    // branch-free over blocks so that the compiler vectorises it (a byte-wise `any` does not:
    // 0.12 s on 75 MB against memory speed)
    let bad = |c: u8| ((c < 0x20) & (c != b'\t') & (c != b'\n') & (c != b'\r')) | (c == 0x7f);
    data.chunks(4096).any(|blk| blk.iter().fold(false, |a, &c| a | bad(c)))
}

/// clean_as_is(data) -> True if the bytes need no cleaning: ASCII, or UTF-8 without a BOM, and
/// no CR nor other control character (tab and newline aside). One pass over blocks, branch-free
/// within a block so that it vectorises: it replaces isascii(), `b"\r" in`, has_control() (three
/// passes, 0.27 s on 746 MB); UTF-8 is only checked when a byte is over 0x7f.
#[pyfunction]
pub(crate) fn clean_as_is(data: &Bound<'_, PyAny>) -> PyResult<bool> {
    let data = buf_of(data)?;
    Ok(clean_bytes(data))
}

fn clean_bytes(data: &[u8]) -> bool {
    // bit 0: a control character or CR; bit 7: a byte over 0x7f
    let flag = |c: u8| (((c < 0x20) & (c != b'\t') & (c != b'\n')) | (c == 0x7f)) as u8 | (c & 0x80);
    let mut high = 0u8;
    for blk in data.chunks(4096) {
        let f = blk.iter().fold(0u8, |a, &c| a | flag(c));
        if f & 1 != 0 {
            return false;
        }
        high |= f;
    }
    high == 0 || (std::str::from_utf8(data).is_ok() && !data.starts_with(b"\xef\xbb\xbf"))
}

/// is_utf8(data) -> True if data is valid UTF-8 (checked without decoding it to a str).
#[pyfunction]
pub(crate) fn is_utf8(data: &[u8]) -> bool {
    std::str::from_utf8(data).is_ok()
}
