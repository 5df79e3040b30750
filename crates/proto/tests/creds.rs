//! The Ed25519 credentials (`gleaner_proto::creds`): keys and their files,
//! tokens, claims, single-use nonces, revocations.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use gleaner_proto::creds::{
    CLOCK_STEP_GRACE_SECS, ClaimError, ClaimTicket, Claims, KeyError, KeyFileError, NonceBook,
    NonceFile, NonceFileError, PoolSigner, PoolVerifier, Revocations, RevokedToken, Role,
    TokenError, check_station_name, check_user_name, load_or_create_signing_key, load_public_key,
    load_signing_key, peek_claims, write_public_key,
};
use proptest::prelude::*;
use std::os::unix::fs::PermissionsExt;

fn signer(seed: u8) -> PoolSigner {
    let mut s = [0u8; 32];
    for (i, x) in s.iter_mut().enumerate() {
        *x = seed.wrapping_mul(31).wrapping_add(i as u8);
    }
    PoolSigner::from_seed(&s)
}

fn user_claims() -> Claims {
    Claims {
        subject: "alice".into(),
        role: Role::User,
        issued_at: 1_000,
        expires_at: Some(2_000),
        token_id: "0123456789abcdef0123456789abcdef".into(),
    }
}

fn ticket() -> ClaimTicket {
    ClaimTicket::new(
        "exec1",
        "home1",
        "http://10.0.0.5:9620",
        1_000,
        1_360,
        "00ff00ff00ff00ff00ff00ff00ff00ff",
    )
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

// ---- keys -----------------------------------------------------------------

#[test]
fn signing_key_is_created_private_and_reloads_identically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/signing.key");
    let a = load_or_create_signing_key(&path).unwrap();
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    let b = load_or_create_signing_key(&path).unwrap();
    assert_eq!(a.verifier(), b.verifier());
    assert_eq!(load_signing_key(&path).unwrap().verifier(), a.verifier());
    // The file holds the seed; Debug never shows it.
    let text = std::fs::read_to_string(&path).unwrap();
    let secret = text
        .lines()
        .last()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap();
    assert!(!format!("{a:?}").contains(secret), "{a:?}");
    assert!(!format!("{a:?}").contains(&secret[..8]), "{a:?}");
}

