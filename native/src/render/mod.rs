pub(crate) mod json;
pub(crate) mod page;
