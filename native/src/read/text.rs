//! Whole-column helpers: keyword grep, printk clock steps back, longest gaps, control bytes.
//! References: `grep_py`, `steps_back_py`, `gaps_py` in bootlens/lines.py.

use std::collections::HashMap;
use std::mem::MaybeUninit;

use aho_corasick::AhoCorasick;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PySlice, PyString};

use crate::read::index::IndexColumn;

/// grep(texts, needles) -> one ascending list of line indices per needle (lines containing it);
/// texts: a TextColumn or a list of str.
#[pyfunction]
pub(crate) fn grep(texts: &Bound<'_, PyAny>, needles: Vec<String>) -> PyResult<Vec<IndexColumn>> {
    Ok(columns(grep_in(texts, &needles)?))
}

/// The hits of each keyword as an IndexColumn (4 bytes an entry, not a list's 40).
fn columns(hits: Vec<Vec<usize>>) -> Vec<IndexColumn> {
    hits.into_iter().map(IndexColumn::new).collect()
}

/// Call `f` with the values of a time column (NONE for None): a TimeColumn's own, borrowed (a
/// copy of a 10M-line column is 80 MB), else those of a list.
fn with_times<R>(col: &Bound<'_, PyAny>, f: impl FnOnce(&[i64]) -> R) -> PyResult<R> {
    if let Ok(c) = col.downcast::<TimeColumn>() {
        return Ok(f(&c.try_borrow()?.v));
    }
    Ok(f(&times_of(col)?))
}

/// steps_back(values) -> [(i, j)] for every i whose value is below that of j, the last
/// non-None value before it.
#[pyfunction]
pub(crate) fn steps_back(values: &Bound<'_, PyAny>) -> PyResult<Vec<(usize, usize)>> {
    with_times(values, |v| {
        let mut out = Vec::new();
        let mut last: Option<(usize, i64)> = None;
        for (i, &k) in v.iter().enumerate() {
            if k != NONE {
                if let Some((j, l)) = last {
                    if k < l {
                        out.push((i, j));
                    }
                }
                last = Some((i, k));
            }
        }
        out
    })
}

