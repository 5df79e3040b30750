//! Claims: minting them for grants, and settling the pending ones.
//!
//! A grant's claim id is what a host checks before it accepts a placement.
//! The pool does not sign anything itself: a [`ClaimMinter`] does. The daemon
//! signs with the pool's Ed25519 signing key; the simulator mints plain ids
//! ([`UnsignedClaims`]), so a simulated year costs no cryptography.

use super::Pool;
use super::effects::{Message, Outbox};
use gleaner_core::alloc::StationId;
use gleaner_core::rng::RngCore;
use gleaner_core::time::Time;
use gleaner_proto::creds::{ClaimPayload, ClaimTicket, PoolSigner, new_nonce};
use gleaner_proto::job::JobId;
use gleaner_proto::matchmaking::parse_limits;
use std::collections::HashMap;

/// What a claim says: `home` may place one job on `host` until `expires_at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimFacts<'a> {
    pub host: &'a str,
    pub home: &'a str,
    /// The home's address as its last ad gave it (where the host will send
    /// its credentials).
    pub home_address: &'a str,
    /// UNIX seconds.
    pub issued_at: u64,
    /// UNIX seconds.
    pub expires_at: u64,
    /// Unique per grant.
    pub nonce: &'a str,
}

/// A minted claim: the id handed out in the grant, and the nonce the host
/// reports once it accepted a placement with it (`StationAd::claims_used`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Minted {
    pub id: String,
    pub nonce: String,
}

/// A claim checked and given its nonce, its id still to be made
/// ([`ClaimMinter::seal`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    pub nonce: String,
    pub body: Sealing,
}

/// What [`ClaimMinter::seal`] makes a prepared claim's id from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sealing {
    /// The id itself (it cost nothing to make).
    Ready(String),
    /// A checked ticket to sign.
    Sign(ClaimPayload),
}

/// Turns claim facts into the claim handed out in a grant, in two steps:
/// [`prepare`](Self::prepare) checks the facts as the grant is decided
/// (`Err`, a message, drops the grant) and [`seal`](Self::seal) makes the
/// ids of all the claims of a pass at once. Signing is most of a grant's
/// cost, and a pass may grant a thousand nodes: together they are signed
/// on every core.
pub trait ClaimMinter: Send {
    fn prepare(&self, claim: &ClaimFacts<'_>) -> Result<Prepared, String>;

    /// The ids of `claims`, in order.
    fn seal(&self, claims: Vec<Prepared>) -> Vec<String>;

    /// Both steps for one claim.
    fn mint(&self, claim: &ClaimFacts<'_>) -> Result<Minted, String> {
        let p = self.prepare(claim)?;
        let nonce = p.nonce.clone();
        let id = self
            .seal(vec![p])
            .pop()
            .ok_or_else(|| "the minter sealed nothing".to_string())?;
        Ok(Minted { id, nonce })
    }
}

/// Claims sealed in parallel from this many on: below it, starting
/// threads would cost more than a signature (about 12 µs here,
/// bench/README.md).
const PARALLEL_SEAL_FROM: usize = 16;

/// The daemon's minter: a [`ClaimTicket`] signed with the pool's signing
/// key, naming the home's address on record (the only address the host
/// will send its credentials to).
///
/// The pool's nonce is unique within one run, but its random part comes
/// from the pool's seeded stream: with a fixed `seed` a restarted
/// coordinator would repeat it, and a host that remembers spent nonces
/// would refuse the repeat as a replay. So 128 bits from the OS are added.
impl ClaimMinter for PoolSigner {
    fn prepare(&self, c: &ClaimFacts<'_>) -> Result<Prepared, String> {
        let fresh = new_nonce().map_err(|e| format!("no random nonce: {e}"))?;
        let nonce = format!("{}-{fresh}", c.nonce);
        let ticket = ClaimTicket::new(
            c.host,
            c.home,
            c.home_address,
            c.issued_at,
            c.expires_at,
            nonce.clone(),
        );
        let payload = ClaimPayload::of(&ticket).map_err(|e| e.to_string())?;
        Ok(Prepared {
            nonce,
            body: Sealing::Sign(payload),
        })
    }

