//! Unit tests of the SASL mechanisms and the server's state machine.