#[test]
fn racing_creators_end_up_with_one_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("signing.key");
    let keys: Vec<PoolVerifier> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| s.spawn(|| load_or_create_signing_key(&path).unwrap().verifier()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(keys.windows(2).all(|w| w[0] == w[1]));
    // No temporary file is left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn load_signing_key_never_creates_and_refuses_permissive_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("signing.key");
    assert!(matches!(
        load_signing_key(&path),
        Err(KeyFileError::Missing { .. })
    ));
    assert!(!path.exists());
    load_or_create_signing_key(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let err = load_signing_key(&path).unwrap_err();
    assert!(
        matches!(err, KeyFileError::Permissive { mode: 0o640, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("chmod 600"), "{err}");
    assert!(load_or_create_signing_key(&path).is_err());
}

#[test]
fn public_key_file_round_trips_with_comments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pool.pub");
    let v = signer(1).verifier();
    write_public_key(&path, &v).unwrap();
    assert_eq!(mode(&path), 0o644);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("gleaner-ed25519 "), "{text}");
    assert!(text.contains(&v.fingerprint()), "{text}");
    assert_eq!(load_public_key(&path).unwrap(), v);
    let annotated = format!("# copied from the coordinator\n\n{text}\n# end\n");
    assert_eq!(PoolVerifier::from_file_str(&annotated).unwrap(), v);
}

#[test]
fn bad_public_key_files_give_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pool.pub");
    let err = load_public_key(&path).unwrap_err();
    assert!(matches!(err, KeyFileError::Missing { .. }));
    assert!(err.to_string().contains("pool.pub"), "{err}");

    type IsExpected = fn(&KeyError) -> bool;
    let cases: [(&str, IsExpected); 6] = [
        ("", |e| matches!(e, KeyError::Empty { .. })),
        ("ssh-ed25519 AAAA", |e| {
            matches!(e, KeyError::WrongLabel { .. })
        }),
        ("gleaner-ed25519 !!!", |e| {
            matches!(e, KeyError::BadEncoding)
        }),
        ("gleaner-ed25519 AAAA", |e| {
            matches!(e, KeyError::WrongLength(3))
        }),
        ("gleaner-ed25519 AAAA\ngleaner-ed25519 AAAA", |e| {
            matches!(e, KeyError::ExtraLines)
        }),
        ("gleaner-ed25519-secret AAAA", |e| {
            matches!(e, KeyError::SigningKeyGiven)
        }),
    ];
    for (text, is_expected) in cases {
        std::fs::write(&path, text).unwrap();
        match load_public_key(&path) {
            Err(KeyFileError::Key { path: p, source }) => {
                assert_eq!(p, path);
                assert!(is_expected(&source), "{text:?}: {source}");
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
    // A signing key file is never accepted as the public key.
    let sk = dir.path().join("signing.key");
    load_or_create_signing_key(&sk).unwrap();
    let err = load_public_key(&sk).unwrap_err();
    assert!(err.to_string().contains("never signing.key"), "{err}");
    // A small-order point is not a key anyone can hold.
    let mut ident = [0u8; 32];
    ident[0] = 1;
    assert_eq!(PoolVerifier::from_bytes(&ident), Err(KeyError::NotAKey));
}

// ---- tokens ---------------------------------------------------------------

#[test]
fn token_round_trip() {
    let s = signer(1);
    let t = s.sign(&user_claims()).unwrap();
    assert_eq!(t.matches('.').count(), 1);
    let v = s.verifier();
    assert_eq!(v.verify(&t, 1_500), Ok(user_claims()));
    assert_eq!(v.verify(&format!("  {t}\n"), 1_500), Ok(user_claims()));
    assert_eq!(peek_claims(&t), Ok(user_claims()));
    // No header and no algorithm: the first part is the claims, nothing else.
    let (payload, _) = t.split_once('.').unwrap();
    let json = URL_SAFE_NO_PAD.decode(payload).unwrap();
    let obj: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(obj["role"], "user");
    assert!(obj.get("alg").is_none());
}

#[test]
fn station_token_may_never_expire_but_user_and_admin_tokens_must() {
    let s = signer(2);
    let station = Claims {
        subject: "ws12.example.org".into(),
        role: Role::Station,
        expires_at: None,
        ..user_claims()
    };
    let t = s.sign(&station).unwrap();
    assert_eq!(s.verifier().verify(&t, u64::MAX), Ok(station));
    for role in [Role::User, Role::Admin] {
        let c = Claims {
            role,
            expires_at: None,
            ..user_claims()
        };
        assert!(matches!(s.sign(&c), Err(TokenError::Invalid(_))), "{role}");
    }
    let backwards = Claims {
        expires_at: Some(999),
        ..user_claims()
    };
    assert!(s.sign(&backwards).is_err());
}

#[test]
fn expired_token_rejected() {
    let s = signer(1);
    let t = s.sign(&user_claims()).unwrap();
    assert_eq!(
        s.verifier().verify(&t, 2_000),
        Err(TokenError::Expired {
            expired_at: 2_000,
            now: 2_000
        })
    );
    assert!(s.verifier().verify(&t, 1_999).is_ok());
}

#[test]
fn token_signed_by_another_key_rejected() {
    let t = signer(1).sign(&user_claims()).unwrap();
    assert_eq!(
        signer(2).verifier().verify(&t, 1_500),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn flipping_any_decoded_byte_is_rejected() {
    let s = signer(3);
    let v = s.verifier();
    let t = s.sign(&user_claims()).unwrap();
    let (p, sig) = t.split_once('.').unwrap();
    let payload = URL_SAFE_NO_PAD.decode(p).unwrap();
    let sig = URL_SAFE_NO_PAD.decode(sig).unwrap();
    for i in 0..payload.len() {
        let mut bad = payload.clone();
        bad[i] ^= 0x01;
        let forged = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&bad),
            URL_SAFE_NO_PAD.encode(&sig)
        );
        assert_eq!(
            v.verify(&forged, 1_500),
            Err(TokenError::BadSignature),
            "payload byte {i}"
        );
    }
    for i in 0..sig.len() {
        let mut bad = sig.clone();
        bad[i] ^= 0x80;
        let forged = format!("{p}.{}", URL_SAFE_NO_PAD.encode(&bad));
        assert!(v.verify(&forged, 1_500).is_err(), "signature byte {i}");
    }
}

#[test]
fn verifier_only_holder_cannot_mint() {
    let s = signer(4);
    let v = s.verifier();
    // PoolVerifier has no signing method at all (this file would not compile
    // otherwise); the public key bytes are all a station holds. Used as an
    // Ed25519 seed they mint nothing.
    let public = v.to_bytes();
    let admin = Claims {
        subject: "root".into(),
        role: Role::Admin,
        ..user_claims()
    };
    let forged = PoolSigner::from_seed(&public).sign(&admin).unwrap();
    assert_eq!(v.verify(&forged, 1_500), Err(TokenError::BadSignature));
    // Nor does the public key itself pasted as a signature (padded to 64).
    let (p, _) = forged.split_once('.').unwrap();
    let mut sig = public.to_vec();
    sig.extend_from_slice(&public);
    let pasted = format!("{p}.{}", URL_SAFE_NO_PAD.encode(&sig));
    assert!(v.verify(&pasted, 1_500).is_err());
}

#[test]
fn peek_reads_unverified_claims_for_display_only() {
    let forged = PoolSigner::from_seed(&[9; 32])
        .sign(&user_claims())
        .unwrap();
    assert_eq!(peek_claims(&forged), Ok(user_claims()));
    assert_eq!(
        signer(1).verifier().verify(&forged, 1_500),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn oversized_tokens_are_refused_before_decoding() {
    let v = signer(1).verifier();
    let huge = format!("{}.{}", "A".repeat(9_000), "B".repeat(86));
    assert_eq!(v.verify(&huge, 0), Err(TokenError::Malformed("too long")));
    assert!(peek_claims(&huge).is_err());
}

// ---- claims ---------------------------------------------------------------

#[test]
fn claim_round_trip_checks_host_home_and_address() {
    let s = signer(5);
    let v = s.verifier();
    let c = s.sign_claim(&ticket()).unwrap();
    let got = v.verify_claim(&c, "exec1", 1_100).unwrap();
    assert_eq!(got, ticket());
    assert!(got.check_home("home1").is_ok());
    assert!(matches!(
        got.check_home("evil"),
        Err(ClaimError::WrongHome { .. })
    ));
    assert!(got.check_address("http://10.0.0.5:9620/").is_ok());
    assert!(matches!(
        got.check_address("http://attacker:80"),
        Err(ClaimError::WrongAddress { .. })
    ));
    assert!(matches!(
        v.verify_claim(&c, "exec2", 1_100),
        Err(ClaimError::WrongHost { .. })
    ));
    assert_eq!(
        v.verify_claim(&c, "exec1", 1_360),
        Err(ClaimError::Expired {
            expired_at: 1_360,
            now: 1_360
        })
    );
    assert_eq!(
        signer(6).verifier().verify_claim(&c, "exec1", 1_100),
        Err(ClaimError::BadSignature)
    );
}

#[test]
fn a_claim_never_passes_as_a_token_nor_back() {
    let s = signer(7);
    let v = s.verifier();
    let claim = s.sign_claim(&ticket()).unwrap();
    let token = s.sign(&user_claims()).unwrap();
    // Different signing contexts: the signature itself does not carry over.
    assert_eq!(v.verify(&claim, 1_100), Err(TokenError::BadSignature));
    assert_eq!(
        v.verify_claim(&token, "exec1", 1_100),
        Err(ClaimError::BadSignature)
    );
    // And the JSON shapes refuse each other (deny_unknown_fields).
    let tj = serde_json::to_string(&user_claims()).unwrap();
    let cj = serde_json::to_string(&ticket()).unwrap();
    assert!(serde_json::from_str::<ClaimTicket>(&tj).is_err());
    assert!(serde_json::from_str::<Claims>(&cj).is_err());
}

#[test]
fn invalid_claims_are_not_signed() {
    let s = signer(8);
    let bad = [
        ClaimTicket {
            host: "exec 1".into(),
            ..ticket()
        },
        ClaimTicket {
            home: "".into(),
            ..ticket()
        },
        ClaimTicket {
            home_address: "file:///etc/shadow".into(),
            ..ticket()
        },
        ClaimTicket {
            home_address: "http://a b".into(),
            ..ticket()
        },
        ClaimTicket {
            nonce: "".into(),
            ..ticket()
        },
        ClaimTicket {
            kind: "token".into(),
            ..ticket()
        },
        ClaimTicket {
            expires_at: 1_000,
            ..ticket()
        },
    ];
    for t in bad {
        assert!(s.sign_claim(&t).is_err(), "{t:?}");
    }
}

// ---- names ----------------------------------------------------------------

#[test]
fn user_and_station_name_rules() {
    for ok in [
        "alice",
        "_svc",
        "bob-2",
        "a_b",
        "machine$",
        "a".repeat(32).as_str(),
    ] {
        assert!(check_user_name(ok).is_ok(), "{ok}");
    }
    for bad in [
        "",
        "Alice",
        "1abc",
        "-x",
        "a b",
        "a/b",
        "a$b",
        "$",
        "é",
        "a".repeat(33).as_str(),
    ] {
        assert!(check_user_name(bad).is_err(), "{bad:?}");
    }
    let long_ok = [
        "a".repeat(63),
        "b".repeat(63),
        "c".repeat(63),
        "d".repeat(61),
    ]
    .join(".");
    assert_eq!(long_ok.len(), 253);
    for ok in [
        "ws12",
        "station-home",
        "exec1.cs.wisc.edu",
        "WS12",
        "my_pc",
        long_ok.as_str(),
    ] {
        assert!(check_station_name(ok).is_ok(), "{ok}");
    }
    let too_long = format!("{long_ok}x");
    let label64 = "a".repeat(64);
    for bad in [
        "",
        ".",
        "a..b",
        "a.",
        ".a",
        "-a",
        "a-",
        "a b",
        "a/b",
        "a@b",
        "station@ws12",
        too_long.as_str(),
        label64.as_str(),
    ] {
        assert!(check_station_name(bad).is_err(), "{bad:?}");
    }
    // The role decides which rules a token's subject follows.
    let s = signer(9);
    let host_as_user = Claims {
        subject: "ws12.example.org".into(),
        ..user_claims()
    };
    assert!(matches!(s.sign(&host_as_user), Err(TokenError::Subject(_))));
    let user_as_station = Claims {
        subject: "alice smith".into(),
        role: Role::Station,
        ..user_claims()
    };
    assert!(matches!(
        s.sign(&user_as_station),
        Err(TokenError::Subject(_))
    ));
}

// ---- nonces ---------------------------------------------------------------

#[test]
fn nonce_replay_refused() {
    let mut b = NonceBook::new();
    assert_eq!(b.try_use("n1", 1_360, 1_000), Ok(()));
    assert_eq!(
        b.try_use("n1", 1_360, 1_001),
        Err(ClaimError::Replayed { nonce: "n1".into() })
    );
    assert_eq!(b.try_use("n2", 1_360, 1_001), Ok(()));
    assert!(matches!(
        b.try_use("n3", 1_000, 1_000),
        Err(ClaimError::Expired { .. })
    ));
    assert!(!b.contains("n3"));
}

#[test]
fn expired_nonces_are_pruned() {
    let mut b = NonceBook::new();
    b.try_use("old", 1_100, 1_000).unwrap();
    b.try_use("new", 5_000, 1_000).unwrap();
    // Kept through the clock-step grace, then forgotten.
    assert_eq!(b.prune(1_100 + CLOCK_STEP_GRACE_SECS - 1), 0);
    assert_eq!(b.prune(1_100 + CLOCK_STEP_GRACE_SECS), 1);
    assert!(!b.contains("old") && b.contains("new"));
    // try_use prunes by itself.
    b.try_use("x", 6_000, 5_000 + CLOCK_STEP_GRACE_SECS - 1)
        .unwrap();
    b.try_use("y", 9_000, 5_000 + CLOCK_STEP_GRACE_SECS)
        .unwrap();
    assert!(!b.contains("new"));
    assert_eq!(b.len(), 2);
}

#[test]
fn nonce_book_is_bounded() {
    let mut b = NonceBook::with_capacity(3);
    for n in ["a", "b", "c"] {
        b.try_use(n, 2_000, 1_000).unwrap();
    }
    assert_eq!(
        b.try_use("d", 2_000, 1_000),
        Err(ClaimError::TooManyClaims { capacity: 3 })
    );
    assert_eq!(b.len(), 3);
    // Room again once the old claims have expired.
    b.try_use("d", 9_000, 2_000 + CLOCK_STEP_GRACE_SECS)
        .unwrap();
    assert_eq!(b.len(), 1);
}

#[test]
fn nonce_file_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nonces.json");
    {
        let mut f = NonceFile::open(&path).unwrap();
        assert!(f.book().is_empty());
        f.try_use("n1", 1_360, 1_000).unwrap();
        f.try_use("n2", 1_360, 1_000).unwrap();
    }
    assert_eq!(mode(&path), 0o600);
    let mut f = NonceFile::open(&path).unwrap();
    assert_eq!(f.book().len(), 2);
    assert!(matches!(
        f.try_use("n1", 1_360, 1_010),
        Err(NonceFileError::Claim(ClaimError::Replayed { .. }))
    ));
    // Serde round trip of the book itself.
    let json = serde_json::to_string(f.book()).unwrap();
    assert_eq!(&serde_json::from_str::<NonceBook>(&json).unwrap(), f.book());
}

#[test]
fn nonce_file_corrupt_or_unwritable_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nonces.json");
    std::fs::write(&path, "{not json").unwrap();
    let err = NonceFile::open(&path).unwrap_err();
    assert!(matches!(err, NonceFileError::Corrupt { .. }));
    assert!(err.to_string().contains("nonces.json"), "{err}");

    // The directory vanishes under the host: the claim is refused and not
    // remembered as used (it was never durable).
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let mut f = NonceFile::open(&sub.join("nonces.json")).unwrap();
    std::fs::remove_dir(&sub).unwrap();
    assert!(matches!(
        f.try_use("n", 2_000, 1_000),
        Err(NonceFileError::Io { .. })
    ));
    assert!(!f.book().contains("n"));
}

// ---- revocations ----------------------------------------------------------

#[test]
fn revocations_check_merge_prune_and_serde() {
    let mut r = Revocations::new();
    assert!(r.revoke("t1", Some(2_000)));
    assert!(
        !r.revoke("t1", Some(1_500)),
        "an earlier expiry changes nothing"
    );
    let c = Claims {
        token_id: "t1".into(),
        ..user_claims()
    };
    assert!(r.is_revoked(&c));
    assert_eq!(
        r.check(&c),
        Err(TokenError::Revoked {
            token_id: "t1".into()
        })
    );
    assert!(r.check(&user_claims()).is_ok());

    let mut other = Revocations::new();
    other.revoke("t2", None);
    other.revoke("t1", Some(3_000));
    assert!(r.merge(&other));
    assert!(!r.merge(&other));
    assert_eq!(
        r.iter().collect::<Vec<_>>(),
        vec![
            RevokedToken {
                token_id: "t1".into(),
                expires_at: Some(3_000)
            },
            RevokedToken {
                token_id: "t2".into(),
                expires_at: None
            },
        ]
    );
    // The wire form is a plain list; duplicates fold together.
    let json = serde_json::to_string(&r).unwrap();
    assert_eq!(
        json,
        r#"[{"token_id":"t1","expires_at":3000},{"token_id":"t2"}]"#
    );
    assert_eq!(serde_json::from_str::<Revocations>(&json).unwrap(), r);
    let dup = r#"[{"token_id":"a","expires_at":5},{"token_id":"a","expires_at":9}]"#;
    let d: Revocations = serde_json::from_str(dup).unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d.iter().next().unwrap().expires_at, Some(9));

    // Pruned once the token has expired (plus grace); never-expiring kept.
    assert_eq!(r.prune(3_000 + CLOCK_STEP_GRACE_SECS - 1), 0);
    assert_eq!(r.prune(3_000 + CLOCK_STEP_GRACE_SECS), 1);
    assert!(r.contains("t2") && !r.contains("t1"));
}

#[test]
fn revocations_file_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("revoked.json");
    assert!(Revocations::load(&path).unwrap().is_empty());
    let mut r = Revocations::new();
    r.revoke("t1", Some(10));
    r.save(&path).unwrap();
    assert_eq!(mode(&path), 0o600);
    assert_eq!(Revocations::load(&path).unwrap(), r);
    std::fs::write(&path, "[{\"token_id\":1}]").unwrap();
    assert!(Revocations::load(&path).is_err());
}

// ---- properties -----------------------------------------------------------

fn role() -> impl Strategy<Value = Role> {
    prop_oneof![Just(Role::User), Just(Role::Admin), Just(Role::Station)]
}

/// A name both rule sets accept.
fn name() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_]{0,20}"
}

