//! Wire messages: JSON shape and round trips.

use gleaner_core::detector::OwnerState;
use gleaner_core::time::Time;
use gleaner_proto::job::{JobDescription, JobEventKind, JobId, JobState};
use gleaner_proto::wire::*;
use serde_json::json;
use std::collections::BTreeMap;

fn ad() -> StationAd {
    StationAd {
        protocol: PROTOCOL_VERSION,
        name: "ws12".into(),
        address: "http://ws12:9618".into(),
        state: OwnerState::Av,
        cpus: 8,
        memory_mb: 16_384,
        disk_free_kb: 10_000_000,
        arch: "X86_64".into(),
        opsys: "LINUX".into(),
        speed: 1.5,
        running_guests: vec![GuestInfo {
            job: JobId::new(3, 1),
            home: "ws7".into(),
            owner: "alice".into(),
            since: Time::from_secs(100),
            suspended: false,
            concurrency_limits: vec!["matlab".into()],
            class: None,
        }],
        attrs: BTreeMap::from([("HasMatlab".to_string(), "true".to_string())]),
        demand: Demand {
            idle_jobs: 4,
            remote_jobs: 1,
        },
        policy: Default::default(),
        classes: Vec::new(),
        submit_only: false,
        execute_only: false,
        sequence: 9,
        sent_at: Time::from_secs(120),
        claims_used: Vec::new(),
        claims_held: Vec::new(),
        summary: None,
    }
}

#[test]
fn station_ad_round_trip_and_shape() {
    let a = ad();
    let v = serde_json::to_value(&a).unwrap();
    assert_eq!(v["state"], "AV");
    assert_eq!(v["running_guests"][0]["job"], "3.1");
    let back: StationAd = serde_json::from_value(v).unwrap();
    assert_eq!(back, a);
}

#[test]
fn optional_fields_may_be_omitted() {
    let minimal = json!({
        "name": "ws1", "address": "http://ws1:9618", "state": "NA",
        "cpus": 1, "memory_mb": 512, "disk_free_kb": 0,
        "arch": "X86_64", "opsys": "LINUX", "sent_at": 0
    });
    let a: StationAd = serde_json::from_value(minimal).unwrap();
    assert_eq!(a.protocol, PROTOCOL_VERSION);
    assert_eq!(a.demand, Demand::default());
    assert!(a.running_guests.is_empty());
}

