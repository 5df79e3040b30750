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

/// May `caller` act on something `owner` owns (a job, a DAG)? Admins and
/// stations may act on anything; users only on their own.
pub fn may_act_on(caller: &Caller, owner: &str) -> bool {
    matches!(caller.role, Role::Admin | Role::Station) || caller.name == owner
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
        let ws = caller("station@ws", Role::Station);
        assert!(may_act_on(&alice, "alice") && !may_act_on(&alice, "bob"));
        assert!(may_act_on(&root, "bob") && may_act_on(&ws, "bob"));
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
