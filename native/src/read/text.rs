//! The message text of every line, held once (`TextColumn`, the column `Lines.text` of
//! bootlens/lines.py), the input buffers it reads (`Pinned`: a mapped file), and the ways the
//! parse rooms read lines from it without a str per line (`each_line`, `gather`, `LineBytes`).

use std::collections::HashMap;
use std::mem::MaybeUninit;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PySlice, PyString};

use super::grep::{columns, grep_in};
use super::index::IndexColumn;

/// The bytes of a str (UTF-8, borrowed: no copy for an ASCII str), of a bytes object or of a
/// Pinned buffer (a file's read-only map).
pub(crate) fn buf_of<'a>(src: &'a Bound<'_, PyAny>) -> PyResult<&'a [u8]> {
    if let Ok(s) = src.downcast::<PyString>() {
        return Ok(s.to_str()?.as_bytes());
    }
    if let Ok(p) = src.downcast::<Pinned>() {
        return Ok(p.get().bytes());
    }
    Ok(src.downcast::<PyBytes>()?.as_bytes())
}

/// Pinned(obj): the bytes of a read-only, contiguous buffer (lines.read_path: an `mmap` of a
/// large log file), held exported for the life of this object, so that the buffer cannot be
/// closed or resized under the columns that read it (mmap.close() raises BufferError while
/// exported). A read-only `bytes`-like to Python: len and [a:b] (bytes).
///
/// A file truncated by another process while mapped makes a read of the lost pages raise
/// SIGBUS (the process dies): lines.py maps only regular files, see MAP_MIN there.
#[pyclass(module = "bootlens._scan", frozen)]
pub(crate) struct Pinned {
    buf: pyo3::buffer::PyBuffer<u8>,
}

impl Pinned {
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: a C-contiguous buffer of len_bytes() bytes (checked in new), exported (so
        // neither freed nor moved) until self.buf is dropped, and read only.
        unsafe { std::slice::from_raw_parts(self.buf.buf_ptr() as *const u8, self.buf.len_bytes()) }
    }
}

#[pymethods]
impl Pinned {
    #[new]
    fn new(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let buf = pyo3::buffer::PyBuffer::<u8>::get(obj)?;
        if !buf.is_c_contiguous() {
            return Err(pyo3::exceptions::PyValueError::new_err("Pinned: a contiguous buffer"));
        }
        Ok(Pinned { buf })
    }

    fn __len__(&self) -> usize {
        self.buf.len_bytes()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PySlice>) -> PyResult<Bound<'py, PyBytes>> {
        let b = self.bytes();
        let ix = key.indices(b.len() as isize)?;
        if ix.step != 1 {
            return Err(pyo3::exceptions::PyValueError::new_err("Pinned: a slice of step 1"));
        }
        let a = ix.start as usize;
        let e = a + ix.slicelength;
        Ok(PyBytes::new(py, &b[a..e]))
    }
}

/// The message text of every line, held once: the whole cleaned input (a str, or bytes that are
/// valid UTF-8) and each message's byte span in it. A Python str per line would cost ~50 bytes
/// of object header on top of its text (and a list slot), and the cleaned input is held anyway
/// while framing; this way a line becomes a str only when a parser asks for it.
///
/// A sequence of str to Python: len, [i], [a:b] (a view sharing the input), iteration,
/// == with a list, and [i] = "text" (quirks.settle rewrites a few lines in place).
#[pyclass(module = "bootlens._scan", sequence)]
pub(crate) struct TextColumn {
    pub(crate) src: Py<PyAny>,
    pub(crate) spans: Spans,
    pub(crate) over: HashMap<usize, Py<PyString>>,  // lines rewritten by [i] = text
}

/// Each message's byte span (start, end) in the buffer: two u32 while the buffer is under 4 GiB
/// (8 bytes a line), else two usize (16).
pub(crate) enum Spans {
    Narrow(Vec<(u32, u32)>),
    Wide(Vec<(usize, usize)>),
}

impl Spans {
    /// Room for `lines` spans of a buffer of `len` bytes.
    pub(crate) fn for_buffer(len: usize, lines: usize) -> Spans {
        if len <= u32::MAX as usize {
            Spans::Narrow(Vec::with_capacity(lines))
        } else {
            Spans::Wide(Vec::with_capacity(lines))
        }
    }

