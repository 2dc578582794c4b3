//! The report page's big JSON parts, written in pieces (render/html.py `_page_pieces`; docs/
//! performance.md step 24c).
//!
//! The page embeds its data as JSON in a `<script>` element, made safe there by the page's
//! escapes: '<', '>' and '&' as `\u003c`, `\u003e`, `\u0026`, and U+2028/U+2029 as `\u2028`,
//! `\u2029` (inside strings only: nowhere else can they occur). This is the one place that knows
//! them: `page_escape` applies them to the document's skeleton (what orjson writes), and a
//! `JsonPiece` writes them itself. A piece is one big value of the document (a block's event
//! columns, the log's lines, each line's axis time) kept as Rust data until the page is written:
//! then it writes its JSON text (orjson's, with the page's escapes) to the file a megabyte at a
//! time, so that no copy of the whole page (186 MB at 1M events) is made, escaped or joined.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::render::json::push_i64;

/// What a piece writes to its file at a time.
const CHUNK: usize = 1 << 20;

/// A slot of an `Ints` piece without a value (TimeColumn's None).
const NONE: i64 = i64::MIN;

/// How a byte of a line is written: 0 as it is, 1 escaped (`line_escape`), 2 not plain (the
/// line needs render/visible.py `visible`, which leaves printable ASCII, tabs and newlines as
/// they are).
const LINE_CLASS: [u8; 256] = {
    let mut t = [2u8; 256];
    let mut c = 0x20;
    while c <= 0x7e {
        t[c] = 0;
        c += 1;
    }
    let mut k = 0;
    while k < ESCAPED.len() {
        t[ESCAPED[k] as usize] = 1;
        k += 1;
    }
    t
};

/// The ASCII bytes a line's JSON string escapes: orjson's (a quote, a backslash, tab and
/// newline: the only controls a plain line holds) and the page's.
const ESCAPED: [u8; 7] = [b'"', b'\\', b'\t', b'\n', b'<', b'>', b'&'];

/// Whether a byte of a line is not written as it is (LINE_CLASS not 0), without a table: a
/// test the compiler vectorises over a line.
#[inline]
const fn special(c: u8) -> bool {
    (c < 0x20) | (c > 0x7e) | (c == b'"') | (c == b'\\') | (c == b'<') | (c == b'>') | (c == b'&')
}

// checked when compiled: `special` says what LINE_CLASS says
const _: () = {
    let mut c = 0;
    while c < 256 {
        assert!(special(c as u8) == (LINE_CLASS[c] != 0));
        c += 1;
    }
};

/// The escape of an ASCII byte of class 1 (or of the skeleton's '<' '>' '&').
fn line_escape(c: u8) -> &'static [u8] {
    match c {
        b'"' => b"\\\"",
        b'\\' => b"\\\\",
        b'\t' => b"\\t",
        b'\n' => b"\\n",
        b'<' => b"\\u003c",
        b'>' => b"\\u003e",
        _ => b"\\u0026",
    }
}

/// page_escape(data) -> bytes: JSON text (orjson's) with the page's escapes, in one pass: '<'
/// '>' '&' and U+2028/9 (only ever inside strings) as \u escapes (render/html.py `_embed`).
#[pyfunction]
pub(crate) fn page_escape<'py>(py: Python<'py>, data: &[u8]) -> Bound<'py, PyBytes> {
    let mut out: Vec<u8> = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < data.len() {
        let c = data[i];
        let esc: Option<(&[u8], usize)> = match c {
            b'<' | b'>' | b'&' => Some((line_escape(c), 1)),
            0xe2 if data.get(i + 1) == Some(&0x80) && data.get(i + 2) == Some(&0xa8) => Some((b"\\u2028", 3)),
            0xe2 if data.get(i + 1) == Some(&0x80) && data.get(i + 2) == Some(&0xa9) => Some((b"\\u2029", 3)),
            _ => None,
        };
        if let Some((e, n)) = esc {
            if out.is_empty() {
                out.reserve(data.len() + data.len() / 16);
            }
            out.extend_from_slice(&data[start..i]);
            out.extend_from_slice(e);
            i += n;
            start = i;
        } else {
            i += 1;
        }
    }
    if start == 0 {
        return PyBytes::new(py, data);
    }
    out.extend_from_slice(&data[start..]);
    PyBytes::new(py, &out)
}

