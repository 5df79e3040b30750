//! The station's credentials (DESIGN.md, Trust model): the pool's public
//! key (`public_key`, a copy of the coordinator's `pool.pub`), with which
//! it verifies every token and claim, and its own token (`token_file`,
//! from `glean token create --station NAME`), with which it advertises,
//! places and reports. It holds nothing that can sign.
//!
//! A station refuses to start with a token that is not a station token,
//! names another station, does not verify under the public key, has
//! expired or is known to be revoked, saying which file is wrong.

use super::DaemonError;
use crate::config::StationConfig;
use gleaner_proto::creds::{Claims, PoolVerifier, Revocations, Role, load_public_key};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// What the station proves itself with and verifies others with.
#[derive(Debug)]
pub struct StationCredentials {
    pub verifier: PoolVerifier,
    /// This station's token, sent as its bearer token.
    pub token: String,
    /// The token's claims (subject: this station's name).
    pub claims: Claims,
}

fn refuse(msg: String) -> DaemonError {
    DaemonError::Credentials(msg)
}

/// Loads the public key and the station token and checks that the token
/// is this station's (`name`), valid at `now`, and not in `revoked`.
pub fn load(
    config: &StationConfig,
    name: &str,
    revoked: &Revocations,
    now_secs: u64,
) -> Result<StationCredentials, DaemonError> {
    let verifier = load_public_key(&config.public_key).map_err(|e| {
        refuse(format!(
            "{e} (public_key: copy pool.pub from the coordinator's state directory)"
        ))
    })?;
    let path = &config.token_file;
    let token = read_token(path)?;
    let shown = path.display();
    let claims = verifier.verify(&token, now_secs).map_err(|e| {
        refuse(format!(
            "the station token in {shown} is not valid for this pool (public key {}): {e}",
            verifier.fingerprint()
        ))
    })?;
    if claims.role != Role::Station {
        return Err(refuse(format!(
            "the token in {shown} is a {} token for {:?}, not a station token; create this \
             station's with `glean token create --station {name}`",
            claims.role, claims.subject
        )));
    }
    if claims.subject != name {
        return Err(refuse(format!(
            "the token in {shown} is station {:?}'s, but this station is {name:?}: a station \
             speaks only for itself (`glean token create --station {name}`)",
            claims.subject
        )));
    }
    if revoked.is_revoked(&claims) {
        return Err(refuse(format!(
            "the station token in {shown} (id {}) has been revoked",
            claims.token_id
        )));
    }
    Ok(StationCredentials {
        verifier,
        token,
        claims,
    })
}

/// Reads a token file: one token, surrounding whitespace ignored. A file
/// group or others may read is refused: whoever reads it can speak as the
/// station.
fn read_token(path: &Path) -> Result<String, DaemonError> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| {
        refuse(format!(
            "station token file {shown}: {e} (token_file: create it with `glean token create \
             --station NAME` where the coordinator's signing key is)"
        ))
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(refuse(format!(
            "station token file {shown} is accessible to group or others (mode {mode:o}); run \
             `chmod 600 {shown}`"
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| refuse(format!("station token file {shown}: {e}")))?;
    let token = text.trim();
    if token.is_empty() || token.lines().count() != 1 {
        return Err(refuse(format!(
            "station token file {shown} must hold exactly one token"
        )));
    }
    Ok(token.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gleaner_proto::creds::{PoolSigner, write_public_key};
    use std::os::unix::fs::OpenOptionsExt;

    fn write_private(path: &Path, text: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    fn token(s: &PoolSigner, role: Role, subject: &str, exp: Option<u64>) -> String {
        s.sign(&Claims {
            subject: subject.into(),
            role,
            issued_at: 100,
            expires_at: exp,
            token_id: format!("id{}", subject.len()),
        })
        .unwrap()
    }

    #[test]
    fn only_this_stations_valid_token_is_accepted_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let signer = PoolSigner::from_seed(&[2; 32]);
        let config = StationConfig {
            public_key: dir.path().join("pool.pub"),
            token_file: dir.path().join("station.token"),
            ..Default::default()
        };
        write_public_key(&config.public_key, &signer.verifier()).unwrap();
        let file = config.token_file.display().to_string();
        let check = |tok: &str, revoked: &Revocations| {
            write_private(&config.token_file, tok);
            load(&config, "ws1", revoked, 1_000)
        };
        let none = Revocations::new();
        let ok = check(&token(&signer, Role::Station, "ws1", None), &none).unwrap();
        assert_eq!(ok.claims.subject, "ws1");
        let other = PoolSigner::from_seed(&[3; 32]);
        let mut revoked = Revocations::new();
        revoked.revoke("id3", None);
        for (tok, revoked, says) in [
            (
                token(&signer, Role::Station, "ws2", None),
                &none,
                "station \"ws2\"",
            ),
            (
                token(&signer, Role::User, "ws1", Some(5_000)),
                &none,
                "not a station token",
            ),
            (
                token(&other, Role::Station, "ws1", None),
                &none,
                "not valid for this pool",
            ),
            (
                token(&signer, Role::Station, "ws1", Some(900)),
                &none,
                "expired",
            ),
            (
                token(&signer, Role::Station, "ws1", None),
                &revoked,
                "revoked",
            ),
            ("garbage".to_string(), &none, "not valid"),
        ] {
            let e = check(&tok, revoked).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains(&file), "{says}: {e}");
        }
        std::fs::set_permissions(&config.token_file, std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let e = load(&config, "ws1", &none, 1_000).unwrap_err().to_string();
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::remove_file(&config.token_file).unwrap();
        let e = load(&config, "ws1", &none, 1_000).unwrap_err().to_string();
        assert!(e.contains(&file) && e.contains("glean token create"), "{e}");
        // A signing key given as the public key is named as such.
        std::fs::write(
            &config.public_key,
            "gleaner-ed25519-secret AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
        )
        .unwrap();
        let e = load(&config, "ws1", &none, 1_000).unwrap_err().to_string();
        assert!(e.contains("signing key"), "{e}");
    }
}