    pub(crate) fn push(&mut self, start: usize, end: usize) {
        match self {
            // the buffer is under 4 GiB: both fit
            Spans::Narrow(v) => v.push((start as u32, end as u32)),
            Spans::Wide(v) => v.push((start, end)),
        }
    }

    /// Give back the room reserved by a guess of the line count.
    pub(crate) fn shrink(&mut self) {
        match self {
            Spans::Narrow(v) => v.shrink_to_fit(),
            Spans::Wide(v) => v.shrink_to_fit(),
        }
    }

    /// The reserved room past the spans, to be written in place (see `SpanSlots`; then `set_len`).
    pub(crate) fn slots(&mut self) -> SpanSlots<'_> {
        match self {
            Spans::Narrow(v) => SpanSlots::Narrow(v.spare_capacity_mut()),
            Spans::Wide(v) => SpanSlots::Wide(v.spare_capacity_mut()),
        }
    }

    /// Take the first `n` spans as written.
    ///
    /// # Safety
    /// `n` is at most the capacity and the first `n` slots were written through `slots`.
    pub(crate) unsafe fn set_len(&mut self, n: usize) {
        match self {
            Spans::Narrow(v) => v.set_len(n),
            Spans::Wide(v) => v.set_len(n),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Spans::Narrow(v) => v.len(),
            Spans::Wide(v) => v.len(),
        }
    }

    pub(crate) fn get(&self, i: usize) -> (usize, usize) {
        match self {
            Spans::Narrow(v) => (v[i].0 as usize, v[i].1 as usize),
            Spans::Wide(v) => v[i],
        }
    }

    pub(crate) fn part(&self, a: usize, b: usize) -> Spans {
        match self {
            Spans::Narrow(v) => Spans::Narrow(v[a..b].to_vec()),
            Spans::Wide(v) => Spans::Wide(v[a..b].to_vec()),
        }
    }
}

/// Room for spans written in place (`Spans::slots`), split between threads by `split_at`.
pub(crate) enum SpanSlots<'a> {
    Narrow(&'a mut [MaybeUninit<(u32, u32)>]),
    Wide(&'a mut [MaybeUninit<(usize, usize)>]),
}

impl<'a> SpanSlots<'a> {
    /// The first `k` slots and the rest.
    pub(crate) fn split_at(self, k: usize) -> (SpanSlots<'a>, SpanSlots<'a>) {
        match self {
            SpanSlots::Narrow(v) => {
                let (a, b) = v.split_at_mut(k);
                (SpanSlots::Narrow(a), SpanSlots::Narrow(b))
            }
            SpanSlots::Wide(v) => {
                let (a, b) = v.split_at_mut(k);
                (SpanSlots::Wide(a), SpanSlots::Wide(b))
            }
        }
    }

    /// Write slot i (bounds-checked: a slot past the room panics).
    pub(crate) fn put(&mut self, i: usize, start: usize, end: usize) {
        match self {
            // the buffer is under 4 GiB: both fit
            SpanSlots::Narrow(v) => {
                v[i].write((start as u32, end as u32));
            }
            SpanSlots::Wide(v) => {
                v[i].write((start, end));
            }
        }
    }
}

impl TextColumn {
    pub(crate) fn new(src: Py<PyAny>, spans: Spans) -> Self {
        TextColumn { src, spans, over: HashMap::new() }
    }

    fn index(&self, i: isize) -> PyResult<usize> {
        let n = self.spans.len() as isize;
        let j = if i < 0 { i + n } else { i };
        if j < 0 || j >= n {
            return Err(pyo3::exceptions::PyIndexError::new_err("line index out of range"));
        }
        Ok(j as usize)
    }

    fn item<'py>(&self, py: Python<'py>, buf: &[u8], i: usize) -> Bound<'py, PyString> {
        if let Some(s) = self.over.get(&i) {
            return s.bind(py).clone();
        }
        // SAFETY: the buffer is valid UTF-8 (a str's, or bytes checked by frame) and every span
        // starts and ends at an ASCII byte or the buffer's end: a char boundary
        let (a, b) = self.spans.get(i);
        PyString::new(py, unsafe { std::str::from_utf8_unchecked(&buf[a..b]) })
    }
}

