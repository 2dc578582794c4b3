pub(crate) mod frame;
pub(crate) mod index;
pub(crate) mod text;