#[test]
fn replies_and_placements_round_trip() {
    let r = AdvertiseReply {
        protocol: PROTOCOL_VERSION,
        grants: vec![Grant {
            host: "ws3".into(),
            host_address: "http://ws3:9618".into(),
            claim_id: "c-1".into(),
            class: None,
            nonce: None,
            gang: vec![],
        }],
        preemptions: vec![Preemption {
            host: "ws4".into(),
            job: Some(JobId::new(1, 0)),
            reason: "up-down".into(),
            claim: None,
        }],
        next_advertise_secs: 120,
        claims: vec![],
        checkpoint_transfer_rate: Some(52_000_000),
        drained: true,
        destinations: vec![Destination {
            job: JobId::new(3, 1),
            home: "ws7".into(),
            available: true,
        }],
        revoked: vec![gleaner_proto::creds::RevokedToken {
            token_id: "0123abcd".into(),
            expires_at: Some(2_000),
        }]
        .into(),
    };
    let s = serde_json::to_string(&r).unwrap();
    assert_eq!(serde_json::from_str::<AdvertiseReply>(&s).unwrap(), r);
    // Replies of coordinators that do not measure the pool's rate or give
    // destinations still parse.
    let old: AdvertiseReply = serde_json::from_str(r#"{"next_advertise_secs":120}"#).unwrap();
    assert_eq!(old.checkpoint_transfer_rate, None);
    assert!(old.destinations.is_empty());
    assert!(old.revoked.is_empty() && !s.is_empty());
    let quiet = AdvertiseReply::default();
    assert!(!serde_json::to_string(&quiet).unwrap().contains("revoked"));

    let p = PlacementRequest {
        protocol: PROTOCOL_VERSION,
        job_id: JobId::new(5, 2),
        home: "ws7".into(),
        claim_id: "c-1".into(),
        description: JobDescription::new("alice", "/bin/sim"),
        shadow: "http://ws7:9618/v1/shadow/5.2".into(),
        checkpoint: None,
        run_count: 0,
        lease_secs: None,
        run: None,
        claim_seq: 0,
    };
    let s = serde_json::to_string(&p).unwrap();
    assert_eq!(serde_json::from_str::<PlacementRequest>(&s).unwrap(), p);

    let rej = PlacementResponse::Rejected {
        reason: RejectReason::OwnerActive,
        message: "owner is back".into(),
    };
    let v = serde_json::to_value(&rej).unwrap();
    assert_eq!(v["result"], "rejected");
    assert_eq!(v["reason"], "owner_active");
    assert_eq!(serde_json::from_value::<PlacementResponse>(v).unwrap(), rej);

    let rep = JobStatusReport {
        protocol: PROTOCOL_VERSION,
        job_id: JobId::new(5, 2),
        host: "ws3".into(),
        event: JobEventKind::Completed,
        state: JobState::Completed { exit_code: 0 },
        at: Time::from_secs(500),
        detail: String::new(),
        usage: Some(Usage {
            cpu_secs: 10.0,
            wall_secs: 12.0,
            max_rss_mb: 100,
        }),
        run: Some("ws1/5.2/r3/00ff".parse().unwrap()),
        start_failure: None,
        hold_code: None,
    };
    let s = serde_json::to_string(&rep).unwrap();
    assert_eq!(serde_json::from_str::<JobStatusReport>(&s).unwrap(), rep);
}

#[test]
fn error_body_shape_and_version_check() {
    let e = ErrorBody::new(ErrorCode::BadRequest, "bad cpus").with_field("cpus");
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({"error": {"code": "bad_request", "message": "bad cpus", "field": "cpus"}})
    );
    let no_field = ErrorBody::new(ErrorCode::NotFound, "no such job");
    assert_eq!(
        serde_json::to_value(&no_field).unwrap(),
        json!({"error": {"code": "not_found", "message": "no such job"}})
    );
    assert_eq!(ErrorCode::Conflict.http_status(), 409);
    assert!(check_version(PROTOCOL_VERSION).is_ok());
    let err = check_version(PROTOCOL_VERSION + 1).unwrap_err();
    assert_eq!(err.error.code, ErrorCode::VersionMismatch);
    assert_eq!(err.error.field.as_deref(), Some("protocol"));
}

/// An ad that differs only in its progress fields says nothing new; a
/// change of any other field does.
#[test]
fn only_progress_fields_leave_an_ad_the_same() {
    let a = ad();
    let mut b = ad();
    b.sequence += 1;
    b.sent_at = Time::from_secs(130);
    b.disk_free_kb -= 4;
    b.summary = Some(Default::default());
    assert!(a.same_apart_from_progress(&b));
    type Change = fn(&mut StationAd);
    let changes: [(&str, Change); 18] = [
        ("protocol", |x| x.protocol += 1),
        ("name", |x| x.name.push('x')),
        ("address", |x| x.address.push('x')),
        ("state", |x| x.state = OwnerState::Na),
        ("cpus", |x| x.cpus += 1),
        ("memory_mb", |x| x.memory_mb += 1),
        ("arch", |x| x.arch.push('x')),
        ("opsys", |x| x.opsys.push('x')),
        ("speed", |x| x.speed += 0.5),
        ("running_guests", |x| x.running_guests[0].suspended = true),
        ("attrs", |x| {
            x.attrs.insert("Extra".into(), "1".into());
        }),
        ("demand", |x| x.demand.idle_jobs += 1),
        ("policy", |x| x.policy.max_guests = Some(1)),
        ("classes", |x| {
            x.classes = vec![gleaner_proto::matchmaking::JobClass::of(
                &JobDescription::new("bob", "/bin/true"),
            )]
        }),
        ("submit_only", |x| x.submit_only = true),
        ("execute_only", |x| x.execute_only = true),
        ("claims_used", |x| x.claims_used.push("n1".into())),
        ("claims_held", |x| {
            x.claims_held.push(HeldClaim {
                claim: "n2".into(),
                home: "ws7".into(),
                job: JobId::new(4, 0),
                running: false,
                concurrency_limits: Vec::new(),
            })
        }),
    ];
    for (field, change) in changes {
        let mut c = ad();
        change(&mut c);
        assert!(!a.same_apart_from_progress(&c), "{field}");
    }
}