/// Call `f(i, bytes of line i)` for every line of `texts` (a TextColumn or a list of str), in
/// order: a whole-column scan without a table of every line's span (40 bytes a line).
pub(crate) fn each_line(texts: &Bound<'_, PyAny>, mut f: impl FnMut(usize, &[u8])) -> PyResult<()> {
    if let Ok(col) = texts.downcast::<TextColumn>() {
        let col = col.borrow();
        let py = texts.py();
        let src = col.src.bind(py);
        let buf = buf_of(src)?;
        for i in 0..col.spans.len() {
            match if col.over.is_empty() { None } else { col.over.get(&i) } {
                Some(s) => f(i, s.bind(py).to_str()?.as_bytes()),
                None => {
                    let (a, b) = col.spans.get(i);
                    f(i, &buf[a..b])
                }
            }
        }
        return Ok(());
    }
    for (i, item) in texts.downcast::<PyList>()?.iter().enumerate() {
        f(i, item.downcast_into::<PyString>()?.to_str()?.as_bytes());
    }
    Ok(())
}

/// The bytes of lines `idx` of `texts` (a TextColumn or a list of str) as (string in `keep`,
/// start, end): the caller slices `keep`'s buffers, which stay alive as long as it holds them.
pub(crate) fn gather<'py>(
    texts: &Bound<'py, PyAny>,
    idx: Option<&[usize]>,
    keep: &mut Vec<Bound<'py, PyAny>>,
) -> PyResult<Vec<(usize, usize, usize)>> {
    let mut spans = Vec::new();
    if let Ok(col) = texts.downcast::<TextColumn>() {
        let col = col.borrow();
        let py = texts.py();
        keep.push(col.src.bind(py).clone());
        let n = col.spans.len();
        let mut add = |i: usize| -> PyResult<()> {
            if i >= n {
                return Err(pyo3::exceptions::PyIndexError::new_err("line index out of range"));
            }
            match col.over.get(&i) {
                Some(s) => {
                    keep.push(s.bind(py).clone().into_any());
                    spans.push((keep.len() - 1, 0, usize::MAX));
                }
                None => {
                    let (a, b) = col.spans.get(i);
                    spans.push((0, a, b))
                }
            }
            Ok(())
        };
        match idx {
            Some(v) => v.iter().try_for_each(|&i| add(i))?,
            None => (0..n).try_for_each(&mut add)?,
        }
        return Ok(spans);
    }
    let list = texts.downcast::<PyList>()?;
    let mut add = |i: usize| -> PyResult<()> {
        keep.push(list.get_item(i)?.downcast_into::<PyString>()?.into_any());
        spans.push((keep.len() - 1, 0, usize::MAX));
        Ok(())
    };
    match idx {
        Some(v) => v.iter().try_for_each(|&i| add(i))?,
        None => (0..list.len()).try_for_each(&mut add)?,
    }
    Ok(spans)
}

/// Line bytes by line number without a table of them: a TextColumn's lines are read in place
/// (its buffer, or the str of a rewritten line), other sequences through `gather` (a small list).
/// A scan over the candidate lines of a 10M-line log would otherwise hold 40 bytes a candidate
/// (a span and a slice), ~200 MB at its peak.
pub(crate) enum LineBytes<'a> {
    /// a TextColumn's buffer and spans, the rewritten lines' UTF-8 resolved beforehand: no
    /// Python object is touched when reading, so two threads may read it without the GIL
    Column { spans: &'a Spans, buf: &'a [u8], over: crate::fxhash::FxMap<usize, &'a [u8]> },
    /// slices by position in the index list given to `held`
    Held(Vec<&'a [u8]>),
}

impl<'a> LineBytes<'a> {
    /// The lines of a borrowed TextColumn.
    pub(crate) fn column(py: Python<'a>, col: &'a TextColumn) -> PyResult<Self> {
        let mut over = crate::fxhash::FxMap::default();
        for (&i, s) in &col.over {
            // a str's UTF-8 lives as long as the str, which the borrowed column holds
            over.insert(i, buf_of(s.bind(py).as_any())?);
        }
        Ok(LineBytes::Column { spans: &col.spans, buf: buf_of(col.src.bind(py))?, over })
    }

    /// The bytes of line `i`, the `k`-th of the index list (Held: looked up by `k`).
    pub(crate) fn get(&self, k: usize, i: usize) -> PyResult<&'a [u8]> {
        match self {
            LineBytes::Column { spans, buf, over } => {
                if i >= spans.len() {
                    return Err(pyo3::exceptions::PyIndexError::new_err("line index out of range"));
                }
                match over.get(&i) {
                    Some(s) => Ok(s),
                    None => {
                        let (a, b) = spans.get(i);
                        Ok(&buf[a..b])
                    }
                }
            }
            LineBytes::Held(v) => Ok(v[k]),
        }
    }
}

