//! Which station may speak for a remote job on the home's shadow, lease
//! and checkpoint endpoints (DESIGN.md, Trust model: a station speaks only
//! for itself): the station the job is placed on, known by its own token,
//! or an administrator. Another station, even a valid one, gets 403 and
//! changes nothing; a user token never gets this far.

use super::Home;
use super::shadow::STATIONS_ONLY;
use crate::queue::JobRecord;
use gleaner_edge::{ApiError, Caller, Credential, Role, require_station};
use gleaner_proto::creds::peek_claim;
use gleaner_proto::wire::ErrorCode;

/// Refuses (403) a caller that is neither an administrator nor the station
/// job `r` is placed on (the remote table's placement, else the host the
/// queue row last recorded). `claimed` is the host a report or renewal
/// names: a station must name itself.
pub(crate) fn require_host_of(
    home: &Home,
    caller: &Caller,
    r: &JobRecord,
    claimed: Option<&str>,
) -> Result<(), ApiError> {
    require_station(caller, STATIONS_ONLY)?;
    if caller.role == Role::Admin {
        return Ok(());
    }
    if let Some(c) = claimed
        && c != caller.name
    {
        tracing::warn!(job = %r.id, caller = %caller.name, claimed = c, "report in another station's name refused");
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!(
                "station {} may not speak as host {c:?}: a station speaks only for itself",
                caller.name
            ),
        ));
    }
    let host = home.remote.current_host(r.id, r.host.as_deref());
    if host.as_deref() != Some(caller.name.as_str()) {
        tracing::warn!(job = %r.id, caller = %caller.name, host = ?host, "station that does not run the job refused");
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("job {} is not placed on station {}", r.id, caller.name),
        ));
    }
    // A claim speaks only for the placement it made: the host may use the
    // claim of this job's placement, not one of another of its placements
    // from this home (nor one read on the network for a job that is gone).
    if let Credential::Claim { nonce, .. } = &caller.credential {
        let placed = home
            .remote
            .placement(r.id)
            .and_then(|p| p.claim)
            .and_then(|c| peek_claim(&c).ok())
            .map(|t| t.nonce);
        if placed.as_deref() != Some(nonce.as_str()) {
            tracing::warn!(job = %r.id, caller = %caller.name, "claim of another placement refused");
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "this claim did not place job {} on {}: a claim speaks only for its own placement",
                    r.id, caller.name
                ),
            ));
        }
    }
    Ok(())
}