    fn seal(&self, claims: Vec<Prepared>) -> Vec<String> {
        let one = |p: &Prepared| match &p.body {
            Sealing::Ready(id) => id.clone(),
            Sealing::Sign(payload) => self.sign_payload(payload),
        };
        if claims.len() < PARALLEL_SEAL_FROM {
            return claims.iter().map(one).collect();
        }
        // Asked once: std reads the cgroup's CPU quota each time.
        static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let threads =
            *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        if threads < 2 {
            return claims.iter().map(one).collect();
        }
        let chunk = claims.len().div_ceil(threads);
        std::thread::scope(|s| {
            // A part whose thread could not start (a thread limit) or
            // panicked is signed here instead.
            let parts: Vec<_> = claims
                .chunks(chunk)
                .map(|part| {
                    let handle = std::thread::Builder::new()
                        .name("claim-signer".into())
                        .spawn_scoped(s, move || part.iter().map(one).collect::<Vec<_>>())
                        .ok();
                    (part, handle)
                })
                .collect();
            let mut ids = Vec::with_capacity(claims.len());
            for (part, handle) in parts {
                match handle.map(|h| h.join()) {
                    Some(Ok(v)) => ids.extend(v),
                    _ => ids.extend(part.iter().map(one)),
                }
            }
            ids
        })
    }
}

/// Unsigned, readable claim ids (`home>host#nonce`) for simulations and
/// tests, where nobody verifies them.
#[derive(Clone, Copy, Debug, Default)]
pub struct UnsignedClaims;

impl ClaimMinter for UnsignedClaims {
    fn prepare(&self, c: &ClaimFacts<'_>) -> Result<Prepared, String> {
        Ok(Prepared {
            nonce: c.nonce.to_string(),
            body: Sealing::Ready(format!("{}>{}#{}", c.home, c.host, c.nonce)),
        })
    }

    fn seal(&self, claims: Vec<Prepared>) -> Vec<String> {
        claims
            .into_iter()
            .map(|p| match p.body {
                Sealing::Ready(id) => id,
                // Never prepared here; an unsigned claim would be its
                // ticket as it stands.
                Sealing::Sign(payload) => String::from_utf8_lossy(payload.json()).into_owned(),
            })
            .collect()
    }
}

/// A grant whose placement the host has not reported yet.
pub(super) struct PendingClaim {
    pub host: StationId,
    pub home: StationId,
    pub claim_id: String,
    /// What the host reports once it accepted a placement with the claim;
    /// unknown (`None`) for claims restored after a restart.
    pub nonce: Option<String>,
    /// The number of ads received when the claim was issued: an ad of its
    /// home with a number up to this came before the grant.
    pub after_ad: u64,
    pub expires: Time,
    /// Guests of `home` on `host` holding the same licences (plus earlier
    /// pending claims alike) when the claim was issued: once the host
    /// reports more, the claim has been used.
    pub baseline: u32,
    /// The job class the host was matched for.
    pub class: Option<String>,
    /// Licence units the claim holds until the guest shows in an ad.
    pub licences: Vec<(String, u32)>,
    /// The jobs of `home` on `host` holding the same licences when the
    /// claim was issued: a guest not among them is the claim's. Unknown
    /// (`None`) for claims restored after a restart, which settle by
    /// `baseline`. Counting alone misses a use when an older guest alike
    /// leaves in the same advertising period, and then the claim and its
    /// guest hold the licence twice until the claim expires.
    pub known: Option<Vec<JobId>>,
}

/// The licences a guest holds, parsed.
pub(super) fn guest_licences(g: &gleaner_proto::wire::GuestInfo) -> Vec<(String, u32)> {
    parse_limits(&g.concurrency_limits).unwrap_or_default()
}

impl Pool {
    /// Guests of `home` on `host` that hold exactly `licences`.
    pub(super) fn guests_like(
        &self,
        host: StationId,
        home: StationId,
        licences: &[(String, u32)],
    ) -> u32 {
        let home_name = self.name(home);
        self.stations.get(&host).map_or(0, |k| {
            k.ad.running_guests
                .iter()
                .filter(|g| g.home == home_name && guest_licences(g) == licences)
                .count() as u32
        })
    }

