mod block;

pub(crate) use block::*;
