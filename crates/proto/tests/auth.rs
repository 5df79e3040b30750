//! Pool-key tokens: round trip, tampering, expiry, key files, garbage.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use gleaner_proto::auth::{Claims, KEY_LEN, KeyError, PoolKey, Role, TokenError, peek_claims};
use proptest::prelude::*;

fn key(seed: u8) -> PoolKey {
    PoolKey::generate(|b| {
        for (i, x) in b.iter_mut().enumerate() {
            *x = seed.wrapping_mul(31).wrapping_add(i as u8);
        }
    })
}

fn claims() -> Claims {
    Claims {
        subject: "alice".into(),
        role: Role::User,
        issued_at: 1_000,
        expires_at: Some(2_000),
        token_id: "t-0001".into(),
    }
}

#[test]
fn round_trip() {
    let k = key(1);
    let t = k.sign(&claims());
    assert_eq!(t.matches('.').count(), 1);
    assert_eq!(k.verify(&t, 1_500), Ok(claims()));
    // Whitespace around a token pasted from a file is tolerated.
    assert_eq!(k.verify(&format!("  {t}\n"), 1_500), Ok(claims()));
    assert_eq!(peek_claims(&t), Ok(claims()));
}

#[test]
fn never_expiring_token() {
    let k = key(2);
    let c = Claims {
        expires_at: None,
        role: Role::Daemon,
        subject: "station@ws12".into(),
        ..claims()
    };
    let t = k.sign(&c);
    assert_eq!(k.verify(&t, u64::MAX), Ok(c));
}

#[test]
fn expired() {
    let k = key(1);
    let t = k.sign(&claims());
    assert_eq!(
        k.verify(&t, 2_000),
        Err(TokenError::Expired {
            expired_at: 2_000,
            now: 2_000
        })
    );
    // The signature itself is still good.
    assert!(k.verify_signature(&t).is_ok());
}

#[test]
fn wrong_key_is_bad_signature() {
    let t = key(1).sign(&claims());
    assert_eq!(key(2).verify(&t, 1_500), Err(TokenError::BadSignature));
}

#[test]
fn tampered_claims_are_bad_signature() {
    let k = key(1);
    let t = k.sign(&claims());
    let (_, sig) = t.split_once('.').unwrap();
    let forged = Claims {
        role: Role::Admin,
        ..claims()
    };
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
    assert_eq!(
        k.verify(&format!("{payload}.{sig}"), 1_500),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn every_flipped_character_is_rejected() {
    let k = key(3);
    let t = k.sign(&claims());
    for i in 0..t.len() {
        let mut bytes = t.clone().into_bytes();
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let Ok(s) = String::from_utf8(bytes) else {
            continue;
        };
        if s == t {
            continue;
        }
        assert!(
            k.verify(&s, 1_500).is_err(),
            "accepted tampered token at {i}"
        );
    }
}

#[test]
fn malformed_tokens() {
    let k = key(1);
    for bad in [
        "", ".", "abc", "abc.", ".abc", "a.b.c", "!!!.???", "abc.AAAA",
    ] {
        assert!(
            matches!(k.verify(bad, 0), Err(TokenError::Malformed(_))),
            "{bad:?}"
        );
    }
    let long = "a".repeat(20_000) + ".b";
    assert!(matches!(k.verify(&long, 0), Err(TokenError::Malformed(_))));
}

#[test]
fn key_file_round_trip_hex_and_base64() {
    let k = key(9);
    let text = k.to_file_string();
    assert_eq!(text.trim().len(), 2 * KEY_LEN);
    assert_eq!(PoolKey::from_file_str(&text), Ok(k.clone()));
    assert_eq!(
        PoolKey::from_file_str(&format!("# pool key\n{}\n", text.to_uppercase())),
        Ok(k.clone())
    );
    let std_b64 = base64::engine::general_purpose::STANDARD.encode(k.as_bytes());
    assert_eq!(PoolKey::from_file_str(&std_b64), Ok(k.clone()));
    let url_b64 = URL_SAFE_NO_PAD.encode(k.as_bytes());
    assert_eq!(PoolKey::from_file_str(&url_b64), Ok(k));
    assert_eq!(
        PoolKey::from_file_str("not a key!"),
        Err(KeyError::BadEncoding)
    );
    assert_eq!(
        PoolKey::from_file_str("abcd"),
        Err(KeyError::WrongLength(3))
    );
    assert_eq!(PoolKey::from_slice(&[0; 5]), Err(KeyError::WrongLength(5)));
}

#[test]
fn debug_does_not_leak_key() {
    assert_eq!(format!("{:?}", key(1)), "PoolKey(..)");
}

proptest! {
    #[test]
    fn garbage_never_panics(s in "(?s).{0,300}") {
        let k = key(4);
        let _ = k.verify(&s, 0);
        let _ = peek_claims(&s);
        let _ = PoolKey::from_file_str(&s);
    }

    #[test]
    fn base64ish_garbage_never_verifies(a in "[A-Za-z0-9_-]{0,100}", b in "[A-Za-z0-9_-]{0,60}") {
        let k = key(5);
        let token = format!("{a}.{b}");
        prop_assert!(k.verify(&token, 0).is_err());
    }

    #[test]
    fn any_claims_round_trip(
        subject in ".{0,40}",
        role in prop_oneof![Just(Role::User), Just(Role::Admin), Just(Role::Daemon)],
        issued_at in any::<u64>(),
        expires_at in proptest::option::of(any::<u64>()),
        token_id in "[a-z0-9-]{0,20}",
        seed in any::<u8>(),
    ) {
        let c = Claims { subject, role, issued_at, expires_at, token_id };
        let k = key(seed);
        let t = k.sign(&c);
        prop_assert_eq!(k.verify_signature(&t), Ok(c));
    }
}
