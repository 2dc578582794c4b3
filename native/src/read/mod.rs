//! The read room: an input's bytes to the columns of `Lines` (bootlens/lines.py), one entry a
//! line: cleaning checks (clean.rs), the host and printk prefixes (prefix.rs), the framing pass
//! that peels them and indexes keywords (frame.rs), the text, time and keyword-index columns
//! (text.rs, time.rs, index.rs) and keyword search over a column (grep.rs).

pub(crate) mod clean;
pub(crate) mod frame;
pub(crate) mod grep;
pub(crate) mod index;
pub(crate) mod prefix;
pub(crate) mod text;
pub(crate) mod time;
