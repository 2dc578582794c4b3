//! The keyword index: the ascending line numbers of the lines holding a needle (or starting with
//! a prefix), one column per keyword. Read by `Lines.grep` / `Lines.starting` (bootlens/lines.py).

use pyo3::prelude::*;
use pyo3::types::{PyList, PySlice};

/// The values: u32 while every line number fits (any input under 4G lines), else usize.
enum Ix {
    Narrow(Vec<u32>),
    Wide(Vec<usize>),
}

impl Ix {
    fn from_vec(v: Vec<usize>) -> Ix {
        if v.iter().all(|&x| x <= u32::MAX as usize) {
            Ix::Narrow(v.into_iter().map(|x| x as u32).collect())
        } else {
            Ix::Wide(v)
        }
    }

    fn len(&self) -> usize {
        match self {
            Ix::Narrow(v) => v.len(),
            Ix::Wide(v) => v.len(),
        }
    }

    fn get(&self, i: usize) -> usize {
        match self {
            Ix::Narrow(v) => v[i] as usize,
            Ix::Wide(v) => v[i],
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = usize> + '_> {
        match self {
            Ix::Narrow(v) => Box::new(v.iter().map(|&x| x as usize)),
            Ix::Wide(v) => Box::new(v.iter().copied()),
        }
    }

    fn to_vec(&self) -> Vec<usize> {
        self.iter().collect()
    }

    /// The position of the first value >= x (values ascending).
    fn lower_bound(&self, x: usize) -> usize {
        match self {
            Ix::Narrow(v) => v.partition_point(|&y| (y as usize) < x),
            Ix::Wide(v) => v.partition_point(|&y| y < x),
        }
    }
}

/// The line numbers of one keyword's hits, ascending: 4 bytes an entry (8 past 4G lines) where a
/// list of int costs 40 (a pointer and a 32-byte int); a keyword such as `call` hits half the
/// lines of an initcall_debug log. To Python a `Sequence[int]`: len, [i], [a:b] (a copy),
/// iteration, `in`, count, index, == with a list (so PyO3's `Vec<usize>` extraction and the
/// tests read it as a list); plus the whole-column edits `Lines` makes (between, union, edited).
#[pyclass(module = "bootlens._scan", sequence, frozen)]
pub(crate) struct IndexColumn {
    v: Ix,
}

impl IndexColumn {
    pub(crate) fn new(v: Vec<usize>) -> Self {
        IndexColumn { v: Ix::from_vec(v) }
    }

    /// A column of u32 line numbers, kept as they are.
    pub(crate) fn narrow(v: Vec<u32>) -> Self {
        IndexColumn { v: Ix::Narrow(v) }
    }

    /// The values in order, read in place (the native scans walk them without a copy).
    #[allow(dead_code)] // the initcall scan reads `range`; kept for the other scans (process.rs)
    pub(crate) fn values(&self) -> Box<dyn Iterator<Item = usize> + '_> {
        self.v.iter()
    }

    /// The number of values.
    pub(crate) fn len(&self) -> usize {
        self.v.len()
    }

    /// The values at positions a..b, read in place; Send, so that a thread can walk them.
    pub(crate) fn range(&self, a: usize, b: usize) -> Box<dyn Iterator<Item = usize> + Send + '_> {
        match &self.v {
            Ix::Narrow(v) => Box::new(v[a..b].iter().map(|&x| x as usize)),
            Ix::Wide(v) => Box::new(v[a..b].iter().copied()),
        }
    }

    fn pos(&self, i: isize) -> PyResult<usize> {
        let n = self.v.len() as isize;
        let j = if i < 0 { i + n } else { i };
        if j < 0 || j >= n {
            return Err(pyo3::exceptions::PyIndexError::new_err("index out of range"));
        }
        Ok(j as usize)
    }
}