proptest! {
    #[test]
    fn valid_claims_round_trip(
        subject in name(),
        role in role(),
        issued_at in 0u64..1 << 40,
        life in 1u64..1 << 30,
        token_id in "[0-9a-f]{32}",
        seed in any::<u8>(),
    ) {
        let c = Claims { subject, role, issued_at, expires_at: Some(issued_at + life), token_id };
        let s = signer(seed);
        let t = s.sign(&c).unwrap();
        prop_assert_eq!(s.verifier().verify(&t, issued_at), Ok(c));
    }

    #[test]
    fn any_single_character_change_is_rejected(pos in any::<prop::sample::Index>(), repl in "[A-Za-z0-9_.-]") {
        let s = signer(11);
        let t = s.sign(&user_claims()).unwrap();
        let i = pos.index(t.len());
        let mut bytes = t.clone().into_bytes();
        bytes[i] = repl.as_bytes()[0];
        let changed = String::from_utf8(bytes).unwrap();
        prop_assume!(changed != t);
        prop_assert!(s.verifier().verify(&changed, 1_500).is_err());
    }

    #[test]
    fn garbage_never_panics_nor_verifies(s in "(?s).{0,300}", a in "[A-Za-z0-9_-]{0,100}", b in "[A-Za-z0-9_-]{0,90}") {
        let v = signer(4).verifier();
        let _ = peek_claims(&s);
        let _ = PoolVerifier::from_file_str(&s);
        prop_assert!(v.verify(&s, 0).is_err());
        prop_assert!(v.verify_claim(&s, "h", 0).is_err());
        let dotted = format!("{a}.{b}");
        prop_assert!(v.verify(&dotted, 0).is_err());
    }

    #[test]
    fn user_name_rule_matches_its_pattern(s in "[a-z_$0-9A-Z -]{0,40}") {
        // Reference: [a-z_][a-z0-9_-]*[$]?, at most 32.
        let body = s.strip_suffix('$').unwrap_or(&s);
        let expect = s.len() <= 32
            && body.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && body.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        prop_assert_eq!(check_user_name(&s).is_ok(), expect);
    }

    #[test]
    fn a_nonce_is_accepted_at_most_once_while_its_claim_is_valid(
        ops in prop::collection::vec((0u8..6, 1u64..500, 0u64..50), 1..200),
    ) {
        let mut book = NonceBook::with_capacity(64);
        let mut now = 1_000u64;
        let mut accepted: std::collections::HashMap<u8, u64> = Default::default();
        for (n, life, step) in ops {
            now += step;
            let exp = now + life;
            let nonce = format!("n{n}");
            let r = book.try_use(&nonce, exp, now);
            if let Some(&prev_exp) = accepted.get(&n) {
                // While the earlier claim with this nonce is still valid,
                // (or within the grace) it can never be accepted again.
                if now < prev_exp + CLOCK_STEP_GRACE_SECS {
                    prop_assert!(matches!(r, Err(ClaimError::Replayed { .. })), "{r:?}");
                }
            }
            if r.is_ok() {
                accepted.insert(n, exp);
            }
        }
    }
}

