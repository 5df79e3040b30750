//! What a [`Caller`] may do. Each check logs a refusal with the caller's
//! name and answers 403 with a message saying what was needed.

use crate::{ApiError, Caller, Role};
use gleaner_proto::wire::ErrorCode;

/// Daemon-to-daemon endpoints: a station, or an administrator debugging.
/// `refusal` is the message a user gets (e.g. "shadow endpoints need a
/// daemon token").
pub fn require_station(caller: &Caller, refusal: &str) -> Result<(), ApiError> {
    if matches!(caller.role, Role::Station | Role::Admin) {
        Ok(())
    } else {
        tracing::warn!(caller = %caller.name, refusal, "non-station caller refused");
        Err(ApiError::new(ErrorCode::Forbidden, refusal))
    }
}

/// Administrative endpoints.
pub fn require_admin(caller: &Caller, refusal: &str) -> Result<(), ApiError> {
    if caller.role == Role::Admin {
        Ok(())
    } else {
        tracing::warn!(caller = %caller.name, refusal, "non-admin caller refused");
        Err(ApiError::new(ErrorCode::Forbidden, refusal))
    }
}

/// Does `caller` speak for the station named `station`? That station's
/// own token, or an administrator: a station speaks only for itself
/// (DESIGN.md, Trust model).
pub fn speaks_for_station(caller: &Caller, station: &str) -> bool {
    match caller.role {
        Role::Admin => true,
        Role::Station => caller.name == station,
        Role::User => false,
    }
}

/// [`speaks_for_station`] or 403 with `refusal`.
pub fn require_station_named(
    caller: &Caller,
    station: &str,
    refusal: &str,
) -> Result<(), ApiError> {
    if speaks_for_station(caller, station) {
        Ok(())
    } else {
        tracing::warn!(caller = %caller.name, role = ?caller.role, station, refusal,
            "caller does not speak for the station");
        Err(ApiError::new(ErrorCode::Forbidden, refusal))
    }
}

/// May `caller` act on something `owner` owns (a job, a DAG)? Admins may
/// act on anything, users only on their own. Stations act on no user's
/// things: a station token is no user (a station called like a user gets
/// nothing of theirs).
pub fn may_act_on(caller: &Caller, owner: &str) -> bool {
    match caller.role {
        Role::Admin => true,
        Role::User => caller.name == owner,
        Role::Station => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Credential;

    fn caller(name: &str, role: Role) -> Caller {
        Caller {
            name: name.into(),
            role,
            credential: Credential::Peer { uid: 1000 },
        }
    }

    #[test]
    fn roles() {
        let alice = caller("alice", Role::User);
        let root = caller("root", Role::Admin);
        let ws = caller("ws", Role::Station);
        assert!(may_act_on(&alice, "alice") && !may_act_on(&alice, "bob"));
        assert!(may_act_on(&root, "bob") && !may_act_on(&ws, "bob"));
        // A station named like a user is still no user.
        assert!(!may_act_on(&caller("alice", Role::Station), "alice"));
        assert!(speaks_for_station(&ws, "ws") && !speaks_for_station(&ws, "ws2"));
        assert!(speaks_for_station(&root, "ws2") && !speaks_for_station(&alice, "alice"));
        let e = require_station_named(&ws, "ws2", "only ws2").unwrap_err();
        assert_eq!(e.code(), ErrorCode::Forbidden);
        let e = require_station(&alice, "daemons only").unwrap_err();
        assert_eq!(
            (e.code(), e.message()),
            (ErrorCode::Forbidden, "daemons only")
        );
        assert!(require_station(&ws, "").is_ok() && require_station(&root, "").is_ok());
        assert!(require_admin(&ws, "admins only").is_err());
        assert!(require_admin(&root, "").is_ok());
    }
}
