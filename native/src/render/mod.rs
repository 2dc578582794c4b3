//! The render room: what bootlens/render/ writes from native data: the JSON of events
//! (json.rs for jsonout.py, json_chunk.rs for a block's events), the report's passes over a
//! block (report.rs, for html.py) and the page's big JSON parts (page.rs).

pub(crate) mod json;
pub(crate) mod json_chunk;
pub(crate) mod page;
pub(crate) mod report;