// ---- the memo of verified signatures ---------------------------------------

/// A verifier that already verified `t` and `c` (its memo holds them).
fn warmed(s: &PoolSigner, t: &str, c: &str) -> PoolVerifier {
    let v = s.verifier();
    assert!(v.verify(t, 1_500).is_ok());
    assert!(v.verify_claim(c, "exec1", 1_100).is_ok());
    v
}

#[test]
fn a_remembered_signature_still_gets_every_other_check() {
    let s = signer(7);
    let t = s.sign(&user_claims()).unwrap();
    let c = s.sign_claim(&ticket()).unwrap();
    let v = warmed(&s, &t, &c);
    // The second time, from the memo: the same answers, expiry included.
    assert_eq!(v.verify(&t, 1_500).unwrap(), user_claims());
    assert!(matches!(
        v.verify(&t, 2_000),
        Err(TokenError::Expired { .. })
    ));
    assert!(matches!(
        v.verify_claim(&c, "exec2", 1_100),
        Err(ClaimError::WrongHost { .. })
    ));
    assert!(matches!(
        v.verify_claim(&c, "exec1", 1_360),
        Err(ClaimError::Expired { .. })
    ));
    // A token's text is no claim, and a claim's no token, memo or not.
    assert!(v.verify_claim(&t, "exec1", 1_100).is_err());
    assert!(v.verify(&c, 1_100).is_err());
    // Another key's verifier shares nothing with this one.
    assert_eq!(
        signer(8).verifier().verify(&t, 1_500),
        Err(TokenError::BadSignature)
    );
}

proptest! {
    /// The memo never changes a verdict: any one-character change to a
    /// remembered token or claim gets the answer a fresh verifier gives.
    #[test]
    fn the_memo_never_changes_a_verdict(
        pos in 0usize..400,
        with in proptest::sample::select(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.".chars().collect::<Vec<_>>()
        ),
        now in 900u64..2_100,
    ) {
        let s = signer(9);
        let t = s.sign(&user_claims()).unwrap();
        let c = s.sign_claim(&ticket()).unwrap();
        let warm = warmed(&s, &t, &c);
        let change = |text: &str| {
            let mut chars: Vec<char> = text.chars().collect();
            let i = pos % chars.len();
            chars[i] = with;
            chars.into_iter().collect::<String>()
        };
        let (t2, c2) = (change(&t), change(&c));
        prop_assert_eq!(warm.verify(&t2, now), s.verifier().verify(&t2, now));
        prop_assert_eq!(
            warm.verify_claim(&c2, "exec1", now),
            s.verifier().verify_claim(&c2, "exec1", now)
        );
        prop_assert_eq!(warm.open_claim(&c2), s.verifier().open_claim(&c2));
    }
}