/// What a piece holds.
enum Part {
    /// a JSON object of integer columns: `{"s":[..],"d":[..],...}` (report.rs report_columns_all)
    Columns(Vec<(&'static str, Vec<i64>)>),
    /// a JSON array of integers, NONE as null (report.rs report_line_times)
    Ints(Vec<i64>),
    /// a JSON array of strings: the lines of a TextColumn or a list of str, every one plain
    /// (LINE_CLASS 0 or 1 throughout: checked when made, by `text_piece`)
    Lines(Py<PyAny>),
}

/// A big value of the page's data, written as JSON text with the page's escapes when the page
/// is written (`write_to(file)`, a megabyte at a time) or as bytes (`bytes(piece)`: the page
/// in one buffer, render/html.py render_html). render/html.py `_embed_pieces` puts it in place.
#[pyclass(module = "bootlens._scan", frozen)]
pub(crate) struct JsonPiece {
    part: Part,
}

impl JsonPiece {
    pub(crate) fn columns(cols: Vec<(&'static str, Vec<i64>)>) -> Self {
        JsonPiece { part: Part::Columns(cols) }
    }

    pub(crate) fn ints(v: Vec<i64>) -> Self {
        JsonPiece { part: Part::Ints(v) }
    }

    /// Write the JSON text into `buf`, handing it to `flush` whenever it holds a chunk or more
    /// (`flush` empties it); what is left at the end stays in `buf`.
    fn emit(&self, py: Python<'_>, buf: &mut Vec<u8>, flush: &mut dyn FnMut(&mut Vec<u8>) -> PyResult<()>)
            -> PyResult<()> {
        match &self.part {
            Part::Columns(cols) => {
                for (k, (key, col)) in cols.iter().enumerate() {
                    buf.extend_from_slice(if k == 0 { b"{\"" } else { b",\"" });
                    buf.extend_from_slice(key.as_bytes());
                    buf.extend_from_slice(b"\":");
                    ints_json(buf, col, flush)?;
                }
                buf.push(b'}');
            }
            Part::Ints(v) => ints_json(buf, v, flush)?,
            Part::Lines(texts) => {
                let mut err: Option<PyErr> = None;
                buf.push(b'[');
                crate::read::text::each_line(texts.bind(py), |i, line| {
                    if err.is_some() {
                        return;
                    }
                    if i > 0 {
                        buf.push(b',');
                    }
                    buf.push(b'"');
                    // the common line has nothing to escape: found branch-free (vectorised), copied whole
                    if !line.iter().fold(false, |a, &c| a | special(c)) {
                        buf.extend_from_slice(line);
                    } else {
                        let mut start = 0;
                        for (j, &c) in line.iter().enumerate() {
                            if LINE_CLASS[c as usize] != 0 {
                                if LINE_CLASS[c as usize] == 2 {  // the lines changed since text_piece
                                    err = Some(pyo3::exceptions::PyValueError::new_err("JsonPiece: a line not plain"));
                                    return;
                                }
                                buf.extend_from_slice(&line[start..j]);
                                buf.extend_from_slice(line_escape(c));
                                start = j + 1;
                            }
                        }
                        buf.extend_from_slice(&line[start..]);
                    }
                    buf.push(b'"');
                    if buf.len() >= CHUNK {
                        err = flush(buf).err();
                    }
                })?;
                if let Some(e) = err {
                    return Err(e);
                }
                buf.push(b']');
            }
        }
        Ok(())
    }
}

/// A JSON array of integers (NONE as null) into `buf`, flushed a chunk at a time.
fn ints_json(buf: &mut Vec<u8>, v: &[i64], flush: &mut dyn FnMut(&mut Vec<u8>) -> PyResult<()>) -> PyResult<()> {
    buf.push(b'[');
    for (j, &x) in v.iter().enumerate() {
        if j > 0 {
            buf.push(b',');
        }
        if x == NONE {
            buf.extend_from_slice(b"null");
        } else {
            push_i64(buf, x);
        }
        if buf.len() >= CHUNK {
            flush(buf)?;
        }
    }
    buf.push(b']');
    Ok(())
}

#[pymethods]
impl JsonPiece {
    /// write_to(file): write the JSON text with `file.write`, a megabyte at a time, each handed
    /// over as a memoryview of the buffer it was written in (no copy of it made), released once
    /// written: a file that kept the view could not read the buffer written over after.
    fn write_to(&self, py: Python<'_>, file: &Bound<'_, PyAny>) -> PyResult<()> {
        let write = file.getattr("write")?;
        let mut flush = |b: &mut Vec<u8>| -> PyResult<()> {
            // SAFETY: a read-only view of b's bytes, which neither move nor change until the
            // view is released below (or dropped, on an error: then nothing writes b again)
            let view = unsafe {
                let v = pyo3::ffi::PyMemoryView_FromMemory(b.as_mut_ptr().cast(), b.len() as pyo3::ffi::Py_ssize_t,
                                                           pyo3::ffi::PyBUF_READ);
                Bound::from_owned_ptr_or_err(py, v)?
            };
            let done = write.call1((&view,));
            view.call_method0("release")?;
            let n = done?;
            if !n.is_none() && n.extract::<usize>()? != b.len() {  // a raw file may write less
                return Err(pyo3::exceptions::PyOSError::new_err("JsonPiece: a short write"));
            }
            b.clear();
            Ok(())
        };
        let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + (CHUNK >> 2));
        self.emit(py, &mut buf, &mut flush)?;
        if !buf.is_empty() {
            flush(&mut buf)?;
        }
        Ok(())
    }

    /// The JSON text as bytes.
    fn __bytes__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut buf: Vec<u8> = Vec::new();
        self.emit(py, &mut buf, &mut |_| Ok(()))?;
        Ok(PyBytes::new(py, &buf))
    }
}

/// text_piece(texts) -> JsonPiece | None: the JSON array of the lines of `texts` (a TextColumn
/// or a list of str) as orjson writes it with the page's escapes, when every line is ASCII with
/// no control character but a tab or a newline (what render/visible.py `visible` leaves as it
/// is); else None, and the caller goes through visible(). The report embeds a log's lines so
/// (2M lines: no str made for each, and no buffer of their 126 MB of JSON).
#[pyfunction]
pub(crate) fn text_piece(texts: &Bound<'_, PyAny>) -> PyResult<Option<JsonPiece>> {
    let mut odd = 0u8;
    crate::read::text::each_line(texts, |_, line| {
        odd |= line.iter().fold(0u8, |a, &c| a | LINE_CLASS[c as usize]);
    })?;
    if odd & 2 != 0 {
        return Ok(None);
    }
    Ok(Some(JsonPiece { part: Part::Lines(texts.clone().unbind()) }))
}
