//! HTCondor 25's Python API — the `htcondor2` and `classad2` modules —
//! over Gleaner's own crates: the station client
//! (`gleaner_station::client`), the submit parser and job ads
//! (`gleaner_proto::submit`, `gleaner_proto::job_ad`) and the ClassAd
//! language (`gleaner-classad`).
//!
//! The crate has two layers. The pure-Rust one below decides everything
//! that can be decided without Python, and is unit-tested without it:
//!
//! - [`adtext`]: several ads in one text (old, new and JSON syntax) and
//!   JSON printing, as `classad2.parseAds` and `ClassAd.printJson` need;
//! - [`refs`]: the attributes an expression refers to (`externalRefs`,
//!   `internalRefs`, and which job attributes a query needs) and
//!   `flatten`'s partial evaluation;
//! - [`jobspec`]: the job specifications `Schedd.act`/`edit` take;
//! - [`submit_desc`]: the `Submit` object's text (its `key = value` lines
//!   and queue statement), read and written as HTCondor does;
//! - [`eventlog`]: HTCondor's user log read back event by event
//!   (`JobEventLog`);
//! - [`schedd`]: the schedd's operations over the station's user API;
//! - [`collector`]: the pool's ads (`Collector.query`/`locate`);
//! - [`param`]: the configuration knobs tools read (`htcondor2.param`).
//!
//! With the `python` feature (on when maturin builds the extension,
//! `gleaner._native`), `py` binds them to Python classes; the
//! packages `gleaner.htcondor2`/`gleaner.classad2` (and their aliases
//! `htcondor2`/`classad2`) add the Pythonic sugar in `pysrc/`.

pub mod adtext;
pub mod collector;
pub mod eventlog;
pub mod jobspec;
pub mod param;
pub mod refs;
pub mod schedd;
pub mod submit_desc;
pub mod version;

#[cfg(feature = "python")]
mod py;
