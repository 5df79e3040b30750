//! `glean token create|list|revoke`: issue, list and revoke the pool's
//! tokens, where the coordinator's signing key is (DESIGN.md, Trust model;
//! the role of HTCondor's `condor_token_create|list`).

use crate::output::Output;
use anyhow::{Context, bail};
use clap::{ArgGroup, Args, Subcommand};
use gleaner_coordinator::CoordinatorConfig;
use gleaner_coordinator::tokens::{TokenRegistry, TokenRequest, signing_key_path};
use gleaner_proto::creds::{KeyFileError, PoolSigner, Role, load_signing_key};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct TokenArgs {
    #[command(subcommand)]
    command: TokenCommand,
}

#[derive(Subcommand, Debug)]
enum TokenCommand {
    /// Create a token and print it on stdout (and nothing else there).
    Create(CreateArgs),
    /// List the tokens issued (never the tokens themselves).
    List(ListArgs),
    /// Revoke a token by id; stations learn it at their next advertisement.
    Revoke(RevokeArgs),
}

/// Where the coordinator's state directory is.
#[derive(Args, Debug)]
struct Place {
    /// The coordinator's state directory (holding signing.key and
    /// tokens.json).
    #[arg(long, value_name = "DIR", conflicts_with = "config")]
    state_dir: Option<PathBuf>,
    /// The coordinator's TOML configuration, for its `state_dir` and
    /// `signing_key`.
    #[arg(long, value_name = "COORDINATOR.toml")]
    config: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("who").required(true).args(["user", "admin", "station"])))]
struct CreateArgs {
    /// A user token acting as the Unix account NAME on home stations.
    #[arg(long, value_name = "NAME")]
    user: Option<String>,
    /// An administrator token (may act on every job and station).
    #[arg(long, value_name = "NAME")]
    admin: Option<String>,
    /// The token of the station named NAME (it may speak only for itself).
    #[arg(long, value_name = "NAME")]
    station: Option<String>,
    /// Lifetime in days. Default 30 for user and admin tokens (which always
    /// expire), 365 for station tokens; 0 (never) for station tokens only.
    #[arg(long, value_name = "DAYS")]
    expires: Option<u64>,
    #[command(flatten)]
    place: Place,
}

#[derive(Args, Debug)]
struct ListArgs {
    #[command(flatten)]
    place: Place,
}

#[derive(Args, Debug)]
struct RevokeArgs {
    /// The token id, as `glean token list` shows it.
    id: String,
    #[command(flatten)]
    place: Place,
}

pub fn run(args: TokenArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    match args.command {
        TokenCommand::Create(a) => create(a, out),
        TokenCommand::List(a) => list(a, out),
        TokenCommand::Revoke(a) => revoke(a, out),
    }
}

/// The coordinator's state directory (for `tokens.json`) and its signing
/// key file, as the coordinator itself finds them.
struct Where {
    state_dir: PathBuf,
    key: PathBuf,
}

impl Place {
    fn resolve(&self) -> anyhow::Result<Where> {
        if let Some(d) = &self.state_dir {
            return Ok(Where {
                key: signing_key_path(d),
                state_dir: d.clone(),
            });
        }
        let config = match &self.config {
            Some(path) => CoordinatorConfig::load(path)
                .with_context(|| format!("configuration {}", path.display()))?,
            None => CoordinatorConfig::default(),
        };
        Ok(Where {
            key: config.signing_key_path(),
            state_dir: config.state_dir,
        })
    }
}

/// Why there is no signing key here, said so that the user knows where to
/// go instead.
fn no_key_here(path: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "no signing key at {}: tokens are created, listed and revoked where the \
         coordinator's signing key is. Run `glean token` on the coordinator's \
         machine, or give its state directory with --state-dir or --config",
        path.display()
    )
}

fn signer_at(place: &Where) -> anyhow::Result<PoolSigner> {
    let path = &place.key;
    match load_signing_key(path) {
        Ok(s) => Ok(s),
        Err(KeyFileError::Missing { .. }) => Err(no_key_here(path)),
        Err(KeyFileError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            bail!(
                "cannot read the signing key {}: permission denied; run as root or \
                 as the coordinator's user",
                path.display()
            )
        }
        Err(e) => Err(e.into()),
    }
}

/// The registry of the coordinator whose state directory this is: listing
/// and revoking also happen where the signing key is, never elsewhere.
fn registry_at(place: &Where) -> anyhow::Result<TokenRegistry> {
    let key = &place.key;
    match std::fs::symlink_metadata(key) {
        Ok(_) => Ok(TokenRegistry::in_state_dir(&place.state_dir)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(no_key_here(key)),
        Err(e) => Err(anyhow::Error::new(e).context(format!("{}", key.display()))),
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn create(a: CreateArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let (role, subject) = match (a.user, a.admin, a.station) {
        (Some(n), None, None) => (Role::User, n),
        (None, Some(n), None) => (Role::Admin, n),
        (None, None, Some(n)) => (Role::Station, n),
        // clap's group makes exactly one present.
        _ => bail!("give exactly one of --user, --admin, --station"),
    };
    let place = a.place.resolve()?;
    let signer = signer_at(&place)?;
    let registry = TokenRegistry::in_state_dir(&place.state_dir);
    let request = TokenRequest {
        role,
        subject,
        expires_days: a.expires,
    };
    out.token_issued(&registry.create(&signer, &request, now_secs())?);
    Ok(ExitCode::SUCCESS)
}

fn list(a: ListArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let registry = registry_at(&a.place.resolve()?)?;
    out.tokens(&registry.list()?, now_secs());
    Ok(ExitCode::SUCCESS)
}

fn revoke(a: RevokeArgs, out: &dyn Output) -> anyhow::Result<ExitCode> {
    let registry = registry_at(&a.place.resolve()?)?;
    out.token_revoked(&registry.revoke(a.id.trim(), now_secs())?);
    Ok(ExitCode::SUCCESS)
}