/// gaps(values, n) -> the n largest (gap, i_before, i_after) between consecutive non-None
/// values, largest first; ties broken by the earlier position.
///
/// The n best so far are kept in a heap (worst on top), not every gap: a list of all of them
/// cost 24 bytes a timed line (240 MB at 10M lines, the peak of analyze_boot).
#[pyfunction]
pub(crate) fn gaps(values: &Bound<'_, PyAny>, n: usize) -> PyResult<Vec<(i64, usize, usize)>> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    with_times(values, |v| {
        // (Reverse(gap), i_before, i_after): the greatest is the worst kept, the smallest gap,
        // then the later position (positions are distinct: the order is total)
        let mut best: BinaryHeap<(Reverse<i64>, usize, usize)> = BinaryHeap::with_capacity(n.min(1 << 16) + 1);
        if n == 0 {
            return Vec::new();
        }
        let mut prev: Option<(usize, i64)> = None;
        for (i, &t) in v.iter().enumerate() {
            if t == NONE {
                continue;
            }
            if let Some((pi, pt)) = prev {
                let g = (Reverse(t - pt), pi, i);
                if best.len() < n {
                    best.push(g);
                } else if best.peek().map_or(false, |w| g < *w) {
                    best.pop();
                    best.push(g);
                }
            }
            prev = Some((i, t));
        }
        let mut all: Vec<(i64, usize, usize)> = best.into_iter().map(|(Reverse(g), a, b)| (g, a, b)).collect();
        all.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        all
    })
}

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
    src: Py<PyAny>,
    spans: Spans,
    over: HashMap<usize, Py<PyString>>,  // lines rewritten by [i] = text
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

    fn len(&self) -> usize {
        match self {
            Spans::Narrow(v) => v.len(),
            Spans::Wide(v) => v.len(),
        }
    }

    fn get(&self, i: usize) -> (usize, usize) {
        match self {
            Spans::Narrow(v) => (v[i].0 as usize, v[i].1 as usize),
            Spans::Wide(v) => v[i],
        }
    }

    fn part(&self, a: usize, b: usize) -> Spans {
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

/// Ascending indices of the lines of `texts` starting with each prefix.
fn starting_in(texts: &Bound<'_, PyAny>, prefixes: &[String]) -> PyResult<Vec<Vec<usize>>> {
    let mut out = vec![Vec::new(); prefixes.len()];
    each_line(texts, |i, l| {
        for (n, p) in prefixes.iter().enumerate() {
            if l.starts_with(p.as_bytes()) {
                out[n].push(i);
            }
        }
    })?;
    Ok(out)
}

/// Ascending indices of the lines of `texts` containing each needle (Aho-Corasick, one pass).
///
/// A TextColumn whose spans lie in order in its buffer is searched as one text (`candidates`),
/// then only the lines a match touches are searched needle by needle: a search started afresh
/// on each of 2M lines cost more than the search itself (0.24 s for 30 needles, 130 MB).
fn grep_in(texts: &Bound<'_, PyAny>, needles: &[String]) -> PyResult<Vec<Vec<usize>>> {
    let ac = AhoCorasick::new(needles).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    let mut hits: Vec<Vec<usize>> = vec![Vec::new(); needles.len()];
    let mut seen: Vec<usize> = vec![usize::MAX; needles.len()];
    let mut search = |i: usize, t: &[u8]| {
        for m in ac.find_overlapping_iter(t) {
            let n = m.pattern().as_usize();
            if seen[n] != i {
                seen[n] = i;
                hits[n].push(i);
            }
        }
    };
    if let Ok(col) = texts.downcast::<TextColumn>() {
        let col = col.borrow();
        let py = texts.py();
        let buf = buf_of(col.src.bind(py))?;
        if let Some(lines) = candidates(buf, &col.spans, needles, &col.over) {
            for i in lines {
                match col.over.get(&i) {
                    Some(s) => search(i, s.bind(py).to_str()?.as_bytes()),
                    None => {
                        let (a, b) = col.spans.get(i);
                        search(i, &buf[a..b])
                    }
                }
            }
            return Ok(hits);
        }
    }
    each_line(texts, search)?;
    Ok(hits)
}

/// The lines a match of any needle touches, ascending, with every rewritten line (`over`):
/// a superset of the lines that contain a needle. None when the spans are not in order in the
/// buffer without overlaps, a needle is empty, or this CPU has no Teddy (the search line by line
/// then).
///
/// The buffer from the first span to the last is searched as one text by Teddy (aho-corasick's
/// packed SIMD searcher, 64 needles a pass: 16 ms for 30 needles on 130 MB, where the automaton
/// took 220), each search starting one byte after the start of the last match: the match found
/// from `pos` is the leftmost, so a needle inside a line that starts at or after `pos` either
/// starts after the match (a later search finds it) or where it does, and its line is touched.
fn candidates(buf: &[u8], spans: &Spans, needles: &[String], over: &HashMap<usize, Py<PyString>>) -> Option<Vec<usize>> {
    let n = spans.len();
    if n == 0 || needles.iter().any(|s| s.is_empty()) {
        return None;
    }
    let mut last = 0usize;
    for i in 0..n {
        let (a, b) = spans.get(i);
        if a < last || b < a || b > buf.len() {
            return None;
        }
        last = b;
    }
    let searchers: Vec<aho_corasick::packed::Searcher> = needles.chunks(64)
        .map(|c| aho_corasick::packed::Searcher::new(c.iter()))
        .collect::<Option<_>>()?;
    let (lo, hi) = (spans.get(0).0, spans.get(n - 1).1);
    let mut out: Vec<usize> = over.keys().copied().collect();
    for searcher in &searchers {
        let mut pos = lo;
        while pos < hi {
            let m = match searcher.find_in(buf, aho_corasick::Span::from(pos..hi)) {
                Some(m) => m,
                None => break,
            };
            let (s, e) = (m.start(), m.end());
            // the lines [s, e) touches: from the last one starting at or before s
            let mut k = partition(spans, s).saturating_sub(1);
            while k < n && spans.get(k).0 < e {
                if spans.get(k).1 > s && out.last() != Some(&k) {
                    out.push(k);
                }
                k += 1;
            }
            pos = s + 1;
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// How many spans start at or before `at` (they are in order).
fn partition(spans: &Spans, at: usize) -> usize {
    match spans {
        Spans::Narrow(v) => v.partition_point(|&(a, _)| (a as usize) <= at),
        Spans::Wide(v) => v.partition_point(|&(a, _)| a <= at),
    }
}

/// starting(texts, prefixes) -> one ascending list of line indices per prefix.
#[pyfunction]
pub(crate) fn starting(texts: &Bound<'_, PyAny>, prefixes: Vec<String>) -> PyResult<Vec<IndexColumn>> {
    Ok(columns(starting_in(texts, &prefixes)?))
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

/// How many values a TimeColumn's iterator reads at a time.
const CHUNK: usize = 4096;

/// A TimeColumn slot without a time.
const NONE: i64 = i64::MIN;
/// A time too large for i64 (ten digits of seconds in a stamp reach 1e19 ns) is kept as this,
/// which is out of range for bootlens (numbers.TIME_NS_MAX = 2**60) and dropped by settle.
const HUGE: i64 = i64::MAX;

/// A column of optional times in ns (printk or host time of every line): 8 bytes a line where
/// a list of int costs 40 (a pointer and a 32-byte int object). To Python a mutable sequence of
/// `int | None`: len, [i], [a:b] (a copy), [i] = v, iteration, count, index, == with a list;
/// plus the whole-column questions the pipeline asks (nones, timed, drop_outside).
#[pyclass(module = "bootlens._scan", sequence)]
pub(crate) struct TimeColumn {
    pub(crate) v: Vec<i64>,
}

impl TimeColumn {
    pub(crate) fn new(v: Vec<i64>) -> Self {
        TimeColumn { v }
    }

    /// The slot of an optional time in ns: NONE for None, HUGE for a time over i64.
    pub(crate) fn slot_of(t: Option<u64>) -> i64 {
        t.map_or(NONE, |t| i64::try_from(t).unwrap_or(HUGE))
    }

    fn index_of(&self, i: isize) -> PyResult<usize> {
        let n = self.v.len() as isize;
        let j = if i < 0 { i + n } else { i };
        if j < 0 || j >= n {
            return Err(pyo3::exceptions::PyIndexError::new_err("line index out of range"));
        }
        Ok(j as usize)
    }

    fn obj(py: Python<'_>, x: i64) -> PyResult<PyObject> {
        if x == NONE {
            Ok(py.None())
        } else {
            Ok(x.into_pyobject(py)?.into_any().unbind())
        }
    }

    /// A Python value as a slot: None, an int (too large: HUGE), or None for NONE's bit pattern.
    fn slot(v: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
        if v.is_none() {
            return Ok(Some(NONE));
        }
        match v.extract::<i64>() {
            Ok(x) if x != NONE => Ok(Some(x)),
            Ok(_) => Ok(Some(NONE + 1)),
            Err(_) => match v.extract::<num_big_guard::Big>() {
                Ok(b) => Ok(Some(if b.neg { NONE + 1 } else { HUGE })),
                Err(_) => Ok(None),
            },
        }
    }

    fn list<'py>(&self, py: Python<'py>, part: &[i64]) -> PyResult<Bound<'py, PyList>> {
        let items: Vec<PyObject> = part.iter().map(|&x| Self::obj(py, x)).collect::<PyResult<_>>()?;
        PyList::new(py, items)
    }
}

mod num_big_guard {
    use pyo3::prelude::*;

    /// An int that does not fit i64: only its sign matters (it is out of range either way).
    pub(crate) struct Big {
        pub(crate) neg: bool,
    }

    impl<'py> FromPyObject<'py> for Big {
        fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
            let zero = 0i64.into_pyobject(ob.py())?;
            if !ob.is_instance_of::<pyo3::types::PyInt>() {
                return Err(pyo3::exceptions::PyTypeError::new_err("expected int or None"));
            }
            Ok(Big { neg: ob.lt(zero)? })
        }
    }
}

/// The values of a time column (a TimeColumn or a list of int | None): NONE for None.
pub(crate) fn times_of(col: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if let Ok(c) = col.downcast::<TimeColumn>() {
        return Ok(c.borrow().v.clone());
    }
    col.downcast::<PyList>()?
        .iter()
        .map(|x| TimeColumn::slot(&x)?.ok_or_else(|| pyo3::exceptions::PyTypeError::new_err("expected int or None")))
        .collect()
}

#[pymethods]
impl TimeColumn {
    fn __len__(&self) -> usize {
        self.v.len()
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        if let Ok(i) = key.extract::<isize>() {
            return Self::obj(py, self.v[self.index_of(i)?]);
        }
        let sl = key.downcast::<PySlice>()?;
        let ix = sl.indices(self.v.len() as isize)?;
        if ix.step == 1 {
            let a = ix.start as usize;
            let part = TimeColumn { v: self.v[a..a + ix.slicelength].to_vec() };
            return Ok(Bound::new(py, part)?.into_any().unbind());
        }
        let mut items = Vec::with_capacity(ix.slicelength);
        let mut i = ix.start;
        for _ in 0..ix.slicelength {
            items.push(self.v[i as usize]);
            i += ix.step;
        }
        Ok(self.list(py, &items)?.into_any().unbind())
    }

    fn __setitem__(&mut self, i: isize, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let j = self.index_of(i)?;
        match Self::slot(value)? {
            Some(x) => {
                self.v[j] = x;
                Ok(())
            }
            None => Err(pyo3::exceptions::PyTypeError::new_err("a time column holds int or None")),
        }
    }

    /// Iteration goes through lists of CHUNK values built at C speed, chained by itertools (a
    /// Python-level __next__ per line would cost more than the lists): one list of the whole
    /// column would cost 40 bytes a line for a scan that often stops at the first time. Each
    /// chunk is read when reached, so a value set at or before the current position is not seen
    /// (as with a copy: the passes that set a time while walking the column set the current one).
    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let n = slf.borrow().v.len();
        let builtins = py.import("builtins")?;
        let starts = builtins.getattr("range")?.call1((0, n, CHUNK))?;
        let chunks = builtins.getattr("map")?.call1((slf.getattr("_chunk")?, starts))?;
        py.import("itertools")?.getattr("chain")?.getattr("from_iterable")?.call1((chunks,))
    }

    /// The values from `a`, CHUNK of them at most, as a list (for __iter__).
    fn _chunk<'py>(&self, py: Python<'py>, a: usize) -> PyResult<Bound<'py, PyList>> {
        let a = a.min(self.v.len());
        self.list(py, &self.v[a..(a + CHUNK).min(self.v.len())])
    }

    fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: pyo3::basic::CompareOp) -> PyResult<PyObject> {
        use pyo3::basic::CompareOp;
        if !matches!(op, CompareOp::Eq | CompareOp::Ne) {
            return Ok(py.NotImplemented());
        }
        let theirs = match times_of(other) {
            Ok(v) => v,
            Err(_) => return Ok(py.NotImplemented()),
        };
        let same = theirs == self.v;
        Ok((same == matches!(op, CompareOp::Eq)).into_pyobject(py)?.to_owned().into_any().unbind())
    }

    fn __repr__(&self) -> String {
        format!("<TimeColumn of {} lines>", self.v.len())
    }

    /// count(value): how many slots hold it (None: how many lines have no time).
    fn count(&self, value: &Bound<'_, PyAny>) -> PyResult<usize> {
        Ok(match Self::slot(value)? {
            Some(x) => self.v.iter().filter(|&&y| y == x).count(),
            None => 0,
        })
    }

    /// index(value, start=0, stop=len): the first slot holding it, as list.index.
    #[pyo3(signature = (value, start=0, stop=None))]
    fn index(&self, value: &Bound<'_, PyAny>, start: usize, stop: Option<usize>) -> PyResult<usize> {
        let stop = stop.unwrap_or(self.v.len()).min(self.v.len());
        if let Some(x) = Self::slot(value)? {
            if start < stop {
                if let Some(p) = self.v[start..stop].iter().position(|&y| y == x) {
                    return Ok(start + p);
                }
            }
        }
        Err(pyo3::exceptions::PyValueError::new_err("value is not in the column"))
    }

    /// Indices of the lines without a time.
    fn nones(&self) -> Vec<usize> {
        self.v.iter().enumerate().filter(|(_, &x)| x == NONE).map(|(i, _)| i).collect()
    }

    /// Set the times outside -limit..=limit to None; returns how many.
    fn drop_outside(&mut self, limit: i64) -> usize {
        let mut n = 0;
        for x in self.v.iter_mut() {
            if *x != NONE && (*x > limit || *x < -limit) {
                *x = NONE;
                n += 1;
            }
        }
        n
    }

    /// A list of int | None (a copy).
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.list(py, &self.v)
    }
}
