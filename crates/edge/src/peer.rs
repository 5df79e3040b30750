//! Callers on a local Unix socket, identified by the kernel.
//!
//! A daemon that serves on a Unix socket learns who connected from
//! `SO_PEERCRED` (the uid, gid and pid of the connecting process, fixed at
//! `connect`), as HTCondor's FS authentication and munge do: no token is
//! needed or read. [`PeerCred`] is axum's connect info for such a server
//! (`into_make_service_with_connect_info::<PeerCred>()` over a
//! `tokio::net::UnixListener`); [`LocalPeers`] wraps a token verifier and
//! maps a peer's uid to its account: uid 0 is the administrator `root`,
//! any other uid with an account is the user of that name.

use crate::auth::{Caller, Credential, PeerCred, Role, Verifier};
use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use tokio::net::UnixListener;

/// The uid reported when the kernel would not say who the peer is: no
/// account has it (`(uid_t)-1` means "no uid"), so the peer is refused.
pub const UNKNOWN_UID: u32 = u32::MAX;

impl Connected<IncomingStream<'_, UnixListener>> for PeerCred {
    fn connect_info(stream: IncomingStream<'_, UnixListener>) -> Self {
        match stream.io().peer_cred() {
            Ok(c) => PeerCred {
                uid: c.uid(),
                gid: c.gid(),
                pid: c.pid(),
            },
            Err(e) => {
                tracing::warn!(error = %e, "no peer credentials on a Unix socket connection");
                PeerCred {
                    uid: UNKNOWN_UID,
                    gid: UNKNOWN_UID,
                    pid: None,
                }
            }
        }
    }
}

/// A verifier that also accepts local socket peers: tokens go to the
/// wrapped verifier; a peer is the account its uid names, and uid 0 is an
/// administrator called `root`.
pub struct LocalPeers<V>(pub V);

impl<V: Verifier> Verifier for LocalPeers<V> {
    fn verify_token(&self, token: &str) -> Result<Caller, String> {
        self.0.verify_token(token)
    }

    fn verify_peer(&self, peer: &PeerCred) -> Result<Caller, String> {
        peer_caller(peer.uid)
    }
}

/// The caller a local peer with `uid` is.
pub fn peer_caller(uid: u32) -> Result<Caller, String> {
    if uid == UNKNOWN_UID {
        return Err("the kernel did not report the peer's uid".into());
    }
    let name = match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => u.name,
        Ok(None) => return Err(format!("uid {uid} has no account on this machine")),
        Err(e) => return Err(format!("cannot look up uid {uid}: {e}")),
    };
    Ok(Caller {
        name,
        role: if uid == 0 { Role::Admin } else { Role::User },
        credential: Credential::Peer { uid },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::authenticate;
    use axum::routing::get;
    use axum::{Extension, Router, middleware};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Accepts no token at all.
    struct NoTokens;

    impl Verifier for NoTokens {
        fn verify_token(&self, _: &str) -> Result<Caller, String> {
            Err("no tokens here".into())
        }
    }

    #[test]
    fn uids_become_accounts() {
        let root = peer_caller(0).unwrap();
        assert_eq!(
            (root.name.as_str(), root.role, root.credential),
            ("root", Role::Admin, Credential::Peer { uid: 0 })
        );
        // Linux uids stop short of u32::MAX - 1 in practice: no account.
        let e = peer_caller(u32::MAX - 1).unwrap_err();
        assert!(e.contains("has no account"), "{e}");
        assert!(peer_caller(UNKNOWN_UID).is_err());
    }

    #[tokio::test]
    async fn a_socket_peer_is_known_without_a_token() {
        let dir = std::env::temp_dir().join(format!("gleaner-edge-peer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let app = Router::new()
            .route(
                "/who",
                get(|Extension(c): Extension<Caller>| async move {
                    format!("{} {:?} {:?}", c.name, c.role, c.credential)
                }),
            )
            .layer(middleware::from_fn_with_state(
                Arc::new(LocalPeers(NoTokens)),
                authenticate::<LocalPeers<NoTokens>>,
            ));
        tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<PeerCred>(),
            )
            .await
            .unwrap()
        });
        let mut s = tokio::net::UnixStream::connect(&path).await.unwrap();
        // A bearer token on the socket is ignored: the kernel says who.
        s.write_all(
            b"GET /who HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer forged\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        let me = nix::unistd::geteuid().as_raw();
        let name = nix::unistd::User::from_uid(me.into())
            .unwrap()
            .unwrap()
            .name;
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        assert!(out.contains(&format!("{name} ")), "{out}");
        assert!(out.contains(&format!("Peer {{ uid: {me} }}")), "{out}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
