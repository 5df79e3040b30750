//! `glean pool init`: a new pool's keys on the coordinator's machine (the
//! signing key and `pool.pub`, the pool CA, the coordinator's
//! certificate) and its configuration (issue 13; `docs/deploy.md`).

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use gleaner_coordinator::enrol::{InitOptions, init};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct PoolArgs {
    #[command(subcommand)]
    command: PoolCommand,
}

#[derive(Subcommand, Debug)]
enum PoolCommand {
    /// Make the pool's keys and CA and the coordinator's configuration.
    Init(InitArgs),
}

#[derive(Args, Debug)]
pub struct InitArgs {
    /// The pool's name (a DNS-like label: stations are NAME.station.POOL
    /// in their certificates).
    #[arg(long, default_value = "gleaner")]
    pub name: String,
    /// A host name or IP address the coordinator is reached at (its
    /// certificate names each); repeat for several. The first makes the
    /// pool's coordinator URL.
    #[arg(long = "address", value_name = "HOST", required = true)]
    pub addresses: Vec<String>,
    /// Address the coordinator listens on.
    #[arg(long, default_value = "0.0.0.0:9618")]
    pub listen: std::net::SocketAddr,
    /// The coordinator's state directory (keys, CA, token registry).
    #[arg(long, default_value = "/var/lib/gleaner/coordinator")]
    pub state_dir: PathBuf,
    /// Where to write the coordinator's configuration.
    #[arg(long, default_value = "/etc/gleaner/coordinator.toml")]
    pub config: PathBuf,
    /// Replace an existing configuration file, and issue the coordinator a
    /// new certificate (new addresses, or renewal). The CA and the keys
    /// are never replaced.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: PoolArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        PoolCommand::Init(a) => {
            let out = init_pool(&a, "")?;
            print_init(&a, &out);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A TOML string literal.
pub fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The coordinator's URL for its first address and listen port.
pub fn coordinator_url(a: &InitArgs) -> String {
    let host = a.addresses.first().map_or("127.0.0.1", String::as_str);
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    format!("https://{host}:{}", a.listen.port())
}

/// Makes the keys and writes the configuration (with `extra` lines
/// appended before `[tls]`); returns what `init` did.
pub fn init_pool(
    a: &InitArgs,
    extra: &str,
) -> anyhow::Result<gleaner_coordinator::enrol::InitOutcome> {
    if a.config.exists() && !a.force {
        bail!(
            "{} exists: this pool is set up already (pass --force to rewrite it and renew \
             the coordinator's certificate; the CA and keys are kept)",
            a.config.display()
        );
    }
    let out = init(&InitOptions {
        state_dir: a.state_dir.clone(),
        pool: a.name.clone(),
        addresses: a.addresses.clone(),
        renew_certificate: a.force,
    })?;
    write_config(&a.config, a, extra)?;
    Ok(out)
}

fn write_config(path: &Path, a: &InitArgs, extra: &str) -> anyhow::Result<()> {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let text = format!(
        "# Written by `glean pool init` (docs/deploy.md, docs/configuration.md).\n\
         listen = {}\nstate_dir = {}\naddress = {}\n{extra}\n[tls]\npool = {}\n",
        q(&a.listen.to_string()),
        q(&a.state_dir.display().to_string()),
        q(&coordinator_url(a)),
        q(&a.name),
    );
    gleaner_proto::creds::write_atomic(path, text.as_bytes(), 0o644)
        .with_context(|| format!("writing {}", path.display()))
}

fn print_init(a: &InitArgs, out: &gleaner_coordinator::enrol::InitOutcome) {
    println!("pool {:?}: coordinator {}", a.name, coordinator_url(a));
    println!(
        "  CA          {} ({})",
        out.ca.display(),
        if out.new_ca { "new" } else { "kept" }
    );
    println!("  CA hash     {}", out.ca_fingerprint);
    println!(
        "  CA key      {} (0600; back it up, never copy it to a station)",
        out.ca_key.display()
    );
    println!(
        "  certificate {} ({})",
        out.cert.display(),
        if out.new_certificate { "new" } else { "kept" }
    );
    println!("  pool.pub    {}", out.public_key.display());
    println!("  config      {}", a.config.display());
    println!("next:");
    println!(
        "  systemctl enable --now gleaner-coordinator   (or: glean coordinator --config {})",
        a.config.display()
    );
    println!(
        "  glean token create --config {} --station NAME   (a one-time join token per station)",
        a.config.display()
    );
}
