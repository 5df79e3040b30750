//! Gleaner's wire protocol and job descriptions.
//!
//! - [`submit`]: the HTCondor-style submit-description parser behind `glean submit`.
//! - [`job`]: job descriptions and job states.
//! - [`args`]: HTCondor's two syntaxes for arguments and environment, read and written as its job ads hold them.
//! - [`limits`]: limits on everything a user controls in a submission, with why each number.
//! - [`matchmaking`]: matchmaking data: the owner's policy as advertised, job classes, licences, machine and job ClassAds.
//! - [`gpus`]: GPUs as HTCondor's machine ads describe them, and which of a machine's GPUs a job may have.
//! - [`requests`]: a job's resource requests, constants or ClassAd expressions evaluated against each machine: the one writer into job ads and the one evaluator.
//! - [`fit`]: does this job fit this host now? The one typed check (matchmaker, host admission, `glean q --analyze`) and its rendering into words.
//! - [`creds`]: the pool's credentials: Ed25519 tokens, claim tickets, single-use nonces, revocations; only the coordinator holds the signing key.
//! - [`enrol`]: join tokens and the join messages (a station enrolling in a pool).
//! - [`run`]: the identity of one run of a job, carried by everything a host sends about it.
//! - [`wire`]: versioned HTTP/JSON messages between daemons and from the CLI.
//! - [`api`]: bodies of the station's user and shadow APIs.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![forbid(unsafe_code)]

pub mod api;
pub mod args;
pub mod creds;
pub mod enrol;
pub mod fit;
pub mod gpus;
pub mod guest_key;
pub mod job;
pub mod job_ad;
pub mod limits;
pub mod matchmaking;
pub mod requests;
pub mod run;
pub mod submit;
pub mod summary;
pub mod wire;
