//! Numbers read from log text, as bootlens/numbers.py reads them: ASCII digit runs, bounded to
//! what a kernel can print (`bounded` is numbers.to_int, `to_ns` numbers.to_ns), and the bounds
//! themselves. Shared by the read and parse rooms.

/// Count ASCII digits starting at `p`.
pub(crate) fn digits(b: &[u8], p: usize) -> usize {
    b[p..].iter().take_while(|c| c.is_ascii_digit()).count()
}

/// The value of a run of ASCII digits, exactly (callers bound the run's length so it fits).
pub(crate) fn num(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |a, c| a * 10 + (c - b'0') as u64)
}

// The bounds of bootlens/numbers.py (exported as `BOUNDS` so that tests compare them).
pub(crate) const TIME_NS_MAX: i64 = 1 << 60;
pub(crate) const PID_MAX: i64 = 4_194_304;
pub(crate) const INT_MIN: i64 = -(1 << 31);
pub(crate) const INT_MAX: i64 = (1 << 31) - 1;

/// numbers.to_int: `-?\d+` (the sign only when `lo` < 0) read when within lo..=hi, else None.
pub(crate) fn bounded(b: &[u8], hi: i64, lo: i64) -> Option<i64> {
    let (neg, d) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    if d.is_empty() || !d.iter().all(|c| c.is_ascii_digit()) || (neg && lo >= 0) {
        return None;
    }
    let z = d.iter().take_while(|c| **c == b'0').count();
    let d = if z == d.len() { &d[d.len() - 1..] } else { &d[z..] };
    if d.len() > 19 {
        return None;
    }
    let v = num(d) as i128;  // 19 digits fit a u64
    let v = if neg { -v } else { v };
    if v < lo as i128 || v > hi as i128 {
        return None;
    }
    Some(v as i64)
}

/// numbers.to_ns: a count of `unit` ns as ns, when at most TIME_NS_MAX.
pub(crate) fn to_ns(b: &[u8], unit: i64) -> Option<i64> {
    bounded(b, TIME_NS_MAX / unit, 0).map(|v| v * unit)
}