    /// Issues a claim for `to` on `host` and returns its id and nonce.
    pub(super) fn mint_claim(
        &mut self,
        host: StationId,
        to: StationId,
        class: Option<String>,
        licences: Vec<(String, u32)>,
        now: Time,
    ) -> Result<Minted, String> {
        self.nonce += 1;
        let expires = now + self.timing.claim_lifetime;
        let issued_at = now.as_micros() / 1_000_000;
        // Unique per grant, also across restarts: the count, and 64 bits
        // from the pool's own seeded stream for nonces.
        let nonce = format!(
            "{issued_at:x}-{:x}-{:016x}",
            self.nonce,
            self.nonce_rng.next_u64()
        );
        let home_address = self
            .stations
            .get(&to)
            .map(|k| k.ad.address.as_str())
            .unwrap_or_default();
        let prepared = self.minter.prepare(&ClaimFacts {
            host: self.name(host),
            home: self.name(to),
            home_address,
            issued_at,
            expires_at: expires.as_micros() / 1_000_000,
            nonce: &nonce,
        })?;
        let minted_nonce = prepared.nonce.clone();
        // An id still to be signed is filled in by `seal_claims` before
        // the pool's caller sees the ledger or the grant.
        let (claim_id, to_sign) = match prepared.body {
            Sealing::Ready(id) => (id, None),
            body @ Sealing::Sign(_) => (
                String::new(),
                Some(Prepared {
                    nonce: minted_nonce.clone(),
                    body,
                }),
            ),
        };
        let to_name = self.name(to);
        let known: Vec<JobId> = self.stations.get(&host).map_or_else(Vec::new, |k| {
            k.ad.running_guests
                .iter()
                .filter(|g| g.home == to_name && guest_licences(g) == licences)
                .map(|g| g.job)
                .collect()
        });
        let baseline = self.guests_like(host, to, &licences)
            + self
                .claims
                .of_host(host)
                .filter(|(_, c)| c.home == to && c.licences == licences)
                .count() as u32;
        let issue = self.claims.push(PendingClaim {
            host,
            home: to,
            claim_id: claim_id.clone(),
            nonce: Some(minted_nonce.clone()),
            after_ad: self.ads_seen,
            expires,
            baseline,
            class,
            licences,
            known: Some(known),
        });
        if let Some(p) = to_sign {
            self.unsealed.push((issue, p));
        }
        self.sync_free(host);
        Ok(Minted {
            id: claim_id,
            nonce: minted_nonce,
        })
    }

    /// Signs the claims minted since the last call, all at once, and puts
    /// their ids in the ledger and in the grants of `out`. Every public
    /// call that can grant ends with it.
    pub(super) fn seal_claims(&mut self, out: &mut Outbox) {
        if self.unsealed.is_empty() {
            return;
        }
        let (issues, prepared): (Vec<u64>, Vec<Prepared>) =
            std::mem::take(&mut self.unsealed).into_iter().unzip();
        let nonces: Vec<String> = prepared.iter().map(|p| p.nonce.clone()).collect();
        let ids = self.minter.seal(prepared);
        if ids.len() != issues.len() {
            tracing::error!(
                claims = issues.len(),
                ids = ids.len(),
                "the claim minter sealed a different number of claims"
            );
        }
        let mut by_nonce: HashMap<&str, &str> = HashMap::with_capacity(ids.len());
        for ((&issue, nonce), id) in issues.iter().zip(&nonces).zip(&ids) {
            if let Some(c) = self.claims.get_mut(issue) {
                c.claim_id.clone_from(id);
            }
            by_nonce.insert(nonce, id);
        }
        let fill = |claim_id: &mut String, nonce: &Option<String>| {
            if claim_id.is_empty()
                && let Some(id) = nonce.as_deref().and_then(|n| by_nonce.get(n))
            {
                *claim_id = (*id).to_string();
            }
        };
        for m in &mut out.messages {
            if let Message::Grant { grant, .. } = m {
                fill(&mut grant.claim_id, &grant.nonce);
                for g in &mut grant.gang {
                    fill(&mut g.claim_id, &g.nonce);
                }
            }
        }
    }

    /// Voids the claims with these nonces (a gang granted all or nothing).
    pub(super) fn void_claims(&mut self, nonces: &[String]) {
        let void = |n: &Option<String>| n.as_ref().is_some_and(|n| nonces.contains(n));
        self.unsealed.retain(|(_, p)| !nonces.contains(&p.nonce));
        for h in self.claims.retain(|c| !void(&c.nonce)) {
            self.sync_free(h);
        }
    }

