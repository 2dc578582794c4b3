//! The keyword search of a column of lines: the lines holding each needle (`grep`, Aho-Corasick,
//! one pass over a TextColumn's buffer: `candidates`) or starting with each prefix (`starting`),
//! as IndexColumns. Called by bootlens/lines.py (`index`, `Lines.grep` and `Lines.starting` for
//! keywords the framing pass did not index).

use std::collections::HashMap;

use aho_corasick::AhoCorasick;
use pyo3::prelude::*;
use pyo3::types::PyString;

use super::index::IndexColumn;
use super::text::{buf_of, each_line, Spans, TextColumn};

/// grep(texts, needles) -> one ascending list of line indices per needle (lines containing it);
/// texts: a TextColumn or a list of str.
#[pyfunction]
pub(crate) fn grep(texts: &Bound<'_, PyAny>, needles: Vec<String>) -> PyResult<Vec<IndexColumn>> {
    Ok(columns(grep_in(texts, &needles)?))
}

/// The hits of each keyword as an IndexColumn (4 bytes an entry, not a list's 40).
pub(crate) fn columns(hits: Vec<Vec<usize>>) -> Vec<IndexColumn> {
    hits.into_iter().map(IndexColumn::new).collect()
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
pub(crate) fn grep_in(texts: &Bound<'_, PyAny>, needles: &[String]) -> PyResult<Vec<Vec<usize>>> {
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
