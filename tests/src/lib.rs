//! Helpers shared by the cross-crate tests in `tests/tests/`.
