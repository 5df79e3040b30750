//! Who the home serves, and as whom it acts (issue 12, "users are Unix
//! users").
//!
//! A job's owner is a Unix account on the home, and the home does
//! everything with the owner's files as that account ([`crate::userfs`]).
//! So who may use the user API depends on how the daemon runs:
//!
//! - **As root** it serves every account: a caller on the user socket is
//!   the account of its uid (the kernel says so), uid 0 being the
//!   administrator `root`; a user token for NAME acts as the account NAME
//!   and is refused when there is none. An admin token may act on anyone's
//!   jobs, and needs an account only to submit. Nobody submits as root:
//!   jobs never run as root.
//! - **As an ordinary user** it is a single-user personal pool: it serves
//!   only the account it runs as, by socket or token, and refuses every
//!   other name (it could not act as them anyway).
//!
//! Station daemons are not users and pass unchanged (they call only what
//! [`gleaner_edge::may_act_on`] and the shadow allow them).

use super::Home;
use crate::userfs::{AccountError, UnixUser, UserFs, UserFsError};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use gleaner_edge::{ApiError, Caller, Credential, Role};
use gleaner_proto::wire::ErrorCode;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What the user socket and `/v1/whoami` tell a caller about itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhoAmI {
    /// The name jobs are queued under (the owner).
    pub name: String,
    /// `user`, `admin` or `station`.
    pub role: String,
    /// How the caller was identified: `socket` (peer credentials) or
    /// `token`.
    pub via: String,
    /// The caller's Unix uid on this station, when it has an account.
    pub uid: Option<u32>,
}

/// Why `name` is not a user at all: it is a guest slot account (of this
/// station's prefix, or marked as one by any station on this machine). A
/// guest runs as such an account and can reach the user socket from its
/// sandbox; it must not submit jobs or touch anyone's as a "user".
fn slot_refusal(name: &str, slot_prefix: &str) -> Option<String> {
    let gecos = nix::unistd::User::from_name(name)
        .ok()
        .flatten()
        .map(|u| u.gecos.to_string_lossy().into_owned())
        .unwrap_or_default();
    crate::isolation::is_slot_account(name, &gecos, slot_prefix).then(|| {
        format!("{name} is a guest slot account, not a user: guests cannot use the pool as users")
    })
}

/// How the daemon runs, which decides whom it serves.
#[derive(Clone, Debug)]
pub(crate) enum Served {
    /// The daemon is root: every account (root only as an administrator).
    Everyone,
    /// The daemon runs as `uid` (called `name` when it has an account):
    /// that account only.
    Only { uid: u32, name: String },
}

impl Served {
    /// From the daemon's effective uid.
    pub(crate) fn detect() -> Served {
        let uid = nix::unistd::geteuid().as_raw();
        if uid == 0 {
            return Served::Everyone;
        }
        let name = UnixUser::current().map_or_else(|_| format!("uid {uid}"), |u| u.name);
        Served::Only { uid, name }
    }

    /// May `caller` use the user API here? `Err` is the refusal's text.
    pub(crate) fn admit(&self, caller: &Caller) -> Result<(), String> {
        if caller.role == Role::Station {
            return Ok(());
        }
        match (self, &caller.credential) {
            // The kernel named an existing account.
            (Served::Everyone, Credential::Peer { .. }) => Ok(()),
            (Served::Everyone, Credential::Token { .. }) if caller.role == Role::Admin => Ok(()),
            (Served::Everyone, Credential::Token { .. }) => match UnixUser::lookup(&caller.name) {
                Ok(_) => Ok(()),
                Err(e) => Err(no_account(&caller.name, &e)),
            },
            (Served::Only { uid, name }, cred) => {
                let same = match cred {
                    Credential::Peer { uid: peer } => peer == uid,
                    Credential::Token { .. } => caller.name == *name,
                };
                if same {
                    Ok(())
                } else {
                    Err(format!(
                        "this station runs as {name}, not as root: it is a single-user personal \
                         pool and serves only {name}, not {}",
                        caller.name
                    ))
                }
            }
        }
    }
}

fn no_account(name: &str, e: &AccountError) -> String {
    match e {
        AccountError::NoSuchUser(_) => format!(
            "no Unix account {name:?} on this station: a token for user {name} acts as the Unix \
             account {name}, so it must exist here"
        ),
        other => format!("cannot look up the Unix account {name:?}: {other}"),
    }
}

/// The refusal for a submission as root.
pub const NEVER_ROOT: &str = "jobs never run as root; submit as the user who owns the files";

