//! `glean generate man|completions|slot-accounts|condor-links`: files made from the CLI
//! itself for the Debian package (`scripts/build-deb.sh`,
//! `docs/packaging.md`), so that the manual pages and shell completions
//! can never describe another version's options. Hidden: a tool for the
//! package's build and maintainer scripts, not for users.

use anyhow::Context;
use clap::{Args, Subcommand};
use clap_complete::Shell;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct GenerateArgs {
    #[command(subcommand)]
    command: GenerateCommand,
}

#[derive(Subcommand, Debug)]
enum GenerateCommand {
    /// Manual pages, section 1: `glean.1` and one `glean-SUB[-SUB].1` per
    /// visible subcommand, written into DIR.
    Man {
        /// Output directory (created if missing).
        dir: PathBuf,
    },
    /// Shell completions for bash (`glean.bash`), zsh (`_glean`) and fish
    /// (`glean.fish`), written into DIR.
    Completions {
        /// Output directory (created if missing).
        dir: PathBuf,
    },
    /// The slot accounts a station with this configuration runs guests
    /// as, one per line: `NAME UID`, UID `-` where `useradd` may choose.
    /// The package's postinst creates exactly these, so that the accounts
    /// and the station agree on prefix, count (default: the CPUs) and uids.
    SlotAccounts {
        /// The station's configuration (an absent file means the defaults).
        #[arg(long, value_name = "STATION.toml")]
        config: PathBuf,
    },
    /// Links `condor_submit`, `condor_q`, … to `glean` in DIR, relative
    /// (`condor_q -> glean`): for `/usr/bin` in the package.
    CondorLinks {
        /// Output directory (created if missing).
        dir: PathBuf,
    },
}

/// Runs `glean generate`; `cli` is the whole `glean` command as clap sees it.
pub fn run(args: GenerateArgs, cli: clap::Command) -> anyhow::Result<ExitCode> {
    match args.command {
        GenerateCommand::Man { dir } => {
            create_dir(&dir)?;
            clap_mangen::generate_to(cli, &dir)
                .with_context(|| format!("writing manual pages into {}", dir.display()))?;
        }
        GenerateCommand::Completions { dir } => {
            create_dir(&dir)?;
            let mut cli = cli;
            for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
                clap_complete::generate_to(shell, &mut cli, "glean", &dir).with_context(|| {
                    format!("writing {shell} completions into {}", dir.display())
                })?;
            }
        }
        GenerateCommand::CondorLinks { dir } => {
            crate::condor::make_links(&dir, Path::new("glean"), true)?;
        }
        GenerateCommand::SlotAccounts { config } => {
            for line in slot_accounts(&config)? {
                println!("{line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn create_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// `NAME UID` lines for the slot accounts `config` names (its
/// `[isolation]` slot settings, through the station's own parser).
fn slot_accounts(config: &Path) -> anyhow::Result<Vec<String>> {
    use gleaner_station::config::StationConfig;
    let station = if config.exists() {
        StationConfig::load(config)
            .with_context(|| format!("configuration {}", config.display()))?
    } else {
        StationConfig::default()
    };
    let slots = station.isolation.slot_config();
    Ok((0u32..)
        .zip(slots.names())
        .map(|(i, name)| match slots.uid_of(i) {
            Some(uid) => format!("{name} {uid}"),
            None => format!("{name} -"),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_accounts_follow_the_station_settings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("station.toml");
        std::fs::write(
            &path,
            "[isolation]\nslot_prefix = \"pkgt-slot\"\nslot_count = 3\nslot_first_uid = 61000\n",
        )
        .unwrap();
        assert_eq!(
            slot_accounts(&path).unwrap(),
            ["pkgt-slot1 61000", "pkgt-slot2 61001", "pkgt-slot3 61002"]
        );
        std::fs::write(&path, "[isolation]\nslot_count = 2\n").unwrap();
        assert_eq!(
            slot_accounts(&path).unwrap(),
            ["gleaner-slot1 -", "gleaner-slot2 -"]
        );
        // No file: the station's defaults, one slot per CPU.
        let n = gleaner_station::isolation::default_slot_count() as usize;
        assert_eq!(
            slot_accounts(&dir.path().join("absent.toml"))
                .unwrap()
                .len(),
            n
        );
        // A broken file is an error naming it, not a silent default.
        std::fs::write(&path, "[isolation]\nslot_count = 0\n").unwrap();
        let e = format!("{:#}", slot_accounts(&path).unwrap_err());
        assert!(
            e.contains("station.toml") && e.contains("slot_count"),
            "{e}"
        );
    }
}
