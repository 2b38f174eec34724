//! Shared test helpers: the naive reference evaluator and the random program generator.

#![allow(dead_code)]

pub mod gen;
pub mod reference;