/// Why the home cannot act as a job's owner, as an API error.
pub(crate) fn owner_refusal(e: &UserFsError) -> ApiError {
    let msg = match e {
        UserFsError::Root { .. } => NEVER_ROOT.to_string(),
        UserFsError::Account(a) => match a {
            AccountError::NoSuchUser(name) => no_account(name, a),
            other => return ApiError::internal("cannot look up the job's owner", other),
        },
        UserFsError::NotServed { .. } => e.to_string(),
        other => return ApiError::internal("cannot act as the job's owner", other),
    };
    ApiError::new(ErrorCode::Forbidden, msg)
}

impl Home {
    /// The account a submission by `caller` belongs to and runs as: the
    /// caller's own, never one named in the body, never root.
    pub(crate) fn submitter(&self, caller: &Caller) -> Result<UserFs, ApiError> {
        if caller.role == Role::Station {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                "stations do not submit jobs; users do",
            ));
        }
        UserFs::for_user(&caller.name).map_err(|e| {
            tracing::warn!(caller = %caller.name, error = %e, "submission refused");
            owner_refusal(&e)
        })
    }
}

/// Middleware on the user API's routes: refuses callers this home does not
/// serve ([`Served::admit`]) with a 403 that says why.
pub(crate) async fn admit(
    State(home): State<Arc<Home>>,
    caller: Option<Extension<Caller>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(Extension(caller)) = caller else {
        return ApiError::new(ErrorCode::Unauthorized, "no authenticated caller").into_response();
    };
    let refused = if caller.role == Role::Station {
        None
    } else {
        slot_refusal(&caller.name, &home.slot_prefix)
    };
    if let Some(why) = refused.or_else(|| home.served.admit(&caller).err()) {
        tracing::warn!(caller = %caller.name, path = %req.uri().path(), %why, "caller not served");
        return ApiError::new(ErrorCode::Forbidden, why).into_response();
    }
    next.run(req).await
}

/// `GET /v1/whoami`.
pub(crate) async fn whoami(Extension(caller): Extension<Caller>) -> Json<WhoAmI> {
    let (via, uid) = match caller.credential {
        Credential::Peer { uid } => ("socket", Some(uid)),
        Credential::Token { .. } if caller.role == Role::Station => ("token", None),
        Credential::Token { .. } => ("token", UnixUser::lookup(&caller.name).ok().map(|u| u.uid)),
    };
    let role = match caller.role {
        Role::User => "user",
        Role::Admin => "admin",
        Role::Station => "station",
    };
    Json(WhoAmI {
        name: caller.name,
        role: role.into(),
        via: via.into(),
        uid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(name: &str, role: Role, credential: Credential) -> Caller {
        Caller {
            name: name.into(),
            role,
            credential,
        }
    }

    fn token() -> Credential {
        Credential::Token {
            token_id: "t".into(),
        }
    }

    #[test]
    fn a_root_daemon_serves_accounts_only() {
        let s = Served::Everyone;
        assert!(s.admit(&caller("root", Role::User, token())).is_ok());
        let e = s
            .admit(&caller("no-such-gleaner-user", Role::User, token()))
            .unwrap_err();
        assert!(
            e.contains("no Unix account \"no-such-gleaner-user\""),
            "{e}"
        );
        // Admins need an account only to submit; stations are not users.
        assert!(s.admit(&caller("ops", Role::Admin, token())).is_ok());
        assert!(
            s.admit(&caller("station@x", Role::Station, token()))
                .is_ok()
        );
        assert!(
            s.admit(&caller("anyone", Role::User, Credential::Peer { uid: 7 }))
                .is_ok()
        );
    }

    #[test]
    fn an_unprivileged_daemon_serves_only_its_account() {
        let s = Served::Only {
            uid: 1234,
            name: "me".into(),
        };
        assert!(s.admit(&caller("me", Role::User, token())).is_ok());
        assert!(s.admit(&caller("me", Role::Admin, token())).is_ok());
        assert!(
            s.admit(&caller("me", Role::User, Credential::Peer { uid: 1234 }))
                .is_ok()
        );
        for c in [
            caller("bob", Role::User, token()),
            caller("bob", Role::Admin, token()),
            caller("root", Role::Admin, Credential::Peer { uid: 0 }),
            caller("me", Role::User, Credential::Peer { uid: 99 }),
        ] {
            let e = s.admit(&c).unwrap_err();
            assert!(e.contains("serves only me"), "{e}");
        }
        assert!(
            s.admit(&caller("station@x", Role::Station, token()))
                .is_ok()
        );
    }
}