    /// Drops the pending claims on `host` that its ad shows in use;
    /// returns whether the host named one whose guest is already gone
    /// (its node is free again: a capacity event).
    pub(super) fn settle_claims(&mut self, host: StationId) -> bool {
        if self.claims.on_host(host) == 0 {
            return false;
        }
        let mut freed = false;
        let mut counts: HashMap<(StationId, Vec<(String, u32)>), u32> = HashMap::new();
        for (_, c) in self.claims.of_host(host) {
            counts
                .entry((c.home, c.licences.clone()))
                .or_insert_with(|| self.guests_like(host, c.home, &c.licences));
        }
        // Each new guest settles one claim, oldest claim first.
        let guests = self
            .stations
            .get(&host)
            .map(|k| k.ad.running_guests.as_slice())
            .unwrap_or_default();
        // Guests already taken for a claim, by home and job (two homes'
        // jobs may share an id).
        let mut used: Vec<(&str, JobId)> = Vec::new();
        let mut settled: Vec<u64> = Vec::new();
        let reported: &[String] = self
            .stations
            .get(&host)
            .map(|k| k.ad.claims_used.as_slice())
            .unwrap_or_default();
        for (n, c) in self.claims.of_host(host) {
            // The host names the claims it accepted: settled by id, even
            // if the guest already ended. A guest it does not name still
            // settles one claim alike, for hosts that name none.
            if c.nonce.as_ref().is_some_and(|n| reported.contains(n)) {
                settled.push(n);
                let home = self.name(c.home);
                match guests.iter().find(|g| {
                    g.home == home
                        && !used.contains(&(g.home.as_str(), g.job))
                        && c.known.as_ref().is_none_or(|k| !k.contains(&g.job))
                        && guest_licences(g) == c.licences
                }) {
                    Some(g) => used.push((g.home.as_str(), g.job)),
                    None => freed = true,
                }
                continue;
            }
            if !reported.is_empty() && c.known.is_some() {
                // A host that names its claims and not this one has not
                // used it (yet).
                continue;
            }
            let used_now = match &c.known {
                Some(known) => {
                    let home = self.name(c.home);
                    let new = guests.iter().find(|g| {
                        g.home == home
                            && !known.contains(&g.job)
                            && !used.contains(&(g.home.as_str(), g.job))
                            && guest_licences(g) == c.licences
                    });
                    new.inspect(|g| used.push((g.home.as_str(), g.job)))
                        .is_some()
                }
                None => counts
                    .get(&(c.home, c.licences.clone()))
                    .is_some_and(|&now| now > c.baseline),
            };
            if used_now {
                settled.push(n);
            }
        }
        if settled.is_empty() {
            self.sync_free(host);
            return freed;
        }
        for (n, c) in self.claims.of_host(host) {
            if !settled.contains(&n) {
                continue;
            }
            // Only a home whose last ad came before the grant certainly
            // still counts the job idle; a later ad may show it placed.
            let stale = self
                .stations
                .get(&c.home)
                .is_none_or(|k| k.serial <= c.after_ad);
            if c.home != host && stale {
                self.used_unseen
                    .entry(c.home)
                    .or_default()
                    .push(c.class.clone());
            }
        }
        self.claims.remove(&settled);
        self.sync_free(host);
        freed
    }

    /// Claims of `home` seen in use since its last ad (for `class`, or all).
    pub(super) fn used_unseen(&self, home: StationId, class: Option<&str>) -> u32 {
        self.used_unseen.get(&home).map_or(0, |v| {
            v.iter()
                .filter(|k| class.is_none_or(|c| k.as_deref() == Some(c)))
                .count() as u32
        })
    }

    pub(super) fn pending_on(&self, host: StationId) -> u32 {
        self.claims.on_host(host)
    }

    /// Claims and reserved nodes granted to `home` and not used yet, and
    /// claims used since its last ad (which still counts their jobs idle).
    pub(super) fn unused_grants(&self, home: StationId) -> u32 {
        self.claims.for_home(home) + self.reservations.for_home(home) + self.used_unseen(home, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_claims_name_the_home_address_and_never_repeat_a_nonce() {
        let signer = PoolSigner::from_seed(&[5; 32]);
        let facts = ClaimFacts {
            host: "ws3",
            home: "ws7",
            home_address: "http://ws7:9620",
            issued_at: 100,
            expires_at: 400,
            nonce: "64-1-00000000000000aa",
        };
        let a = signer.mint(&facts).unwrap().id;
        // The same facts again, as a restarted coordinator with a fixed
        // seed would give: still another nonce.
        let b = signer.mint(&facts).unwrap().id;
        let v = signer.verifier();
        let (ta, tb) = (
            v.verify_claim(&a, "ws3", 200).unwrap(),
            v.verify_claim(&b, "ws3", 200).unwrap(),
        );
        assert_eq!(ta.home_address, "http://ws7:9620");
        assert_eq!(ta.home, "ws7");
        assert!(ta.nonce.starts_with("64-1-00000000000000aa-"));
        assert_ne!(ta.nonce, tb.nonce);
        // Many at once (signed on several threads): each id in its place.
        let nonces: Vec<String> = (0..3 * PARALLEL_SEAL_FROM)
            .map(|i| format!("64-{i}-00"))
            .collect();
        let prepared: Vec<Prepared> = nonces
            .iter()
            .map(|n| {
                signer
                    .prepare(&ClaimFacts {
                        nonce: n,
                        ..facts.clone()
                    })
                    .unwrap()
            })
            .collect();
        let want: Vec<String> = prepared.iter().map(|p| p.nonce.clone()).collect();
        let ids = signer.seal(prepared);
        assert_eq!(ids.len(), want.len());
        for (id, nonce) in ids.iter().zip(&want) {
            assert_eq!(&v.verify_claim(id, "ws3", 200).unwrap().nonce, nonce);
        }
        // A home without a usable address gets no claim.
        let bad = ClaimFacts {
            home_address: "",
            ..facts
        };
        assert!(signer.mint(&bad).is_err());
    }
}
