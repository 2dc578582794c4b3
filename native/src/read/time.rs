//! Columns of optional times in ns (the printk and host time of every line): `TimeColumn`, the
//! readers of a time column the other rooms share (`times_of`, `axis_times`), and the
//! whole-column questions bootlens/quirks.py and analyze.py ask of them (`steps_back`: where the
//! printk clock goes back; `gaps`: the longest silences).

use pyo3::prelude::*;
use pyo3::types::{PyList, PySlice};

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

/// A time column's values: borrowed from a TimeColumn (no copy of a 1M-line column), else read.
pub(crate) enum Times<'py> {
    Column(PyRef<'py, TimeColumn>),
    Read(Vec<i64>),
}

impl std::ops::Deref for Times<'_> {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        match self {
            Times::Column(c) => &c.v,
            Times::Read(v) => v,
        }
    }
}

/// Read a time column (TimeColumn, list or tuple of int | None) as ns, NONE for None.
pub(crate) fn axis_times<'py>(times: &Bound<'py, PyAny>) -> PyResult<Times<'py>> {
    if let Ok(c) = times.downcast::<TimeColumn>() {
        return Ok(Times::Column(c.try_borrow()?));
    }
    if let Ok(v) = times_of(times) {
        return Ok(Times::Read(v));
    }
    times
        .try_iter()?
        .map(|t| {
            let t = t?;
            if t.is_none() {
                Ok(NONE)
            } else {
                t.extract::<i64>()
            }
        })
        .collect::<PyResult<Vec<i64>>>()
        .map(Times::Read)
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
