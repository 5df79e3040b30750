//! The starter, until it moves into `host/starter/` (issue 16): the rest
//! of the former `daemon` module now lives in [`crate::node`],
//! [`crate::home`] and [`crate::host`].

pub mod starter;