/// Slices of `keep`'s buffers for the spans of `gather` (usize::MAX: to the end).
pub(crate) fn slices<'a>(keep: &'a [Bound<'_, PyAny>], spans: &[(usize, usize, usize)]) -> PyResult<Vec<&'a [u8]>> {
    let bufs: Vec<&[u8]> = keep.iter().map(|k| buf_of(k)).collect::<PyResult<_>>()?;
    Ok(spans.iter().map(|&(k, s, e)| { let b = bufs[k]; &b[s..e.min(b.len())] }).collect())
}

#[pymethods]
impl TextColumn {
    fn __len__(&self) -> usize {
        self.spans.len()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<PyObject> {
        let src = self.src.bind(py);
        let buf = buf_of(src)?;
        if let Ok(i) = key.extract::<isize>() {
            return Ok(self.item(py, buf, self.index(i)?).into_any().unbind());
        }
        let sl = key.downcast::<PySlice>()?;
        let ix = sl.indices(self.spans.len() as isize)?;
        if ix.step == 1 {
            let (a, b) = (ix.start as usize, (ix.start + ix.slicelength as isize) as usize);
            let over = self.over.iter().filter(|(i, _)| (a..b).contains(*i))
                .map(|(i, s)| (i - a, s.clone_ref(py))).collect();
            let part = TextColumn { src: self.src.clone_ref(py), spans: self.spans.part(a, b), over };
            return Ok(Bound::new(py, part)?.into_any().unbind());
        }
        let mut items = Vec::with_capacity(ix.slicelength);
        let mut i = ix.start;
        for _ in 0..ix.slicelength {
            items.push(self.item(py, buf, i as usize));
            i += ix.step;
        }
        Ok(PyList::new(py, items)?.into_any().unbind())
    }

    fn __setitem__(&mut self, i: isize, text: Bound<'_, PyString>) -> PyResult<()> {
        let j = self.index(i)?;
        self.over.insert(j, text.unbind());
        Ok(())
    }

    fn __iter__(slf: PyRef<'_, Self>) -> TextIter {
        TextIter { col: slf.into(), next: 0 }
    }

    fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: pyo3::basic::CompareOp) -> PyResult<PyObject> {
        use pyo3::basic::CompareOp;
        if !matches!(op, CompareOp::Eq | CompareOp::Ne) {
            return Ok(py.NotImplemented());
        }
        let theirs: Vec<String> = match other.extract() {
            Ok(v) => v,
            Err(_) => return Ok(py.NotImplemented()),
        };
        let buf = buf_of(self.src.bind(py))?;
        let same = theirs.len() == self.spans.len()
            && theirs.iter().enumerate().all(|(i, t)| match self.over.get(&i) {
                Some(s) => s.bind(py).to_str().map(|x| x == t).unwrap_or(false),
                None => {
                    let (a, b) = self.spans.get(i);
                    &buf[a..b] == t.as_bytes()
                }
            });
        Ok((same == matches!(op, CompareOp::Eq)).into_pyobject(py)?.to_owned().into_any().unbind())
    }

    fn __repr__(&self) -> String {
        format!("<TextColumn of {} lines>", self.spans.len())
    }

    /// grep(needles) -> one ascending list of line indices per needle.
    fn grep(slf: &Bound<'_, Self>, needles: Vec<String>) -> PyResult<Vec<IndexColumn>> {
        Ok(columns(grep_in(slf.as_any(), &needles)?))
    }
}

/// Iterator over a TextColumn.
#[pyclass(module = "bootlens._scan")]
pub(crate) struct TextIter {
    col: Py<TextColumn>,
    next: usize,
}

#[pymethods]
impl TextIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyString>>> {
        let col = self.col.bind(py).borrow();
        if self.next >= col.spans.len() {
            return Ok(None);
        }
        let s = col.item(py, buf_of(col.src.bind(py))?, self.next);
        self.next += 1;
        Ok(Some(s))
    }
}
