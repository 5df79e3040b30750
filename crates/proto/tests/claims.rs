//! Claim tickets and the pool key file.

use gleaner_proto::auth::{
    ClaimError, ClaimTicket, Claims, KeyFileError, PoolKey, Role, TokenError,
    load_or_create_pool_key,
};
use std::os::unix::fs::PermissionsExt;

fn key(b: u8) -> PoolKey {
    PoolKey::from_bytes([b; 32])
}

#[test]
fn claim_round_trip_binds_host_and_expiry() {
    let k = key(7);
    let t = ClaimTicket::new("ws3", "ws7", 100, 200, "n1");
    let id = k.sign_claim(&t);
    assert_eq!(k.verify_claim(&id, "ws3", 150).unwrap(), t);
    assert!(matches!(
        k.verify_claim(&id, "ws4", 150),
        Err(ClaimError::WrongHost { .. })
    ));
    assert!(matches!(
        k.verify_claim(&id, "ws3", 200),
        Err(ClaimError::Token(TokenError::Expired { .. }))
    ));
    assert!(matches!(
        key(8).verify_claim(&id, "ws3", 150),
        Err(ClaimError::Token(TokenError::BadSignature))
    ));
}

#[test]
fn claims_and_tokens_do_not_cross() {
    let k = key(1);
    let token = k.sign(&Claims {
        subject: "ws3".into(),
        role: Role::Daemon,
        issued_at: 0,
        expires_at: None,
        token_id: "t".into(),
    });
    assert!(k.verify_claim(&token, "ws3", 1).is_err());
    let claim = k.sign_claim(&ClaimTicket::new("ws3", "ws7", 0, 10, "n"));
    assert!(k.verify(&claim, 1).is_err());
}

#[test]
fn key_file_is_created_private_and_reloaded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/pool.key");
    let a = load_or_create_pool_key(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let b = load_or_create_pool_key(&path).unwrap();
    assert_eq!(a, b);
    assert_ne!(a.as_bytes(), &[0u8; 32]);
}

#[test]
fn world_readable_key_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pool.key");
    std::fs::write(&path, key(3).to_file_string()).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = load_or_create_pool_key(&path).unwrap_err();
    assert!(matches!(err, KeyFileError::Permissive { .. }));
    assert!(err.to_string().contains("chmod 600"));
}
