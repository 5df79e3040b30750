//! Every message a daemon or the CLI reads from the network or from its
//! state files: the daemon-to-daemon messages of `gleaner_proto::wire`, the
//! user and shadow API bodies of `gleaner_proto::api`, the station's DAG
//! API bodies, the credentials (tokens, claims, revocations, public key
//! files, run ids) and the coordinator's token records.
//!
//! The first byte picks the message, the rest is its JSON (or text).
//! Invariants: no panic; what reads also writes, and reads back equal;
//! the receiver's next step on it (the coordinator's machine ad of a
//! station ad, the station's check and expansion of a submission, the
//! host's fit check of a placement, a token's verification) does not
//! panic either.

#![no_main]

use gleaner_fuzz::round_trip;
use gleaner_proto::{api, creds, wire};
use gleaner_station::home::dagman::api as dag_api;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

const NOW: u64 = 1_700_000_000;

fn verifier() -> &'static creds::PoolVerifier {
    static V: OnceLock<creds::PoolVerifier> = OnceLock::new();
    V.get_or_init(|| creds::PoolSigner::from_seed(&[7; 32]).verifier())
}

fn expand(sub: &gleaner_proto::submit::ClusterSubmission) {
    // What the station does with a submission it receives: check, then
    // expand with the cluster id it allocates.
    if let Ok(jobs) = sub.expand(42) {
        for d in &jobs {
            let _ = gleaner_proto::limits::check_description(d);
        }
        let _ = gleaner_proto::matchmaking::JobClass::group(&jobs);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, body)) = data.split_first() else {
        return;
    };
    match kind % 26 {
        0 => {
            if let Some(ad) = round_trip::<wire::StationAd>(body) {
                let _ = gleaner_proto::matchmaking::machine_ad(&ad);
                for c in &ad.classes {
                    let _ = gleaner_proto::matchmaking::class_ad(c);
                    let _ = c.licences();
                }
            }
        }
        1 => drop(round_trip::<wire::AdvertiseReply>(body)),
        2 => drop(round_trip::<wire::EventsReply>(body)),
        3 => drop(round_trip::<wire::PoolStatus>(body)),
        4 => drop(round_trip::<wire::UserPrio>(body)),
        5 => {
            if let Some(p) = round_trip::<wire::PlacementRequest>(body) {
                let _ = wire::check_version(p.protocol);
                let _ = gleaner_proto::limits::check_description(&p.description);
                let class = gleaner_proto::matchmaking::JobClass::of(&p.description);
                let _ = gleaner_proto::matchmaking::class_ad(&class);
            }
        }
        6 => drop(round_trip::<wire::PlacementResponse>(body)),
        7 => drop(round_trip::<wire::JobStatusReport>(body)),
        8 => {
            if let Some(r) = round_trip::<wire::SubmitRequest>(body) {
                expand(&r.submission);
            }
        }
        9 => drop(round_trip::<wire::SubmitResponse>(body)),
        10 => drop(round_trip::<wire::ErrorBody>(body)),
        11 => {
            if let Some(b) = round_trip::<api::SubmitBody>(body) {
                expand(&b.submission);
            }
        }
        12 => drop(round_trip::<Vec<api::JobInfo>>(body)),
        13 => {
            if let Some(d) = round_trip::<api::JobDetail>(body) {
                let _ = gleaner_proto::job_ad::detail_ad(&d);
            }
        }
        14 => drop(round_trip::<api::ActionRequest>(body)),
        15 => drop(round_trip::<api::ActionResponse>(body)),
        16 => drop(round_trip::<api::AppendResponse>(body)),
        17 => drop(round_trip::<api::StoredResponse>(body)),
        18 => {
            if let Some(b) = round_trip::<dag_api::DagSubmitBody>(body) {
                // What the station does first with a DAG submission's
                // text: parse each file name given as a DAG file.
                for f in b.files.iter().take(4) {
                    let _ = gleaner_core::dag::parse::parse_file(f, &Default::default());
                }
            }
        }
        19 => drop(round_trip::<dag_api::DagStatus>(body)),
        20 => drop(round_trip::<dag_api::DagRmResponse>(body)),
        21 => drop(round_trip::<creds::Claims>(body)),
        22 => drop(round_trip::<creds::ClaimTicket>(body)),
        23 => drop(round_trip::<creds::Revocations>(body)),
        24 => drop(round_trip::<gleaner_coordinator::tokens::TokenRecord>(body)),
        _ => {
            // Bearer tokens, claims, `pool.pub` files and run ids as text.
            let Some(text) = gleaner_fuzz::text(body) else {
                return;
            };
            let v = verifier();
            let _ = v.verify(text, NOW);
            let _ = v.verify_claim(text, "host1", NOW);
            let _ = v.open_claim(text);
            let _ = creds::peek_claims(text);
            let _ = creds::peek_claim(text);
            let _ = creds::PoolVerifier::from_file_str(text);
            if let Ok(run) = text.parse::<gleaner_proto::run::RunId>() {
                let again: gleaner_proto::run::RunId = match run.to_string().parse() {
                    Ok(r) => r,
                    Err(e) => panic!("run id {run} does not read back: {e}"),
                };
                assert_eq!(run, again);
                let _ = run.dir_name();
            }
            if let Ok(id) = text.parse::<gleaner_proto::job::JobId>() {
                assert_eq!(
                    id.to_string().parse::<gleaner_proto::job::JobId>().ok(),
                    Some(id)
                );
            }
        }
    }
});
