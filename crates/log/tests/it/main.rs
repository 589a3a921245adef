//! Integration tests of the log store: one binary (see GUIDE §6), one module per concern.

mod basic;
mod clean_shutdown;
mod cleaner;
mod common;
mod corruption;
mod crash;
mod files;
mod garbage;
mod handles;
mod log_start;
mod model;
mod transactions;