/// Merge ascending runs into one ascending run without repeats.
fn merge(runs: Vec<Vec<usize>>) -> Vec<usize> {
    let mut all: Vec<usize> = runs.into_iter().flatten().collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// Merge ascending u32 runs into one ascending run without repeats, two runs at a time, the
/// shortest first (a linear merge, in place of a flatten and sort: the 9 unions of a 10M-line
/// log took 0.36 s that way; `call` alone hits 5M lines).
fn merge_u32(mut runs: Vec<&[u32]>) -> Vec<u32> {
    runs.sort_by_key(|r| std::cmp::Reverse(r.len()));
    let mut acc: Vec<u32> = match runs.pop() {
        None => return Vec::new(),
        Some(r) => {
            let mut v = r.to_vec();
            v.dedup();
            v
        }
    };
    while let Some(r) = runs.pop() {
        let mut out = Vec::with_capacity(acc.len() + r.len());
        let (mut i, mut j) = (0usize, 0usize);
        let push = |out: &mut Vec<u32>, x: u32| {
            if out.last() != Some(&x) {
                out.push(x);
            }
        };
        while i < acc.len() && j < r.len() {
            let (a, b) = (acc[i], r[j]);
            if a <= b {
                push(&mut out, a);
                i += 1;
            } else {
                push(&mut out, b);
                j += 1;
            }
        }
        for &x in acc[i..].iter().chain(r[j..].iter()) {
            push(&mut out, x);
        }
        acc = out;
    }
    acc.shrink_to_fit();
    acc
}

#[pymethods]
impl IndexColumn {
    /// IndexColumn(values): from ascending non-negative ints (the Python framing path, tests).
    #[new]
    fn py_new(values: Vec<usize>) -> Self {
        IndexColumn::new(values)
    }

    fn __len__(&self) -> usize {
        self.v.len()
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        if let Ok(i) = key.extract::<isize>() {
            return Ok(self.v.get(self.pos(i)?).into_pyobject(py)?.into_any().unbind());
        }
        let sl = key.downcast::<PySlice>()?;
        let ix = sl.indices(self.v.len() as isize)?;
        let mut items = Vec::with_capacity(ix.slicelength);
        let mut i = ix.start;
        for _ in 0..ix.slicelength {
            items.push(self.v.get(i as usize));
            i += ix.step;
        }
        if ix.step == 1 {
            return Ok(Bound::new(py, IndexColumn::new(items))?.into_any().unbind());
        }
        Ok(PyList::new(py, items)?.into_any().unbind())
    }

    fn __iter__(slf: PyRef<'_, Self>) -> IndexIter {
        IndexIter { col: slf.into(), next: 0 }
    }

    fn __contains__(&self, x: &Bound<'_, PyAny>) -> bool {
        match x.extract::<usize>() {
            Ok(x) => {
                let p = self.v.lower_bound(x);
                p < self.v.len() && self.v.get(p) == x
            }
            Err(_) => false,
        }
    }

    fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: pyo3::basic::CompareOp) -> PyResult<PyObject> {
        use pyo3::basic::CompareOp;
        if !matches!(op, CompareOp::Eq | CompareOp::Ne) {
            return Ok(py.NotImplemented());
        }
        let same = if let Ok(o) = other.downcast::<IndexColumn>() {
            let o = o.get();
            o.v.len() == self.v.len() && o.v.iter().eq(self.v.iter())
        } else if other.downcast::<PyList>().is_ok() {
            match other.extract::<Vec<usize>>() {
                Ok(theirs) => theirs.len() == self.v.len() && theirs.into_iter().eq(self.v.iter()),
                Err(_) => false,  // a list holding something else than line numbers
            }
        } else {
            return Ok(py.NotImplemented());
        };
        Ok((same == matches!(op, CompareOp::Eq)).into_pyobject(py)?.to_owned().into_any().unbind())
    }

    fn __repr__(&self) -> String {
        let head: Vec<String> = self.v.iter().take(8).map(|x| x.to_string()).collect();
        let more = if self.v.len() > 8 { ", ..." } else { "" };
        format!("IndexColumn([{}{}]) of {}", head.join(", "), more, self.v.len())
    }

    /// count(x): how many entries equal x (0 or 1: the entries are ascending without repeats).
    fn count(&self, x: &Bound<'_, PyAny>) -> usize {
        match x.extract::<usize>() {
            Ok(x) => self.v.iter().filter(|&y| y == x).count(),
            Err(_) => 0,
        }
    }

    /// index(x): the position of x, as list.index.
    fn index(&self, x: &Bound<'_, PyAny>) -> PyResult<usize> {
        if let Ok(x) = x.extract::<usize>() {
            if let Some(p) = self.v.iter().position(|y| y == x) {
                return Ok(p);
            }
        }
        Err(pyo3::exceptions::PyValueError::new_err("value is not in the column"))
    }

    /// between(a, b) -> the entries in a..b, minus a (the index of lines a..b-1 as their own).
    fn between(&self, a: usize, b: usize) -> IndexColumn {
        let (i, j) = (self.v.lower_bound(a), self.v.lower_bound(b).max(self.v.lower_bound(a)));
        IndexColumn::new((i..j).map(|k| self.v.get(k) - a).collect())
    }

    /// union(columns) -> the entries of any of them, ascending, once each.
    #[staticmethod]
    fn union(columns: Vec<PyRef<'_, IndexColumn>>) -> IndexColumn {
        let narrow: Vec<&[u32]> =
            columns.iter().filter_map(|c| match &c.v { Ix::Narrow(v) => Some(&v[..]), Ix::Wide(_) => None }).collect();
        if narrow.len() == columns.len() {
            return IndexColumn { v: Ix::Narrow(merge_u32(narrow)) };
        }
        IndexColumn::new(merge(columns.iter().map(|c| c.v.to_vec()).collect()))
    }

    /// edited(removed, added) -> the entries not in `removed`, plus `added` (lines whose text
    /// was rewritten: Lines.retext), ascending, once each.
    fn edited(&self, mut removed: Vec<usize>, added: Vec<usize>) -> IndexColumn {
        removed.sort_unstable();
        let keep: Vec<usize> = self.v.iter().filter(|x| removed.binary_search(x).is_err()).collect();
        IndexColumn::new(merge(vec![keep, added]))
    }

    /// A list of int (a copy).
    fn tolist(&self) -> Vec<usize> {
        self.v.to_vec()
    }
}

/// Iterator over an IndexColumn (no list built: a parser often reads only the first few hits).
#[pyclass(module = "bootlens._scan")]
pub(crate) struct IndexIter {
    col: Py<IndexColumn>,
    next: usize,
}

#[pymethods]
impl IndexIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> Option<usize> {
        let col = self.col.bind(py).get();
        if self.next >= col.v.len() {
            return None;
        }
        self.next += 1;
        Some(col.v.get(self.next - 1))
    }
}
