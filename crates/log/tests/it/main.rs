//! Integration tests of the log store: one binary (see GUIDE §6), one module per concern.

mod basic;
mod common;
mod crash;
mod files;
mod garbage;
mod model;
