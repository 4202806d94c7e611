#[macro_use]
mod util;

mod recursive;
