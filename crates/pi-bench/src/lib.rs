//! Shared by the `pi-bench` harness and the criterion benches: the deterministic data
//! generators and the in-process loopback mock LLM. See `bench/README.md`.

pub mod datagen;
pub mod mock;
pub mod text;
